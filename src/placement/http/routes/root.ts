import { setCacheHeaders } from '../middleware.js';
import type { VersionDocumentJson } from '../../schemas/responses.js';
import { MAX_VERSION, MIN_VERSION } from '../../versions.js';
import { versionDocumentSchema } from '../../schemas/responses.js';
import { RouteTable, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const rootRoutes = new RouteTable('placement', placementHttp);

rootRoutes.resource('/', {
  GET: {
    summary: 'Version document',
    public: true,
    ...answers(200, 'The supported microversions', 'PlacementVersions', versionDocumentSchema),
    handler: (c) => {
      setCacheHeaders(c);
      return c.json({
        versions: [
          {
            id: 'v1.0',
            max_version: MAX_VERSION,
            min_version: MIN_VERSION,
            status: 'CURRENT',
            links: [{ rel: 'self', href: '' }],
          },
        ],
      } satisfies VersionDocumentJson);
    },
  },
});
