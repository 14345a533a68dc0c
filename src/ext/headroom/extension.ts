// Headroom (docs/extensions.md): how many more of a request fit, tree by
// tree, from the candidates engine's search (headroom.ts) and its route.
import type { Extension } from '../../extension.js';
import { headroomRoutes } from './http/routes.js';

export const headroom: Extension = { name: 'headroom', routes: [headroomRoutes] };
