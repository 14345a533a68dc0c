// Edge sites (docs/sites.md): a site's capacity slice, held on the primary
// for the site alone (an open-ended hold owned by the site), and the escrow
// model a cut-off site spends it by (model.ts). Routes: http/routes.ts.
import type { Extension } from '../../extension.js';
import { siteRoutes } from './http/routes.js';

export const sites: Extension = {
  name: 'sites',
  routes: [siteRoutes],
};
