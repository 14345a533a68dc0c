// npm run bench:sites [-- --seconds 60] [--slice 32]
//
// Edge sites (docs/sites.md): a real sqld primary with its own instance and
// three site instances (server processes, the sites with PLACEMENT_SITE, each
// behind a link to the primary that can be held). Each site has two providers of 64 VCPU with a
// slice of --slice on each. Site A's link is held for --seconds: A claims
// (1 VCPU, and deletes of its own consumers now and then) as fast as it
// answers, while sites B and C and the primary's own instance keep claiming,
// on their providers and on A's. Then A's link is resumed and its journal
// replays. Prints: A's local claims (granted, refused slice_exhausted, 503),
// the p50/p95/max of a local claim measured from sending it to its answer,
// the replay's time and conflicts, and whether anyone else got A's slice. The
// latency is measured here, in the process that runs every client: beside it, what site A's own /metrics says of its PUTs
// (server side, by histogram bucket) and this process's event-loop delay, so
// a figure can be split into the site's part and the measurement's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type ServerProcess, startServer } from '../test/helpers/node-server.js';
import { startPausableLink, type PausableLink } from '../test/helpers/pausable-link.js';
import { startSqld } from '../test/helpers/sqld.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, slice: { type: 'string', default: '32' } } });
const SECONDS = Number(args.seconds);
const SLICE = Number(args.slice);
const CAPACITY = 64;
const HEADERS = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' };

const claimBody = (provider: string) => ({
  allocations: { [provider]: { resources: { VCPU: 1 } } },
  project_id: crypto.randomUUID(),
  user_id: crypto.randomUUID(),
  consumer_generation: null,
  consumer_type: 'INSTANCE',
});

const dir = mkdtempSync(join(tmpdir(), 'bench-sites-'));
const sqld = await startSqld();
// The primary's own instance is a server process too: this process only sends requests and times them.
const primaryServer = await startServer(sqld.url, { LOG_LEVEL: 'info' });
const onPrimary = (method: string, path: string, body?: unknown) =>
  fetch(`${primaryServer.url}${path}`, { method, headers: HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });

interface Site {
  name: string;
  providers: string[];
  link: PausableLink;
  server?: ServerProcess;
}
const sites: Site[] = [];
for (const name of ['site-a', 'site-b', 'site-c']) {
  const aggregate = crypto.randomUUID();
  const providers: string[] = [];
  for (let i = 0; i < 2; i++) {
    const uuid = crypto.randomUUID();
    await onPrimary('POST', '/resource_providers', { name: `${name}-${i}`, uuid });
    await onPrimary('PUT', `/resource_providers/${uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: CAPACITY } },
    });
    await onPrimary('PUT', `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: 1, aggregates: [aggregate] });
    providers.push(uuid);
  }
  const capacity = Object.fromEntries(providers.map((p) => [p, { resources: { VCPU: SLICE } }]));
  const res = await onPrimary('PUT', `/ext/sites/${name}`, { aggregate, capacity });
  if (res.status !== 200) throw new Error(`slice of ${name}: ${res.status} ${await res.text()}`);
  sites.push({ name, providers, link: await startPausableLink(sqld.url) });
}
await Promise.all(
  sites.map(async (s) => {
    s.server = await startServer(s.link.url, {
      PLACEMENT_SITE: s.name,
      PLACEMENT_SITE_DB_PATH: join(dir, `${s.name}.db`),
      PLACEMENT_WORKERS: '1',
      PLACEMENT_SITE_PARTITION_AFTER_MS: '3000',
      PLACEMENT_SITE_PROBE_MS: '250',
      PLACEMENT_DB_READ_TIMEOUT_MS: '2000',
      PLACEMENT_DB_WRITE_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'info',
    });
  }),
);
const onSite = (s: Site, method: string, path: string, body?: unknown) =>
  fetch(`${s.server!.url}${path}`, { method, headers: HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
const status = async (s: Site) =>
  (await (await onSite(s, 'GET', '/ext/site')).json()) as {
    link: string;
    journal_depth: number;
    replay_conflicts: number;
    last_replayed_seq: number;
    slice: Record<string, unknown>;
  };
const until = async (what: string, check: () => Promise<boolean>, withinMs = 120_000) => {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
for (const s of sites) await until(`${s.name} reads its slice`, async () => Object.keys((await status(s)).slice).length === 2);

const [a, b, c] = sites as [Site, Site, Site];
a.link.hold();
const cutAt = Date.now();
await until('site A partitioned', async () => (await status(a)).link === 'partitioned');
console.log(`site A partitioned ${Date.now() - cutAt} ms after its link was held`);

const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();
const end = Date.now() + SECONDS * 1000;
const local = { granted: 0, exhausted: 0, unavailable: 0, deleted: 0, other: 0, latencies: [] as number[] };
const mine: string[] = [];
const others = { grantedOnA: 0, refusedOnA: 0, grantedOwn: 0 };
async function siteA() {
  while (Date.now() < end) {
    if (mine.length > 0 && Math.random() < 0.3) {
      const consumer = mine.splice(Math.floor(Math.random() * mine.length), 1)[0]!;
      const res = await onSite(a, 'DELETE', `/allocations/${consumer}`);
      if (res.status === 204) local.deleted += 1;
      continue;
    }
    const consumer = crypto.randomUUID();
    const started = performance.now();
    const res = await onSite(a, 'PUT', `/allocations/${consumer}`, claimBody(a.providers[Math.floor(Math.random() * 2)]!));
    local.latencies.push(performance.now() - started);
    const text = await res.text();
    if (res.status === 204) {
      local.granted += 1;
      mine.push(consumer);
    } else if (res.status === 409 && text.includes('slice_exhausted')) local.exhausted += 1;
    else if (res.status === 503) local.unavailable += 1;
    else local.other += 1;
  }
}
async function elsewhere(claim: (provider: string) => Promise<number>, own: string[]) {
  while (Date.now() < end) {
    const onA = Math.random() < 0.5;
    const status = await claim(onA ? a.providers[Math.floor(Math.random() * 2)]! : own[Math.floor(Math.random() * own.length)]!);
    if (onA) {
      if (status === 204) others.grantedOnA += 1;
      else others.refusedOnA += 1;
    } else if (status === 204) others.grantedOwn += 1;
    await new Promise((r) => setTimeout(r, 20));
  }
}
await Promise.all([
  siteA(),
  elsewhere(async (p) => (await onSite(b, 'PUT', `/allocations/${crypto.randomUUID()}`, claimBody(p))).status, b.providers),
  elsewhere(async (p) => (await onSite(c, 'PUT', `/allocations/${crypto.randomUUID()}`, claimBody(p))).status, c.providers),
  elsewhere(
    async (p) => (await onPrimary('PUT', `/allocations/${crypto.randomUUID()}`, claimBody(p))).status,
    [...b.providers, ...c.providers],
  ),
]);
loopDelay.disable();
/** Site A's PUTs by its own histogram (seconds, cumulative): how many, and the share within each bound. */
async function serverSide(s: Site) {
  const text = await (await onSite(s, 'GET', '/metrics')).text();
  const byBound = new Map<string, number>();
  for (const m of text.matchAll(/^http_server_request_duration_seconds_bucket\{(.*)\} (\d+)$/gm)) {
    if (!m[1]!.includes('http_request_method="PUT"')) continue;
    const le = /le="([^"]+)"/.exec(m[1]!)![1]!;
    byBound.set(le, (byBound.get(le) ?? 0) + Number(m[2]));
  }
  const total = byBound.get('+Inf') ?? 0;
  const bounds = [...byBound.keys()].filter((b) => b !== '+Inf').sort((x, y) => Number(x) - Number(y));
  const p95 = bounds.find((b) => byBound.get(b)! >= 0.95 * total);
  return {
    puts: total,
    within_25_ms: total ? (byBound.get('0.025') ?? 0) / total : 0,
    within_50_ms: total ? (byBound.get('0.05') ?? 0) / total : 0,
    p95_at_most_ms: p95 === undefined ? null : Number(p95) * 1000,
  };
}
const aServerSide = await serverSide(a);
const depth = (await status(a)).journal_depth;
a.link.resume();
const healStarted = Date.now();
await until('site A replayed and connected', async () => {
  const s = await status(a);
  return s.link === 'connected' && s.journal_depth === 0;
});
const replayMs = Date.now() - healStarted;
const healed = await status(a);

const sorted = [...local.latencies].sort((x, y) => x - y);
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1);
const usage = async (p: string) =>
  ((await (await onPrimary('GET', `/resource_providers/${p}/usages`)).json()) as { usages: { VCPU: number } }).usages.VCPU;
const usedOnA = (await usage(a.providers[0]!)) + (await usage(a.providers[1]!));
console.log(
  JSON.stringify(
    {
      seconds: SECONDS,
      slice_per_provider: SLICE,
      site_a_local: { ...local, latencies: undefined, claims_timed: sorted.length, p50_ms: at(0.5), p95_ms: at(0.95), max_ms: at(1) },
      site_a_server_side: aServerSide,
      bench_event_loop_delay_ms: {
        p50: (loopDelay.percentile(50) / 1e6).toFixed(1),
        p95: (loopDelay.percentile(95) / 1e6).toFixed(1),
        max: (loopDelay.max / 1e6).toFixed(1),
      },
      others_meanwhile: others,
      others_capacity_on_a: 2 * (CAPACITY - SLICE),
      journal_entries: depth,
      replay_ms: replayMs,
      replay_conflicts: healed.replay_conflicts,
      last_replayed_seq: healed.last_replayed_seq,
      used_on_a_providers: usedOnA,
      expected_on_a_providers: others.grantedOnA + mine.length,
    },
    null,
    2,
  ),
);
for (const s of sites) {
  await s.server?.stop();
  s.link.stop();
}
await primaryServer.stop();
sqld.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
