// Holds (docs/holds.md): POST/GET /ext/holds, GET/PATCH/DELETE
// /ext/holds/{uuid}, GET /ext/holds/availability. Logic in ../../holds/.
import type { z } from 'zod';
import { badQuery, queryParams, readBody } from '../../../http/validate.js';
import { RouteTable, zodQuery } from '../../../http/route-table.js';
import type { AppContext } from '../../../http/env.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import {
  AvailabilityResponse,
  availabilityTimes,
  HoldListResponse,
  HoldResponse,
  HoldsTimelineResponse,
  listHoldsQuery,
  patchHoldSchema,
  postHoldRequestSchema,
} from '../schemas.js';
import { createHold, deleteHold, findHolds, getHold, type HoldDeps, patchHold, presentHold } from '../service.js';
import { pickHeld } from '../pick.js';
import { findAvailability } from '../availability.js';
import { holdsTimeline } from '../timeline.js';
import { gangQuery } from '../../gangs/http/routes.js';
import { adminOnly } from '../../http/admin-only.js';

export const holdRoutes = new RouteTable('extensions', placementHttp);

const holdDeps = (c: AppContext): HoldDeps => {
  const { deps } = c.var;
  return { store: deps.store, nowMs: () => deps.clock().getTime(), newId: deps.newId };
};

function parsedQuery<S extends z.ZodType>(c: AppContext, schema: S): z.infer<S> {
  const query = schema.safeParse(c.req.query());
  if (!query.success) throw badQuery(`Invalid query string parameters: ${query.error.issues[0]!.message}`);
  return query.data;
}

holdRoutes.resource('/holds', {
  GET: adminOnly({
    summary: 'Extension: holds, by project and by an instant their window covers, soonest start first',
    query: () => zodQuery(listHoldsQuery),
    responses: { 200: 'Holds' },
    responseSchema: HoldListResponse,
    responseName: 'HoldList',
    handler: async (c) => {
      const filter = parsedQuery(c, listHoldsQuery);
      c.header('cache-control', 'no-cache');
      return c.json({ holds: (await findHolds(holdDeps(c), filter)).map(presentHold) });
    },
  }),
  POST: adminOnly({
    summary: 'Extension: hold capacity for a project over a window (409 placement.ext.hold_unsatisfiable when it does not fit)',
    body: () => postHoldRequestSchema,
    bodyName: 'PostHold',
    responses: { 201: 'The hold' },
    responseSchema: HoldResponse,
    responseName: 'Hold',
    handler: async (c) => {
      const { query, allocations, ...body } = await readBody(c, postHoldRequestSchema);
      // A query: placement picks the providers now, as a gang search would, and pins them.
      const held = allocations ?? (await pickHeld(c.var.deps.store, query!, c.var.mv, c.var.deps.candidates.options({ randomize: false })));
      return c.json(presentHold(await createHold(holdDeps(c), { ...body, allocations: held })), 201);
    },
  }),
});

holdRoutes.resource('/holds/availability', {
  GET: adminOnly({
    summary:
      'Extension: the earliest start at which an allocation-candidates query (with count: a gang) fits for `duration` seconds, beside allocations that end and holds',
    query: (mv) => [...zodQuery(availabilityTimes), ...gangQuery(mv).map((p) => ({ ...p, required: false }))],
    responses: { 200: 'The earliest start and what fits then, or null' },
    responseSchema: AvailabilityResponse,
    responseName: 'HoldAvailability',
    handler: async (c) => {
      const { duration, after, ...query } = queryParams(c);
      const times = availabilityTimes.safeParse({ duration: duration?.[0], after: after?.[0] });
      if (!times.success || (duration?.length ?? 0) > 1 || (after?.length ?? 0) > 1)
        throw badQuery(`Invalid query string parameters: ${times.error?.issues[0]?.message ?? 'duration and after may be given once'}`);
      const { deps } = c.var;
      const nowMs = deps.clock().getTime();
      const afterMs = times.data.after === undefined ? nowMs : Date.parse(times.data.after);
      c.header('cache-control', 'no-cache');
      return c.json(
        await findAvailability(deps.store, deps.candidates, c.var.mv, query, { durationMs: times.data.duration * 1000, afterMs, nowMs }),
      );
    },
  }),
});

holdRoutes.resource('/holds/timeline', {
  GET: adminOnly({
    summary:
      "Extension: holds not over, per aggregate and provider, with each window and what is held and drawn (the dashboard's time line)",
    responses: { 200: 'The time line' },
    responseSchema: HoldsTimelineResponse,
    responseName: 'HoldsTimeline',
    handler: async (c) => {
      const { deps } = c.var;
      c.header('cache-control', 'no-store');
      return c.json(await holdsTimeline(deps.store.nearby, deps.clock().getTime()));
    },
  }),
});

holdRoutes.resource('/holds/:uuid', {
  GET: adminOnly({
    summary: 'Extension: a hold',
    responses: { 200: 'The hold' },
    responseSchema: HoldResponse,
    responseName: 'Hold',
    handler: async (c) => {
      c.header('cache-control', 'no-cache');
      return c.json(presentHold(await getHold(holdDeps(c), consumerOfPath(c.req.param('uuid')))));
    },
  }),
  PATCH: adminOnly({
    summary: 'Extension: edit a hold at the generation read (its window, amounts, flags); admitted again as a new one',
    body: () => patchHoldSchema,
    bodyName: 'PatchHold',
    responses: { 200: 'The hold' },
    responseSchema: HoldResponse,
    responseName: 'Hold',
    handler: async (c) => {
      const body = await readBody(c, patchHoldSchema);
      return c.json(presentHold(await patchHold(holdDeps(c), consumerOfPath(c.req.param('uuid')), body)));
    },
  }),
  DELETE: adminOnly({
    summary: 'Extension: remove a hold (claims drawn from it stay, as ordinary claims)',
    responses: { 204: 'Removed' },
    handler: async (c) => {
      await deleteHold(holdDeps(c), consumerOfPath(c.req.param('uuid')));
      return c.body(null, 204);
    },
  }),
});
