// Resource provider JSON, shaped per microversion.
import type { Microversion } from '../../microversion.js';
import type { ProviderView } from '../repo/providers.js';
import type { ProviderJson, ProviderLink } from '../schemas/responses.js';
import { MV } from '../versions.js';

export function providerLinks(uuid: string, mv: Microversion): ProviderLink[] {
  const base = `/resource_providers/${uuid}`;
  const links = [
    { rel: 'self', href: base },
    { rel: 'inventories', href: `${base}/inventories` },
    { rel: 'usages', href: `${base}/usages` },
  ];
  if (mv.atLeast(MV.AGGREGATES)) links.push({ rel: 'aggregates', href: `${base}/aggregates` });
  if (mv.atLeast(MV.TRAITS)) links.push({ rel: 'traits', href: `${base}/traits` });
  if (mv.atLeast(MV.ALLOCATIONS_LINK)) links.push({ rel: 'allocations', href: `${base}/allocations` });
  return links;
}

export function presentProvider(rp: ProviderView, mv: Microversion): ProviderJson {
  const body: ProviderJson = {
    uuid: rp.uuid,
    name: rp.name,
    generation: rp.generation,
    links: providerLinks(rp.uuid, mv),
  };
  if (mv.atLeast(MV.NESTED)) {
    body.parent_provider_uuid = rp.parentProviderUuid;
    body.root_provider_uuid = rp.rootProviderUuid;
  }
  return body;
}
