// Wire shape of a resource class: its name and a self link.
import type { ResourceClassRow } from '../repo/resource-classes.js';
import type { ResourceClassJson } from '../schemas/responses.js';

export const resourceClassPath = (name: string): string => `/resource_classes/${name}`;

export function presentResourceClass(rc: ResourceClassRow): ResourceClassJson {
  return { name: rc.name, links: [{ rel: 'self', href: resourceClassPath(rc.name) }] };
}
