// A new Worker isolate's first answer, step by step, for one or more
// wrangler.toml files (e.g. another checkout's, to compare commits), started
// alternately: `wrangler dev` (workerd) fresh on sqld with the scenario's
// cloud, then the Worker's own workerd process's CPU (not wrangler's proxy)
//   start:  before any request (workerd's runtime, the bundle's compilation and module evaluation);
//   boot:   GET /, the isolate's first request (bindings, the database check, deps, the app);
//   warm-up: what that request's waitUntil runs after it (the engine's warm-up hook), until workerd is idle;
//   1st, 2nd: the first full answers (every tree read, code not yet optimised);
//   warm:   the median of `--warm` answers after those.
// `--floor` adds a Worker that only answers "ok": workerd's own start, which
// no bundle can cut.
//   npx tsx bench/worker-start.ts --configs BASE/wrangler.toml,wrangler.toml --rounds 3 [--floor]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { closeTimedConnections, PlacementClient } from './client.js';
import { SCENARIOS } from './scenarios.js';
import { PERFLOAD_VERSION } from './upstream.js';
import { startWorkerMode } from './worker-mode.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'flat-1000' },
    configs: { type: 'string', default: 'wrangler.toml' },
    rounds: { type: 'string', default: '3' },
    warm: { type: 'string', default: '10' },
    floor: { type: 'boolean', default: false },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario);
if (!scenario) throw new Error(`no scenario ${args.scenario}`);
const query = scenario.measures.find((m) => m.kind === 'first')!.query;
const cloud = scenario.build();

const floorDir = mkdtempSync(join(tmpdir(), 'worker-floor-'));
writeFileSync(join(floorDir, 'floor.js'), "export default { fetch() { return new Response('ok'); } };\n");
writeFileSync(
  join(floorDir, 'wrangler.toml'),
  'name = "floor"\nmain = "floor.js"\ncompatibility_date = "2026-04-01"\ncompatibility_flags = ["nodejs_compat"]\n',
);
const configs = [...(args.floor ? [join(floorDir, 'wrangler.toml')] : []), ...args.configs.split(',')];

type Steps = Record<'start' | 'boot' | 'warmUp' | 'first' | 'second' | 'warm', number> & { rssMib: number };
const results = new Map<string, Steps[]>(configs.map((c) => [c, []]));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const loads: number[] = [];

/** workerd's CPU, once it has stopped rising for 300 ms (its background compiler and GC included). */
async function settledCpu(cpu: () => number | null): Promise<number> {
  let last = cpu() ?? 0;
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = cpu() ?? 0;
    if (now - last < 1e6) return now;
    last = now;
  }
}

async function once(config: string): Promise<Steps> {
  const server = await startWorkerMode(cloud, config === 'wrangler.toml' ? [] : ['--config', config]);
  try {
    const cpu = () => server.cpuNs();
    const client = new PlacementClient(server.url, 'admin', PERFLOAD_VERSION, 120_000);
    const start = await settledCpu(cpu);
    const timed = async (path: string) => {
      const before = cpu() ?? 0;
      await client.timedGet(path, PERFLOAD_VERSION);
      await new Promise((r) => setTimeout(r, 20));
      return ((cpu() ?? 0) - before) / 1e6;
    };
    const boot = await timed('/');
    const afterBoot = cpu() ?? 0;
    const warmUp = ((await settledCpu(cpu)) - afterBoot) / 1e6;
    if (config.startsWith(floorDir))
      return { start: start / 1e6, boot, warmUp, first: 0, second: 0, warm: 0, rssMib: server.memory()?.rss_mib ?? 0 };
    const path = `/allocation_candidates?${query}`;
    const first = await timed(path);
    const second = await timed(path);
    const warm: number[] = [];
    for (let i = 0; i < Number(args.warm); i += 1) warm.push(await timed(path));
    return { start: start / 1e6, boot, warmUp, first, second, warm: median(warm), rssMib: server.memory()?.rss_mib ?? 0 };
  } finally {
    closeTimedConnections();
    await server.stop();
  }
}

try {
  for (let round = 0; round < Number(args.rounds); round += 1) {
    for (const config of configs) {
      loads.push(loadavg()[0]!);
      const steps = await once(config);
      results.get(config)!.push(steps);
      console.log(
        `round ${round + 1} ${config}: ${JSON.stringify(steps, (_k, v) => (typeof v === 'number' ? Math.round(v * 10) / 10 : v))}`,
      );
    }
  }
} finally {
  rmSync(floorDir, { recursive: true, force: true });
}
console.log(
  `${scenario.name}, workerd CPU in ms (the Worker's process), medians of ${args.rounds} alternated rounds, load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
);
for (const [config, runs] of results) {
  const m = (k: keyof Steps) => median(runs.map((r) => r[k])).toFixed(1);
  console.log(
    `  ${(config.startsWith(floorDir) ? 'floor ("ok" Worker)' : config).padEnd(40)} start ${m('start')}  boot ${m('boot')}  warm-up ${m('warmUp')}  1st ${m('first')}  2nd ${m('second')}  warm ${m('warm')}  RSS ${m('rssMib')} MiB`,
  );
}
