// Edge sites on the primary (docs/sites.md): a site's capacity slice is the
// one open-ended hold owned by `site:<id>`, a project name no consumer uses,
// so the holds rule keeps every other claim off it; its providers must be
// members of the aggregate the operator names. No HTTP here.
import { invalid, notFound } from '../../errors.js';
import { splitKey } from '../holds/model.js';
import type { StoredHold } from '../holds/repo.js';
import { amountsOf, type HoldDeps, ownedHold, putOwnedHold } from '../holds/service.js';
import { providersOutside } from './repo.js';
import type { PutSiteBody } from './schemas.js';

/** The holds' project that owns a site's slice. */
export const siteOwner = (site: string): string => `site:${site}`;

export function presentSite(site: string, hold: StoredHold) {
  const capacity: Record<string, { resources: Record<string, number> }> = {};
  for (const [key, amount] of hold.amounts) {
    const { provider, resourceClass } = splitKey(key);
    (capacity[provider] ??= { resources: {} }).resources[resourceClass] = amount;
  }
  return { site, hold_uuid: hold.id, generation: hold.generation, capacity };
}

export async function putSite(deps: HoldDeps, site: string, body: PutSiteBody): Promise<StoredHold> {
  const amounts = amountsOf(body.capacity);
  const providers = [...new Set([...amounts.keys()].map((k) => splitKey(k).provider))];
  const outside = await providersOutside(deps.store, body.aggregate.toLowerCase(), providers);
  if (outside.length) throw invalid(`Resource provider ${outside.join(', ')} is not a member of the site's aggregate ${body.aggregate}`);
  return putOwnedHold(deps, siteOwner(site), amounts);
}

export async function getSite(deps: HoldDeps, site: string): Promise<StoredHold> {
  const hold = await ownedHold(deps, siteOwner(site));
  if (!hold) throw notFound(`No site ${site}`);
  return hold;
}
