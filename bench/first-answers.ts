// A fresh process's first answers without HTTP or other processes in the
// figures: a copy of an already loaded database file (a restarted service),
// the server process's own warm-up (the hook of src/entry/warm-up.ts: the
// trees read), then N sequential full answers through
// app.fetch, each with this process's CPU time (all its threads: V8's
// background compiles included) and wall time. Used to find what the first
// answers cost (docs/performance.md, "Cold start").
//   node --max-semi-space-size=32 --import tsx bench/first-answers.ts --db /path/placement.db [--n 12] [--query QS]
//   ... --no-warm-up (the same without the warm-up hook)
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../src/app.js';
import { checkSettings } from '../src/settings-check.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { nodeWarmUp, runWarmUp } from '../src/entry/warm-up.js';
import { FLAT_QUERY } from './upstream.js';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string' },
    n: { type: 'string', default: '12' },
    query: { type: 'string' },
    'no-warm-up': { type: 'boolean', default: false },
  },
});
if (!args.db) throw new Error('--db /path/loaded.db is required');
const dir = mkdtempSync(join(tmpdir(), 'first-answers-'));
copyFileSync(args.db, join(dir, 'p.db'));
// The write-ahead log holds the latest pages of a file a server still has open or left unchecked.
if (existsSync(`${args.db}-wal`)) copyFileSync(`${args.db}-wal`, join(dir, 'p.db-wal'));
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const t0 = cpu();
const config = checkSettings({ ...process.env, PLACEMENT_DB_URL: `file:${join(dir, 'p.db')}`, PLACEMENT_ACCESS_LOG: 'off' });
const deps = await buildNodeDeps(config, quiet);
const app = createApp(deps);
if (!args['no-warm-up']) await runWarmUp(nodeWarmUp, deps);
const prepared = cpu() - t0;
const query = args.query ?? FLAT_QUERY;
// Printed so a run under --trace-opt/--trace-deopt shows which lines belong to the answers.
if (process.env.FIRST_ANSWERS_MARK) console.log('=== answers start');
const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
const answers: string[] = [];
for (let i = 0; i < Number(args.n); i += 1) {
  const c = cpu();
  const w = performance.now();
  const res = await app.fetch(
    new Request(`http://bench/allocation_candidates?${query}`, {
      headers: { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': 'placement latest' },
    }),
    undefined,
    ctx,
  );
  const body = await res.arrayBuffer();
  answers.push(`${(cpu() - c).toFixed(1)}/${(performance.now() - w).toFixed(1)}${body.byteLength < 1000 ? '!' : ''}`);
}
console.log(JSON.stringify({ prepared_cpu_ms: Math.round(prepared), 'answers cpu/wall ms': answers.join(' ') }));
deps.store.close();
rmSync(dir, { recursive: true, force: true });
