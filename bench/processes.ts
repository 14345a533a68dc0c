// Processes of a local server for the bench tools: a Node server started on a
// database file, every process below a pid, and the CPU time they used.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { freePort } from '../test/helpers/sqld.js';

/** `pids` and every process below them (Linux /proc). */
export function processTree(pids: number[]): Set<number> {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return [{ pid: Number(d), ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) }];
      } catch {
        return [];
      }
    });
  const tree = new Set(pids);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all)
      if (tree.has(p.ppid) && !tree.has(p.pid)) {
        tree.add(p.pid);
        grew = true;
      }
  }
  return tree;
}

/**
 * CPU time (ns) `pids` and every process below them have used so far: the
 * first field of each thread's /proc/PID/task/TID/schedstat (time on a CPU,
 * in ns). Unlike wall time it barely moves when other programs share the
 * cores, so a cold answer's cost can be told from a busy machine's queueing.
 */
export function treeCpuNs(pids: number[]): number | null {
  let total = 0;
  for (const pid of processTree(pids)) {
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`))
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* gone */
    }
  }
  return total || null;
}

/**
 * This project's Node server (`src/entry/node.ts` under `cwd`, a checkout)
 * on `dbFile`, on a free port, logging warnings only; `workers` sets
 * PLACEMENT_WORKERS (absent: the default, one process per core); `nodeArgs`
 * reach every server process and `env` is added to its environment. `bundle`:
 * through `npm start`'s launcher (its bundle) instead of tsx.
 */
export async function spawnNodeServer(
  dbFile: string,
  {
    cwd,
    workers,
    nodeArgs = [],
    env = {},
    pipeStdout = false,
    bundle = false,
  }: { cwd?: string; workers?: string; nodeArgs?: string[]; env?: Record<string, string>; pipeStdout?: boolean; bundle?: boolean } = {},
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const entry = bundle ? ['scripts/start.mjs'] : ['--import', 'tsx', 'src/entry/node.ts'];
  const child = spawn(process.execPath, [...nodeArgs, ...entry], {
    ...(cwd ? { cwd } : {}),
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PLACEMENT_DB_URL: `file:${dbFile}`,
      LOG_LEVEL: 'warn',
      ...(workers ? { PLACEMENT_WORKERS: workers } : {}),
      ...env,
    },
    stdio: ['ignore', pipeStdout ? 'pipe' : 'inherit', 'inherit'],
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/** One GET on a new connection to a local server: its status, or 0 when nothing answered. */
export function statusOf(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** The Node flags `npm start` runs its launcher with (package.json's start script), for benches that start the bundle as it does. */
export function npmStartFlags(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.split(' ').filter((word) => word.startsWith('--'));
}
