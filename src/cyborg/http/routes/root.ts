// Version documents: GET / and GET /v2 (public, no token; the SDK's discovery needs /v2).
import { Hono } from 'hono';
import type { CyborgContext, CyborgEnv } from '../profile.js';
import type { V2VersionJson, VersionsJson } from '../../schemas/responses.js';
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

export const rootRoutes = new Hono<CyborgEnv>();
rootRoutes.get('/', (c) => {
  const doc = { ...v2(c), id: 'v2' };
  return c.json({
    name: 'OpenStack Cyborg API',
    description:
      'Cyborg (previously known as Nomad) is an OpenStack project that aims to provide a general purpose management framework for acceleration resources.',
    versions: [doc],
    default_version: doc,
  } satisfies VersionsJson);
});
rootRoutes.get('/v2', (c) => c.json(v2(c)));
rootRoutes.get('/v2/', (c) => c.json(v2(c)));
