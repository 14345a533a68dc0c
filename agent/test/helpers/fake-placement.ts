// A small stand-in for a Placement-compatible endpoint (the agent's real
// edge): providers with generations, inventories, traits, aggregates, and a
// 409 placement.concurrent_update on a stale generation. Reporting is also
// tested against the real service (report.test.ts); this one lets the sync
// rules be tested on their own and records every request.
import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';

interface FakeProvider {
  uuid: string;
  name: string;
  generation: number;
  parent_provider_uuid: string | null;
  inventories: Record<string, Record<string, number>>;
  traits: string[];
  aggregates: string[];
}

export interface FakePlacement {
  fetch(req: Request): Promise<Response>;
  providers: Map<string, FakeProvider>;
  requests: string[];
  customNames: Set<string>;
}

const conflict = (c: Context) =>
  c.json(
    { errors: [{ status: 409, title: 'Conflict', code: 'placement.concurrent_update', detail: 'resource provider generation conflict' }] },
    409,
  );
const notFound = (c: Context) => c.json({ errors: [{ status: 404, title: 'Not Found', detail: 'No resource provider' }] }, 404);

export function fakePlacement(): FakePlacement {
  const providers = new Map<string, FakeProvider>();
  const customNames = new Set<string>();
  const requests: string[] = [];
  const app = new Hono();
  app.get('/resource_providers', (c) => {
    const name = c.req.query('name');
    const tree = c.req.query('in_tree');
    const rows = [...providers.values()].filter(
      (p) => (!name || p.name === name) && (!tree || p.uuid === tree || p.parent_provider_uuid === tree),
    );
    return c.json({ resource_providers: rows.map(({ inventories: _i, traits: _t, aggregates: _a, ...p }) => p) });
  });
  app.post('/resource_providers', async (c) => {
    const body = (await c.req.json()) as { name: string; uuid?: string; parent_provider_uuid?: string };
    const provider: FakeProvider = {
      uuid: body.uuid ?? randomUUID(),
      name: body.name,
      generation: 0,
      parent_provider_uuid: body.parent_provider_uuid ?? null,
      inventories: {},
      traits: [],
      aggregates: [],
    };
    providers.set(provider.uuid, provider);
    return c.json(provider);
  });
  app.delete('/resource_providers/:uuid', (c) => (providers.delete(c.req.param('uuid')) ? c.body(null, 204) : notFound(c)));
  for (const key of ['inventories', 'traits', 'aggregates'] as const) {
    app.get(`/resource_providers/:uuid/${key}`, (c) => {
      const p = providers.get(c.req.param('uuid'));
      return p ? c.json({ resource_provider_generation: p.generation, [key]: p[key] }) : notFound(c);
    });
    app.put(`/resource_providers/:uuid/${key}`, async (c) => {
      const p = providers.get(c.req.param('uuid'));
      if (!p) return notFound(c);
      const body = (await c.req.json()) as Record<string, unknown> & { resource_provider_generation: number };
      if (body.resource_provider_generation !== p.generation) return conflict(c);
      const value = body[key] as never;
      if (key === 'traits' || key === 'inventories') {
        const names = key === 'traits' ? (value as string[]) : Object.keys(value as object);
        const unknown = names.find((n) => n.startsWith('CUSTOM_') && !customNames.has(n));
        if (unknown) return c.json({ errors: [{ status: 400, title: 'Bad Request', detail: `unknown ${unknown}` }] }, 400);
      }
      p[key] = value;
      p.generation++;
      return c.json({ resource_provider_generation: p.generation, [key]: value });
    });
  }
  app.put('/resource_classes/:name', (c) => {
    customNames.add(c.req.param('name'));
    return c.body(null, 204);
  });
  app.put('/traits/:name', (c) => {
    customNames.add(c.req.param('name'));
    return c.body(null, 204);
  });
  return {
    providers,
    requests,
    customNames,
    async fetch(req) {
      const url = new URL(req.url);
      requests.push(`${req.method} ${url.pathname}${url.search}`);
      return app.fetch(req);
    },
  };
}
