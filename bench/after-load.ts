// A process's first answers after a load, in-process (no HTTP, no other
// processes in the figures): an empty database, the server process's warm-up
// hook and tree refresher (as src/entry/node-server.ts runs them), the cloud
// loaded through app.fetch as the bench loads it over HTTP, then N sequential
// full answers, each with this process's CPU time (all its threads) and wall
// time. Finds where the first answer after a load goes (issue 32).
//   node --import tsx bench/after-load.ts [--scenario nested-200] [--n 8] [--pause MS] [--no-rewarm]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../src/app.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { checkSettings } from '../src/entry/settings-check.js';
import { nodeRewarm, nodeWarmUp, runWarmUp } from '../src/entry/warm-up.js';
import { PlacementClient } from './client.js';
import { httpLoad } from './cloud.js';
import { SCENARIOS } from './scenarios.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'nested-200' },
    n: { type: 'string', default: '8' },
    /** Milliseconds between the end of the load and perfload's count (0: at once, as perfload). */
    pause: { type: 'string', default: '0' },
    'no-rewarm': { type: 'boolean', default: false },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario)!;
const first = scenario.measures.find((m) => m.kind === 'first')!;
const dir = mkdtempSync(join(tmpdir(), 'after-load-'));
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const config = checkSettings({ ...process.env, PLACEMENT_DB_URL: `file:${join(dir, 'p.db')}`, PLACEMENT_ACCESS_LOG: 'off' });
const deps = await buildNodeDeps(config, quiet);
const app = createApp(deps);
const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
const appFetch = ((input: string | URL | Request, init?: RequestInit) =>
  app.fetch(new Request(input, init), undefined, ctx)) as typeof fetch;
await runWarmUp(nodeWarmUp, deps);
// As src/entry/node-server.ts keeps them (--no-rewarm: without the re-warm after a new shape).
const refresher = deps.candidates.keepFresh(
  deps.store.nearby,
  config.PLACEMENT_TREE_REFRESH_MS,
  (err) => console.error(err),
  args['no-rewarm']
    ? undefined
    : async () => {
        const c = cpu();
        await nodeRewarm(deps);
        rewarms.push(`${Math.round(performance.now() - loadStarted)}ms:${Math.round(cpu() - c)}`);
      },
);
const rewarms: string[] = [];
const api = new PlacementClient('http://bench', 'admin', '1.36', 120_000, appFetch);
const l0 = cpu();
const loadStarted = performance.now();
await httpLoad(api, scenario.build(), 16, scenario.preheat);
const loadCpu = cpu() - l0;
const loadMs = performance.now() - loadStarted;
await new Promise((r) => setTimeout(r, Number(args.pause)));
if (process.env.AFTER_LOAD_MARK) console.log('=== answers start');
await api.request('GET', '/resource_providers', { version: first.version });
const answers: string[] = [];
for (let i = 0; i < Number(args.n); i += 1) {
  const c = cpu();
  const w = performance.now();
  const res = await api.request('GET', `/allocation_candidates?${first.query}`, { version: first.version });
  const body = await res.arrayBuffer();
  answers.push(`${(cpu() - c).toFixed(1)}/${(performance.now() - w).toFixed(1)}${body.byteLength < 1000 ? '!' : ''}`);
  if (process.env.AFTER_LOAD_MARK) console.log(`=== answer ${i} done`);
}
console.log(
  JSON.stringify({
    scenario: scenario.name,
    load_ms: Math.round(loadMs),
    load_cpu_ms: Math.round(loadCpu),
    're-warms at:cpu ms': rewarms.join(' '),
    'answers cpu/wall ms': answers.join(' '),
  }),
);
refresher.stop();
await new Promise((r) => setTimeout(r, 500));
deps.store.close();
rmSync(dir, { recursive: true, force: true });
