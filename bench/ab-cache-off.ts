// A/B of two checkouts' candidates engines with the tree cache off (PLACEMENT_CANDIDATE_TREE_CACHE=0,
// as every cloud over the cache's size) on copies of one database: the bench's flat query (full
// answer, as JSON bytes) and its limit=10, alternated round by round; wall and CPU per answer (medians).
// What it checks: at N=100,000 (over the cache's size) the engine is no slower than a base checkout.
//   npx tsx bench/ab-cache-off.ts --make DB            # the flat-100k scenario's cloud, loaded straight into DB
//   npx tsx bench/ab-cache-off.ts BASE HEAD DB [ROUNDS]
import { createClient } from '@libsql/client';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
if (process.argv[2] === '--make') {
  const { loadConfig } = await import('../src/config.js');
  const { openStore } = await import('../src/entry/node-service.js');
  const { directLoad } = await import('./cloud.js');
  const { SCENARIOS } = await import('./scenarios.js');
  const store = await openStore(loadConfig({ PLACEMENT_DB_URL: `file:${process.argv[3]}` }));
  const started = performance.now();
  await directLoad(store.client, SCENARIOS.find((s) => s.name === 'flat-100k')!.build());
  await store.client.execute('PRAGMA wal_checkpoint(TRUNCATE)');
  console.log('loaded in', Math.round(performance.now() - started), 'ms');
  store.close();
  process.exit(0);
}
const [baseRoot, headRoot, db, roundsArg] = process.argv.slice(2);
if (!db) throw new Error('usage: bench/ab-cache-off.ts BASE HEAD DB [ROUNDS] | --make DB');
const sides = [baseRoot!, headRoot!];
// biome-ignore lint/suspicious/noExplicitAny: modules by path
const mods = [] as any[];
for (const root of sides)
  mods.push({
    client: await import(`${root}/src/db/client.ts`),
    cand: await import(`${root}/src/placement/candidates/index.ts`),
    parse: await import(`${root}/src/placement/candidates/parse.ts`),
    mv: await import(`${root}/src/http/microversion.ts`),
    compose: await import(`${root}/src/compose.ts`),
    up: await import(`${root}/bench/upstream.ts`),
  });
const dir = mkdtempSync(join(tmpdir(), 'ab100k-'));
const readers = sides.map((_, i) => {
  const p = join(dir, `${i}.db`);
  copyFileSync(db!, p);
  return mods[i].client.clientReader(createClient({ url: `file:${p}` }));
});
// biome-ignore lint/suspicious/noExplicitAny: modules by path
const ctx = (m: any) =>
  m.compose.candidateEngine ? { hooks: m.compose.candidateEngine({ PLACEMENT_CANDIDATE_TREE_CACHE: 0 }).hooks } : {};
const contexts = mods.map(ctx);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
async function run(i: number, query: string, n: number) {
  const m = mods[i];
  const mv = m.mv.Microversion.parse(m.up.FLAT_VERSION);
  const walls: number[] = [];
  const cpus: number[] = [];
  let count = 0;
  for (let k = 0; k < n; k++) {
    const c = cpu();
    const t = performance.now();
    const json = await m.cand.findAllocationCandidatesJson(readers[i], m.parse.parseCandidateQueryString(query, mv), mv, {
      randomize: false,
      maxCandidates: 0,
      treeCacheProviders: 0,
      now: Date.now(),
      ...contexts[i],
    });
    walls.push(performance.now() - t);
    cpus.push(cpu() - c);
    count = json.length;
  }
  return { wall: med(walls), cpu: med(cpus), bytes: count };
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const Q = mods[0].up.FLAT_QUERY as string;
const queries: [string, string, number][] = [
  ['full', Q, 3],
  ['limit=10', `${Q}&limit=10`, 15],
];
const res: Record<string, { wall: number[]; cpu: number[] }[]> = {};
for (const [name] of queries)
  res[name] = [
    { wall: [], cpu: [] },
    { wall: [], cpu: [] },
  ];
for (const i of [0, 1]) for (const [, q] of queries) await run(i, q, 1); // warm
for (let round = 0; round < Number(roundsArg ?? 4); round++) {
  for (const i of round % 2 ? [1, 0] : [0, 1]) {
    for (const [name, q, n] of queries) {
      const r = await run(i, q, n);
      res[name]![i]!.wall.push(r.wall);
      res[name]![i]!.cpu.push(r.cpu);
      if (round === 0) console.log(name, i ? 'head' : 'base', 'bytes', r.bytes);
    }
  }
}
for (const [name, [a, b]] of Object.entries(res))
  console.log(
    name.padEnd(9),
    `wall base ${med(a!.wall).toFixed(1)} head ${med(b!.wall).toFixed(1)} ms (x${(med(b!.wall) / med(a!.wall)).toFixed(3)})`,
    `cpu base ${med(a!.cpu).toFixed(1)} head ${med(b!.cpu).toFixed(1)} ms (x${(med(b!.cpu) / med(a!.cpu)).toFixed(3)})`,
  );
