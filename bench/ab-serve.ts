// A/B of two checkouts' servers as `npm run bench` sees them: each checkout's
// `src/entry/node.ts` (default process count) on a database of its own, the
// scenario's cloud loaded into each over HTTP; then rounds alternate between
// the two (the order flips each round): `limit=10` answers, claim cycles
// (GET limit=5 + PUT, as perfload) and full answers, each round's median
// latency and the server processes' CPU per request.
//   npx tsx bench/ab-serve.ts BASE_CHECKOUT HEAD_CHECKOUT [--scenario flat-1000] [--rounds 6] [--reps 20]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { claimFirstCandidate, PlacementClient } from './client.js';
import { httpLoad } from './cloud.js';
import { processTree, spawnNodeServer, treeCpuNs } from './processes.js';
import { SCENARIOS } from './scenarios.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    scenario: { type: 'string', default: 'flat-1000' },
    rounds: { type: 'string', default: '6' },
    reps: { type: 'string', default: '20' },
    cycles: { type: 'string', default: '10' },
  },
});
const [baseRoot, headRoot] = positionals;
if (!headRoot) throw new Error('usage: bench/ab-serve.ts BASE_CHECKOUT HEAD_CHECKOUT [--scenario S] [--rounds N]');
const scenario = SCENARIOS.find((s) => s.name === args.scenario);
if (!scenario) throw new Error(`unknown scenario ${args.scenario}`);
const full = scenario.measures.find((m) => m.kind === 'latency' && m.label.startsWith('full answer'));
if (!full || full.kind !== 'latency') throw new Error(`${args.scenario} has no full answer`);
const reps = Number(args.reps);
const cycles = Number(args.cycles);

interface Side {
  name: string;
  api: PlacementClient;
  pid: number;
  stop: () => void;
}

async function start(name: string, root: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `ab-serve-${name}-`));
  const { child, url } = await spawnNodeServer(join(dir, 'placement.db'), { cwd: root });
  const api = new PlacementClient(url, 'admin', '1.36', 300_000);
  for (const deadline = performance.now() + 300_000; ; ) {
    try {
      await api.request('GET', '/', { timeoutMs: 2000 });
      break;
    } catch {
      if (performance.now() > deadline) throw new Error(`${name} did not start`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  // Every process started (a primary and its workers, or one).
  await new Promise((r) => setTimeout(r, 3000));
  await httpLoad(api, scenario!.build(), 16, scenario!.preheat);
  return {
    name,
    api,
    pid: child.pid!,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpuNs = (side: Side) => treeCpuNs([...processTree([side.pid])]) ?? 0;

async function latency(side: Side, query: string, n: number) {
  const times: number[] = [];
  const before = cpuNs(side);
  for (let i = 0; i < n; i += 1) times.push((await side.api.timedGet(`/allocation_candidates?${query}`, full!.version)).ms);
  return { ms: median(times), cpu: (cpuNs(side) - before) / n / 1e6 };
}

async function claimCycles(side: Side, n: number) {
  const before = cpuNs(side);
  const started = performance.now();
  for (let i = 0; i < n; i += 1) await claimFirstCandidate(side.api, full!.query, full!.version);
  return { ms: (performance.now() - started) / n, cpu: (cpuNs(side) - before) / n / 1e6 };
}

const sides = [await start('base', baseRoot!), await start('head', headRoot)];
type Figures = Record<'limit10' | 'claim' | 'full', { ms: number[]; cpu: number[] }>;
const figures: Figures[] = sides.map(() => ({
  limit10: { ms: [], cpu: [] },
  claim: { ms: [], cpu: [] },
  full: { ms: [], cpu: [] },
}));
try {
  for (const side of sides) {
    await latency(side, full.query, 5);
    await latency(side, `${full.query}&limit=10`, 20);
    await claimCycles(side, 5);
  }
  const loads: number[] = [];
  for (let round = 0; round < Number(args.rounds); round += 1) {
    loads.push(loadavg()[0]!);
    for (const i of round % 2 ? [1, 0] : [0, 1]) {
      const side = sides[i]!;
      const f = figures[i]!;
      const push = (k: keyof Figures, r: { ms: number; cpu: number }) => {
        f[k].ms.push(r.ms);
        f[k].cpu.push(r.cpu);
      };
      push('limit10', await latency(side, `${full.query}&limit=10`, reps));
      push('claim', await claimCycles(side, cycles));
      push('full', await latency(side, full.query, Math.max(5, reps / 4)));
    }
  }
  console.log(`${args.scenario}, ${args.rounds} alternated rounds, load ${loads.map((l) => l.toFixed(1)).join(' ')}`);
  for (const k of ['limit10', 'claim', 'full'] as const)
    for (const what of ['ms', 'cpu'] as const) {
      const [a, b] = figures.map((f) => f[k][what]);
      console.log(
        `${k.padEnd(8)} ${what.padEnd(4)} base ${median(a!).toFixed(2)}  head ${median(b!).toFixed(2)}  head/base ${(median(b!) / median(a!)).toFixed(2)}   all: ${a!.map((x) => x.toFixed(2)).join(' ')} | ${b!.map((x) => x.toFixed(2)).join(' ')}`,
      );
    }
} finally {
  for (const side of sides) side.stop();
}
