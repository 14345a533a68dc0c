// In one Node process: the same app on the same cloud over the embedded file
// database and over libSQL's HTTP client to sqld (what the Worker uses),
// alternated, CPU per warm full answer: how much of a Worker answer's extra
// CPU is its database client rather than its runtime.
//   node --import tsx bench/http-client-cpu.ts [--scenario nested-200] [--rounds 6] [--per 10]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../src/app.js';
import { buildNodeDeps, openStore } from '../src/entry/node-service.js';
import { checkSettings } from '../src/entry/settings-check.js';
import { loadConfig } from '../src/config.js';
import { startSqld } from '../test/helpers/sqld.js';
import { directLoad } from './cloud.js';
import { SCENARIOS } from './scenarios.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'nested-200' },
    rounds: { type: 'string', default: '6' },
    per: { type: 'string', default: '10' },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario)!;
const first = scenario.measures.find((m) => m.kind === 'first')!;
const cloud = scenario.build();
const dir = mkdtempSync(join(tmpdir(), 'http-client-cpu-'));
const sqld = await startSqld();
const urls = [`file:${join(dir, 'p.db')}`, sqld.url];
for (const url of urls) {
  const store = await openStore(loadConfig({ PLACEMENT_DB_URL: url }));
  await directLoad(store.client, cloud);
  store.close();
}
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
const apps = await Promise.all(
  urls.map(async (url) => {
    const deps = await buildNodeDeps(checkSettings({ ...process.env, PLACEMENT_DB_URL: url, PLACEMENT_ACCESS_LOG: 'off' }), quiet);
    return { deps, app: createApp(deps) };
  }),
);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const answer = async (i: number) => {
  const res = await apps[i]!.app.fetch(
    new Request(`http://bench/allocation_candidates?${first.query}`, {
      headers: { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': `placement ${first.version}` },
    }),
    undefined,
    ctx,
  );
  return (await res.arrayBuffer()).byteLength;
};
for (let i = 0; i < apps.length; i += 1) for (let k = 0; k < 30; k += 1) await answer(i);
const samples: number[][] = apps.map(() => []);
for (let r = 0; r < Number(args.rounds); r += 1)
  for (let i = 0; i < apps.length; i += 1)
    for (let k = 0; k < Number(args.per); k += 1) {
      const c = cpu();
      await answer(i);
      samples[i]!.push(cpu() - c);
    }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${scenario.name}: CPU per warm full answer, this process (medians of ${samples[0]!.length})`);
console.log(`  embedded file   ${median(samples[0]!).toFixed(2)} ms`);
console.log(`  HTTP to sqld    ${median(samples[1]!).toFixed(2)} ms`);
for (const { deps } of apps) deps.store.close();
sqld.stop();
rmSync(dir, { recursive: true, force: true });
