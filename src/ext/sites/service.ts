// Edge sites on the primary (docs/sites.md): a site's capacity slice is the
// one open-ended hold owned by `site:<id>`, a project name no consumer uses,
// so the holds rule keeps every other claim off it; its providers must be
// members of the aggregate the operator names. With project limits on, its
// limit slices (limit-slices.ts) are written in the hold's own batch. No HTTP here.
import { invalid, notFound } from '../../errors.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { SITE_HOLD_PREFIX, splitKey } from '../holds/model.js';
import type { StoredHold } from '../holds/repo.js';
import { amountsOf, type HoldDeps, ownedHold, putOwnedHold } from '../holds/service.js';
import {
  admitLimitSlices,
  boundsStatement,
  type LimitSliceAmounts,
  limitSlicesOf,
  limitSliceStatements,
  siteLimitSlicesStatement,
  slicedKeysOf,
  slicedKeysStatement,
} from './limit-slices.js';
import { providersOutside } from './repo.js';
import type { PutSiteBody } from './schemas.js';

/** The holds' project that owns a site's slice. */
export const siteOwner = (site: string): string => `${SITE_HOLD_PREFIX}${site}`;

/** A site as the primary keeps it: its capacity hold and its limit slices. */
export interface StoredSite {
  hold: StoredHold;
  limits: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

export function presentSite(site: string, { hold, limits }: StoredSite) {
  const capacity: Record<string, { resources: Record<string, number> }> = {};
  for (const [key, amount] of hold.amounts) {
    const { provider, resourceClass } = splitKey(key);
    (capacity[provider] ??= { resources: {} }).resources[resourceClass] = amount;
  }
  const byProject: Record<string, Record<string, number>> = {};
  for (const [project, classes] of limits) byProject[project] = Object.fromEntries(classes);
  return { site, hold_uuid: hold.id, generation: hold.generation, capacity, limits: byProject };
}

const limitAmountsOf = (limits: PutSiteBody['limits']): LimitSliceAmounts =>
  new Map(
    Object.entries(limits ?? {})
      .map(([project, classes]) => [project, new Map(Object.entries(classes))] as const)
      .filter(([, classes]) => classes.size > 0),
  );

/**
 * Sets a site's capacity slice and (with project limits on: `limitsOn`) its limit slices, in one
 * write batch at the hold's generation; limit slices beyond what a project's limit has left are
 * refused (409 limit_exceeded), as is a slice of a class the project has no limit of (400).
 */
export async function putSite(
  deps: HoldDeps,
  site: string,
  body: PutSiteBody,
  limitsOn: boolean,
  d: SetAsideConstraint,
): Promise<StoredSite> {
  const amounts = amountsOf(body.capacity);
  const providers = [...new Set([...amounts.keys()].map((k) => splitKey(k).provider))];
  const outside = await providersOutside(deps.store, body.aggregate.toLowerCase(), providers);
  if (outside.length) throw invalid(`Resource provider ${outside.join(', ')} is not a member of the site's aggregate ${body.aggregate}`);
  const limits = limitAmountsOf(body.limits);
  if (limits.size > 0 && !limitsOn) throw invalid('Limit slices need project limits on (PLACEMENT_LIMITS is off)');
  const hold = await putOwnedHold(deps, siteOwner(site), amounts, async () => {
    const [mine] = await deps.store.readBatch([siteLimitSlicesStatement(site)]);
    const projects = [...new Set([...limits.keys(), ...limitSlicesOf(mine!).keys()])];
    const pairs = [...limits].flatMap(([project, classes]) => [...classes.keys()].map((rc) => [project, rc] as const));
    const [sliced, bounds] = await deps.store.readBatch([slicedKeysStatement(projects, d), boundsStatement(pairs, d)]);
    const admitted = admitLimitSlices(site, limits, slicedKeysOf(sliced!), bounds!, d);
    if (admitted.unlimited)
      throw invalid(`Project '${admitted.unlimited[0]}' has no limit of '${admitted.unlimited[1]}': there is nothing to slice`);
    if (admitted.refusal) throw admitted.refusal;
    return [...limitSliceStatements(site, limits), ...admitted.checks];
  });
  return { hold, limits };
}

export async function getSite(deps: HoldDeps, site: string): Promise<StoredSite> {
  const hold = await ownedHold(deps, siteOwner(site));
  if (!hold) throw notFound(`No site ${site}`);
  const [rows] = await deps.store.readBatch([siteLimitSlicesStatement(site)]);
  return { hold, limits: limitSlicesOf(rows!) };
}
