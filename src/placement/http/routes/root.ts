// GET / — the version document. Public: no token, no policy.
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { resource, setCacheHeaders } from '../middleware.js';
import type { VersionDocumentJson } from '../../schemas/responses.js';
import { MAX_VERSION, MIN_VERSION } from '../../versions.js';

export const rootRoutes = new Hono<AppEnv>();

resource(rootRoutes, '/', {
  GET: (c) => {
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
});
