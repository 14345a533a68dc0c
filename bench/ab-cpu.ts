// CPU A/B of two checkouts in one process (for instance: typed column names, src/db/columns.ts, must cost nothing):
// each checkout's candidates engine (SQL alone and trees in memory) and claims (one-batch and
// ordinary path) on copies of one flat cloud, alternated round by round, CPU per operation.
//   npx tsx bench/ab-cpu.ts BASE_CHECKOUT HEAD_CHECKOUT FLAT_DB [ROUNDS]
// FLAT_DB: a database bench/server-cpu.mjs loaded (placeload's flat cloud, 1,010 providers).
import { createClient } from '@libsql/client';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const [baseRoot, headRoot, flatDb, roundsArg] = process.argv.slice(2);
if (!flatDb) throw new Error('usage: bench/ab-cpu.ts BASE HEAD FLAT_DB [ROUNDS]');
const sides = [baseRoot!, headRoot!];
// biome-ignore lint/suspicious/noExplicitAny: two checkouts' modules, loaded by path
const mods = [] as any[];
for (const root of sides) {
  mods.push({
    client: await import(`${root}/src/db/client.ts`),
    cand: await import(`${root}/src/placement/candidates/index.ts`),
    parse: await import(`${root}/src/placement/candidates/parse.ts`),
    mv: await import(`${root}/src/http/microversion.ts`),
    claims: await import(`${root}/src/placement/writes/claims.ts`),
    // A newer checkout's engine takes its tree cache and read hooks from its app (Deps.candidates):
    // the same as the route passes, so both sides read the same statements and keep trees alike.
    compose: await import(`${root}/src/compose.ts`),
    // A newer checkout's claim takes the app's write hooks and metrics beside the store (absent before).
    // (writes/hooks.ts until the kernel took its extension points in.)
    hooks: await import(`${root}/src/placement/writes/hooks.ts`)
      .catch(() => import(`${root}/src/placement/writes/kernel.ts`))
      .then(
        (m) => (m.writeHooks ? m : null),
        () => null,
      ),
    install: await import(`${root}/src/ext/install.ts`).catch(() => null),
  });
}
/** The engine context of one side's app, where it has one (undefined in an older one: a module cache, hooks built in). */
// biome-ignore lint/suspicious/noExplicitAny: two checkouts' modules, loaded by path
const contextOf = (m: any) => {
  if (!m.compose.candidateEngine) return {};
  const engine = m.compose.candidateEngine({
    PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: false,
    PLACEMENT_MAX_ALLOCATION_CANDIDATES: 0,
    PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS: 0,
    PLACEMENT_CANDIDATE_TREE_CACHE: 100000,
    PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY: 'depth-first',
  });
  return { trees: engine.trees, hooks: engine.hooks };
};
const contexts = mods.map(contextOf);
/** The write extensions an app installs by default: ext/install.ts's list before the extensions were objects, compose.ts EXTENSIONS' since. */
// biome-ignore lint/suspicious/noExplicitAny: two checkouts' modules, loaded by path
const writeExtensionsOf = (m: any) => m.install?.writeExtensions ?? m.compose.EXTENSIONS.flatMap((e: any) => (e.writes ? [e.writes] : []));
const Q = 'resources=VCPU:1,MEMORY_MB:256,DISK_GB:10';
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const dir = mkdtempSync(join(tmpdir(), 'ab-cpu-'));
const dbs = sides.map((_, i) => {
  const p = join(dir, `${i}.db`);
  copyFileSync(flatDb, p);
  return createClient({ url: `file:${p}` });
});
const stores = mods.map((m, i) => m.client.createDataStore(dbs[i]));
const claimTargets = mods.map((m, i) =>
  m.hooks
    ? { store: stores[i], writeHooks: m.hooks.writeHooks(writeExtensionsOf(m)), metrics: { capacityRefusals: { inc() {} } } }
    : stores[i],
);
const readers = mods.map((m, i) => m.client.clientReader(dbs[i]));
const uuids = (await dbs[0].execute('SELECT uuid FROM resource_providers ORDER BY id LIMIT 300')).rows.map((r) => String(r.uuid));
async function candidates(i: number, cache: number, n: number) {
  const m = mods[i];
  const mv = m.mv.Microversion.parse('1.36');
  const t = cpu();
  for (let k = 0; k < n; k++) {
    const body = await m.cand.findAllocationCandidates(readers[i], m.parse.parseCandidateQueryString(Q, mv), mv, {
      randomize: false,
      maxCandidates: 0,
      treeCacheProviders: cache,
      now: Date.now(),
      ...contexts[i],
    });
    JSON.stringify(body);
  }
  return (cpu() - t) / n;
}
let seq = 0;
async function claims(i: number, n: number, ordinary: boolean) {
  const m = mods[i];
  const t = cpu();
  for (let k = 0; k < n; k++) {
    const uuid = `00000000-0000-4000-8000-${String(++seq).padStart(12, '0')}`;
    const rp = uuids[k % uuids.length];
    await m.claims.claimAllocations(
      claimTargets[i],
      [{ uuid, projectId: 'p', userId: 'u', generation: ordinary ? undefined : null, allocations: { [rp]: { VCPU: 1, MEMORY_MB: 256 } } }],
      { requireGeneration: !ordinary, now: new Date().toISOString(), endpoint: 'PUT /allocations/{consumer_uuid}' },
    );
    await m.claims.deleteConsumerAllocations(stores[i], uuid);
  }
  return (cpu() - t) / n;
}
const res: Record<string, number[][]> = { sql: [[], []], cached: [[], []], fastClaim: [[], []], ordinaryClaim: [[], []] };
for (const i of [0, 1]) {
  await candidates(i, 0, 3);
  await candidates(i, 100000, 3);
  await claims(i, 30, false);
  await claims(i, 30, true);
} // warm
for (let round = 0; round < Number(roundsArg ?? 6); round++) {
  for (const i of round % 2 ? [1, 0] : [0, 1]) {
    res.sql[i].push(await candidates(i, 0, 5));
    res.cached[i].push(await candidates(i, 100000, 10));
    res.fastClaim[i].push(await claims(i, 100, false));
    res.ordinaryClaim[i].push(await claims(i, 100, true));
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [k, [a, b]] of Object.entries(res))
  console.log(
    k.padEnd(14),
    'base',
    med(a).toFixed(3),
    'ms  head',
    med(b).toFixed(3),
    'ms  head/base',
    (med(b) / med(a)).toFixed(3),
    ' all:',
    a.map((x) => x.toFixed(2)).join(' '),
    '|',
    b.map((x) => x.toFixed(2)).join(' '),
  );
