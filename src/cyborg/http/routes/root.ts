// Version documents: GET / and GET /v2 (public, no token; the SDK's discovery needs /v2).
import { answers, RouteTable } from '../../../http/route-table.js';
import type { CyborgContext } from '../profile.js';
import { V2VersionSchema, VersionsSchema, type V2VersionJson, type VersionsJson } from '../../schemas/responses.js';
import { MAX_VERSION, MIN_VERSION } from '../../versions.js';

function v2(c: CyborgContext): V2VersionJson {
  const origin = new URL(c.req.url).origin;
  return {
    id: 'v2.0',
    min_version: MIN_VERSION,
    max_version: MAX_VERSION,
    status: 'CURRENT',
    links: [{ rel: 'self', href: `${origin}/accelerator/v2` }],
  };
}

// No kit: other methods fall through to the API's 404, as Cyborg answers them.
export const rootRoutes = new RouteTable('accelerator')
  .resource('/', {
    GET: {
      summary: 'Version document',
      public: true,
      ...answers(200, 'Versions', 'AcceleratorVersions', VersionsSchema),
      handler: (c) => {
        const doc = { ...v2(c), id: 'v2' };
        return c.json({
          name: 'OpenStack Cyborg API',
          description:
            'Cyborg (previously known as Nomad) is an OpenStack project that aims to provide a general purpose management framework for acceleration resources.',
          versions: [doc],
          default_version: doc,
        } satisfies VersionsJson);
      },
    },
  })
  .resource('/v2', {
    GET: {
      summary: 'The v2 API',
      public: true,
      ...answers(200, 'The v2 version', 'AcceleratorV2Version', V2VersionSchema),
      handler: (c) => c.json(v2(c)),
    },
  });
// The SDK's discovery also asks with a trailing slash: the same operation, not listed twice.
rootRoutes.app.get('/v2/', (c) => c.json(v2(c)));
