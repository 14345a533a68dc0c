// Which modules of src/ a request walks: the modules with code that runs
// while the app answers it, recorded by V8's precise coverage in this
// process (function call counts, reset before the request), after one
// identical warm-up request so that lazy loading and first-use caches do
// not count. Four walks: GET /allocation_candidates searched and answered
// from a kept answer (a repeated query over an unchanged cloud), POST /ext/gangs and a
// claim (PUT /allocations) with project limits on. Each module is given
// with its layer (test/architecture/layers.ts), and the totals per layer;
// with --functions, the functions of each module that ran.
//   npx tsx scripts/walk.ts [--list | --functions]
import { Session } from 'node:inspector/promises';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { layerOf } from '../test/architecture/layers.js';
import { provider } from '../test/helpers/providers.js';
import { makeTestApp, type TestApp } from '../test/helpers/test-app.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

/** The functions of each src/ module called since the last call (takePreciseCoverage resets the counts). */
async function touched(): Promise<Map<string, string[]>> {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const files = new Map<string, string[]>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const file = relative(ROOT, fileURLToPath(script.url)).split('\\').join('/');
    if (!file.startsWith('src/')) continue;
    const called = script.functions.filter((f) => f.ranges[0]!.count > 0).map((f) => f.functionName || '(anonymous)');
    if (called.length > 0) files.set(file, [...(files.get(file) ?? []), ...called]);
  }
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1)));
}

async function walk(name: string, request: () => Promise<Response>): Promise<{ name: string; modules: Map<string, string[]> }> {
  const warm = await request();
  if (warm.status >= 300) throw new Error(`${name}: ${warm.status} ${await warm.text()}`);
  await touched();
  const res = await request();
  const modules = await touched();
  if (res.status >= 300) throw new Error(`${name}: ${res.status} ${await res.text()}`);
  return { name, modules };
}

const claimBody = (rp: string, project = crypto.randomUUID()) => ({
  allocations: { [rp]: { resources: { VCPU: 1 } } },
  project_id: project,
  user_id: project,
  consumer_generation: null,
  consumer_type: 'INSTANCE',
});

async function hostsInRack(t: TestApp, count: number): Promise<{ rack: string; hosts: string[] }> {
  const rack = crypto.randomUUID();
  const hosts: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const host = await provider(t, { inventory: { VCPU: { total: 64 } } });
    const res = await t.call('PUT', `/resource_providers/${host}/aggregates`, {
      body: { aggregates: [rack], resource_provider_generation: 1 },
    });
    if (res.status !== 200) throw new Error(`aggregates: ${res.status} ${await res.text()}`);
    hosts.push(host);
  }
  return { rack, hosts };
}

const walks: { name: string; modules: Map<string, string[]> }[] = [];
{
  const t = await makeTestApp();
  const { hosts } = await hostsInRack(t, 4);
  // A new amount each time: the engine keeps an answer for a query read over
  // the same cloud, so a repeated query would walk only the kept answer.
  let amount = 0;
  walks.push(
    await walk('GET /allocation_candidates (searched)', () => {
      amount += 1;
      return t.call('GET', `/allocation_candidates?resources=VCPU:${amount}&limit=10`);
    }),
  );
  walks.push(
    await walk('GET /allocation_candidates (kept answer)', () => t.call('GET', '/allocation_candidates?resources=VCPU:1&limit=10')),
  );
  walks.push(
    await walk('POST /ext/gangs', () =>
      t.call('POST', '/ext/gangs', {
        body: { members: Object.fromEntries(hosts.slice(0, 2).map((h) => [crypto.randomUUID(), claimBody(h)])) },
      }),
    ),
  );
  t.close();
}
{
  const t = await makeTestApp({
    PLACEMENT_LIMITS: 'static',
    PLACEMENT_LIMITS_JSON: JSON.stringify({ registered: { 'class:VCPU': 1000 } }),
  });
  const host = await provider(t, { inventory: { VCPU: { total: 1000 } } });
  const project = crypto.randomUUID();
  walks.push(
    await walk('PUT /allocations (limits on)', () =>
      t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claimBody(host, project) }),
    ),
  );
  t.close();
}
await session.post('Profiler.stopPreciseCoverage');

const functions = process.argv.includes('--functions');
const list = functions || process.argv.includes('--list');
for (const { name, modules } of walks) {
  const files = [...modules.keys()];
  const by = (layer: string) => files.filter((m) => layerOf(m) === layer);
  const inner = [...by('domain'), ...by('db')];
  console.log(`${name}: ${files.length} modules, ${inner.length} in domain and db (edge ${by('edge').length}, root ${by('root').length})`);
  if (!list) continue;
  for (const [file, called] of modules) {
    console.log(`  ${layerOf(file).padEnd(6)} ${file}`);
    if (functions) console.log(`           ${[...new Set(called)].join(', ')}`);
  }
}
