// createApp(deps): the one app both runtimes serve. The accelerator (Cyborg)
// API lives under /accelerator; everything else is the Placement API.
import { Hono } from 'hono';
import type { Deps } from './deps.js';
import { createCyborgApp } from './cyborg/app.js';
import { diagnosticsRoutes } from './diagnostics/routes/index.js';
import { openApiDocument } from './openapi/document.js';
import { createPlacementApp } from './placement/app.js';

export function createApp(deps: Deps): Hono {
  const root = new Hono();
  root.get('/openapi.json', (c) => c.json(openApiDocument()));
  root.mount('/accelerator', createCyborgApp(deps).fetch);
  root.mount('/diagnostics', createPlacementApp(deps, diagnosticsRoutes).fetch);
  root.mount('/', createPlacementApp(deps).fetch);
  return root;
}
