// npm run bench:holds: what holds cost GET /allocation_candidates. On
// upstream's flat perfload cloud cut to 10,000 providers (loaded straight
// into the file, as `npm run bench` loads it), in process (app.request), the
// perfload query with limit=50 is timed with no hold and with 1,000 holds
// (one to four of the query's classes on a random provider each, windows
// from an hour to a week ahead), alternating A B, B A, ... so that the load of
// the machine falls on both alike. Warm: 3 requests first, then the median
// and p95 of each round. The read batch has the holds' one statement in both
// (it reads nothing without holds).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { directLoad } from './cloud.js';
import { SCENARIOS } from './scenarios.js';
import { FLAT_QUERY, FLAT_VERSION } from './upstream.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const PROVIDERS = Number(process.env.HOLDS_BENCH_PROVIDERS ?? 10_000);
const HOLDS = Number(process.env.HOLDS_BENCH_HOLDS ?? 1_000);
const REPS = Number(process.env.HOLDS_BENCH_REPS ?? 15);
const ROUNDS = Number(process.env.HOLDS_BENCH_ROUNDS ?? 3);

async function timed(app: ReturnType<typeof createApp>, path: string): Promise<number[]> {
  const headers = { 'x-auth-token': 'admin', 'openstack-api-version': `placement ${FLAT_VERSION}` };
  for (let i = 0; i < 3; i += 1) await (await app.request(path, { headers })).text();
  const times: number[] = [];
  for (let i = 0; i < REPS; i += 1) {
    const start = performance.now();
    const res = await app.request(path, { headers });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
    times.push(performance.now() - start);
  }
  return times;
}

const stats = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, p95: sorted[Math.ceil(sorted.length * 0.95) - 1]! };
};

const dir = mkdtempSync(join(tmpdir(), 'bench-holds-'));
try {
  const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);
  const app = createApp(deps);
  const cloud = SCENARIOS.find((s) => s.name === 'flat-100k')!
    .build()
    .slice(0, PROVIDERS);
  await directLoad(deps.store.client, cloud);
  const client = deps.store.client;
  const providerIds = (await client.execute('SELECT id FROM resource_providers')).rows.map((r) => Number(r.id));
  const classIds = (await client.execute("SELECT id FROM resource_classes WHERE name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')")).rows.map((r) =>
    Number(r.id),
  );
  let seed = 1;
  const random = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647;
  };
  const insertHolds = async () => {
    const now = Date.now();
    const statements = [];
    for (let h = 0; h < HOLDS; h += 1) {
      const uuid = crypto.randomUUID();
      const start = now + 3600_000 * (1 + Math.floor(random() * 168));
      statements.push({
        sql: `INSERT INTO ext_holds (uuid, project_id, start_ms, end_ms, end_action, created_at, updated_at) VALUES (?, 'bench', ?, ?, 'release', '', '')`,
        args: [uuid, start, start + 3600_000 * (1 + Math.floor(random() * 8))],
      });
      const rp = providerIds[Math.floor(random() * providerIds.length)]!;
      const classes = classIds.filter(() => random() < 0.6);
      for (const rc of classes.length ? classes : [classIds[0]!]) {
        statements.push({ sql: 'INSERT OR IGNORE INTO ext_hold_amounts VALUES (?, ?, ?, 1)', args: [uuid, rp, rc] });
      }
    }
    await client.batch(statements, 'write');
  };
  const dropHolds = () => client.execute('DELETE FROM ext_holds');
  const path = `/allocation_candidates?${FLAT_QUERY}&limit=50`;
  const without: number[] = [];
  const withHolds: number[] = [];
  // A B, then B A: neither side always runs first.
  for (let round = 0; round < ROUNDS; round += 1) {
    const sides = round % 2 === 0 ? (['none', 'holds'] as const) : (['holds', 'none'] as const);
    for (const side of sides) {
      await dropHolds();
      if (side === 'holds') await insertHolds();
      (side === 'holds' ? withHolds : without).push(...(await timed(app, path)));
    }
  }
  const a = stats(without);
  const b = stats(withHolds);
  console.log(
    `GET /allocation_candidates (perfload query, limit=50), ${PROVIDERS} providers, warm, in process; ${ROUNDS} alternated rounds of ${REPS}`,
  );
  console.log(`  no holds          median ${a.median.toFixed(1)} ms  p95 ${a.p95.toFixed(1)} ms`);
  console.log(`  ${HOLDS} holds       median ${b.median.toFixed(1)} ms  p95 ${b.p95.toFixed(1)} ms`);
  console.log(`  ratio             median ${(b.median / a.median).toFixed(3)}  p95 ${(b.p95 / a.p95).toFixed(3)}`);
  deps.store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
