// Gangs (docs/gangs.md): GET /ext/gang_candidates (N hosts inside one domain)
// and POST /ext/gangs (every member claimed in one write batch, or none,
// with its lease in that batch).
// Logic in ../.
import { queryParams, readBody } from '../../../http/validate.js';
import { setCacheHeaders } from '../../../placement/http/middleware.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';
import { claimFromBody, writeClaims } from '../../../placement/http/claim-requests.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { MV } from '../../../placement/versions.js';
import { RouteTable, answers } from '../../../http/route-table.js';
import type { QueryParam } from '../../../http/route-table.js';
import type { Microversion } from '../../../microversion.js';
import { findGangs } from '../index.js';
import { checkGangDomain, gangLease, refusalOfGang } from '../claim.js';
import { GangLeaseResponse, gangCandidatesResponseSchema, postGangSchema } from '../schemas.js';
import { adminOnly } from '../../http/admin-only.js';
import type { AppContext } from '../../../http/env.js';

export const gangRoutes = new RouteTable('extensions', placementHttp);

/** The gang's own parameters, then every /allocation_candidates parameter (`limit` counts gangs here). */
export const gangQuery = (mv: Microversion): QueryParam[] => [
  { name: 'count', required: true, description: 'extension: hosts in the gang, each on a different root (1-1000)' },
  { name: 'ext_domain', description: "extension: 'aggregate' (default: all members inside one aggregate) or 'any' (no domain constraint)" },
  { name: 'ext_domain_member_of', description: 'extension: in:AGG1,AGG2 - only these aggregates may be domains' },
  ...candidateQuery(mv),
];

/** The engine's options of this request: the app's (settings, tree cache, read hooks: taints, counters). */
const candidateOptions = (c: AppContext) => c.var.deps.candidates.options();

gangRoutes.resource('/gang_candidates', {
  GET: adminOnly({
    summary: 'Extension: gangs of `count` hosts for an allocation-candidates query, each inside one domain, tightest domain first',
    since: MV.GRANULAR,
    query: gangQuery,
    ...answers(
      200,
      'Gangs, each with its domain, allocation requests and provider summaries',
      'GangCandidates',
      gangCandidatesResponseSchema,
    ),
    handler: async (c) => {
      const answer = await findGangs(c.var.deps.store.nearby, queryParams(c), c.var.mv, candidateOptions(c));
      setCacheHeaders(c);
      return c.json(answer);
    },
  }),
});

gangRoutes.resource('/gangs', {
  POST: adminOnly({
    summary: 'Extension: claim every member of a gang in one write batch, or none (409 names the member)',
    since: MV.CONSUMER_TYPES,
    body: () => postGangSchema,
    bodyName: 'PostGang',
    responses: { 204: 'Claimed', 200: 'Claimed, with the lease (lease_seconds given)' },
    responseSchema: GangLeaseResponse,
    responseName: 'GangLease',
    handler: async (c) => {
      const body = await readBody(c, postGangSchema);
      const claims = Object.entries(body.members).map(([uuid, part]) => claimFromBody(c, uuid, part));
      // On the primary: the domain's members as of now (a replica's lag must not let a split gang through).
      if (body.domain) await checkGangDomain(c.var.deps.store, body.domain, body.members);
      const consumers = Object.keys(body.members);
      const lease = body.lease_seconds === undefined ? null : gangLease(consumers, body.lease_seconds, c.var.deps.clock().getTime());
      try {
        await writeClaims(c, claims, 'allocations', lease?.statements);
      } catch (err) {
        throw refusalOfGang(err, body.members);
      }
      if (lease === null) return c.body(null, 204);
      return c.json({ consumers, lease_seconds: body.lease_seconds, expires_at: lease.expiresAt });
    },
  }),
});
