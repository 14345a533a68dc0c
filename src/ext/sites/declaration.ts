// Edge sites' limit slices, declared once (docs/sites.md): a site's part of a
// project's limit of a class (ext_site_limit_slices), set aside from the
// limit for everyone but the site. Per limited (project, class):
//   the limits' ledger + for each site: max(0, its slice - what it drew) <= the limit
// where what a site drew is the allocations, of the consumers that count, of
// the project's consumers drawn from the site's capacity hold (ext_hold_draws
// at the consumer's generation). The keys are the project limits' own
// (limits/declaration.ts). Derived from it by placement/capacity.ts: the claim
// guard's snapshot, its decision, its check as of the write and its one-batch
// condition, the PUT's admission (limit-slices.ts) and the audit (audit.ts).
import { ALLOC, CONSUMER, HOLD, HOLD_DRAW, PROJECT, RC, SITE_LIMIT_SLICE as S } from '../../db/columns.js';
import { projectKeys, type SetAsideConstraint } from '../../placement/capacity.js';
import { SITE_HOLD_PREFIX } from '../holds/model.js';
import { PROJECT_LIMITS } from '../limits/declaration.js';

/** The holds' project that owns a site's slice (service.ts siteOwner), in SQL, for a site name expression. */
export const siteOwnerSql = (site: string) => `'${SITE_HOLD_PREFIX}' || ${site}`;

/** What the site of slice row `s` has drawn of its project's class, as of the statement. */
const drawnSql = (s: string) => `(SELECT total(a.${ALLOC.used}) FROM ext_holds h
    JOIN ext_hold_draws d ON d.${HOLD_DRAW.holdUuid} = h.${HOLD.uuid}
    JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid} AND c.${CONSUMER.generation} = d.${HOLD_DRAW.consumerGeneration}
    JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
    WHERE h.${HOLD.projectId} = ${siteOwnerSql(`${s}.${S.site}`)}
      AND c.${CONSUMER.projectId} = (SELECT ${PROJECT.id} FROM projects WHERE ${PROJECT.externalId} = ${s}.${S.project})
      AND a.${ALLOC.resourceClassId} = (SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} = ${s}.${S.resourceClass})
      AND ${PROJECT_LIMITS.counted('c')})`;

export const SITE_LIMIT_SLICES: SetAsideConstraint = {
  name: 'site limit slices',
  keys: projectKeys(PROJECT_LIMITS),
  setAside: {
    table: 'ext_site_limit_slices',
    key: [S.project, S.resourceClass],
    amount: (s) => `${s}.${S.amount}`,
    drawn: drawnSql,
  },
};
