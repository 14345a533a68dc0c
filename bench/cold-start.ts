// How fast a Node-mode service starts, and comes back after a crash, timed from
// outside as an operator sees it (new connection per probe, every 10 ms):
//   start:  spawn -> first `GET /` 200 -> first `GET /readyz` 200, for
//           `npm start` (npm + scripts/start.mjs, running its cached bundle), `node --import tsx src/entry/node.ts`
//           and the built `node dist/server.mjs`; the first start on a new
//           database, then restarts on the same file.
//   crash:  PLACEMENT_WORKERS=2; a server process SIGKILLed -> its
//           replacement logs that it listens; then the primary SIGKILLed
//           (its server processes follow it) and started again after the
//           RestartSec of deploy/systemd/placement-edge.service, as systemd
//           does -> the port answers `GET /` again.
//   npx tsx bench/cold-start.ts [--how dist,tsx,npm] [--restarts 3] [--workers 1] [--crash] [--nice=-15]
//                               [--server other/dist/server.mjs]
// `--how dist` needs `npm run build` first. Prints one JSON line per figure.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { statusOf } from './processes.js';

const ROOT = join(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: {
    how: { type: 'string', default: 'dist,tsx,npm' },
    restarts: { type: 'string', default: '3' },
    workers: { type: 'string', default: '1' },
    crash: { type: 'boolean', default: false },
    /**
     * Run the service at this nice value (root may give a negative one): on a
     * machine busy with other work, what an idle machine's wall time would be
     * comes closer (the CPU figures do not need it).
     */
    nice: { type: 'string' },
    /** Another built server.mjs for `--how dist` (another checkout's, to compare). */
    server: { type: 'string', default: join(ROOT, 'dist', 'server.mjs') },
  },
});

const COMMANDS: Record<string, [string, string[]]> = {
  dist: [process.execPath, [args.server]],
  tsx: [process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'entry', 'node.ts')]],
  npm: ['npm', ['start', '--silent']],
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Milliseconds from `since` until GET path answers `status`, polling every 10 ms. */
async function until(port: number, path: string, status: number, since: number, limitMs = 120_000): Promise<number> {
  while (performance.now() - since < limitMs) {
    if ((await statusOf(port, path)) === status) return Math.round(performance.now() - since);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${path} did not answer ${status} within ${limitMs} ms`);
}

interface Started {
  child: ChildProcess;
  log: () => string;
  exited: Promise<void>;
}

function start(how: string, port: number, db: string, workers: string): Started {
  const [bin, binArgs] = COMMANDS[how]!;
  const [command, argv] = args.nice === undefined ? [bin, binArgs] : ['nice', ['-n', args.nice, bin, ...binArgs]];
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PLACEMENT_DB_URL: `file:${db}`,
      PLACEMENT_AUTH_STRATEGY: 'noauth2',
      PLACEMENT_WORKERS: workers,
      LOG_LEVEL: 'debug',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    log += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, log: () => log, exited };
}

async function stop(server: Started): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
  await server.exited;
}

const print = (figure: Record<string, unknown>) => console.log(JSON.stringify({ ...figure, load1: Number(loadavg()[0]!.toFixed(2)) }));

/** CPU time (user + system, ms) used so far by `pid` and every process below it, from /proc. */
function treeCpuMs(pid: number): number {
  let ticks = 0;
  for (const p of [pid, ...descendants(pid)]) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      /* exited meanwhile */
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

function descendants(pid: number): number[] {
  const found: number[] = [];
  const frontier = [pid];
  while (frontier.length) {
    const below = children(frontier.pop()!);
    found.push(...below);
    frontier.push(...below);
  }
  return found;
}

/** The child processes of `pid` (from /proc). */
function children(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return fields[0] !== 'Z' && Number(fields[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** systemd's RestartSec in the shipped unit, in ms. */
function unitRestartMs(): number {
  const unit = readFileSync(join(ROOT, 'deploy', 'systemd', 'placement-edge.service'), 'utf8');
  const value = /^RestartSec=(\S+)/m.exec(unit)?.[1] ?? '0.1';
  const ms = /ms$/.test(value) ? Number(value.slice(0, -2)) : Number(value.replace(/s$/, '')) * 1000;
  return ms;
}

const listening = (log: string, pid: number) => log.includes(`"msg":"server process listening"`) && log.includes(`"pid":${pid}}`);

for (const how of args.how.split(',')) {
  if (how === 'dist' && !existsSync(args.server)) throw new Error(`${args.server} is missing: npm run build first`);
  const dir = mkdtempSync(join(tmpdir(), 'cold-start-'));
  const db = join(dir, 'placement.db');
  try {
    for (let run = 0; run <= Number(args.restarts); run += 1) {
      const port = await freePort();
      const t0 = performance.now();
      const server = start(how, port, db, args.workers);
      const first = await until(port, '/', 200, t0);
      const cpuFirst = treeCpuMs(server.child.pid!);
      const ready = await until(port, '/readyz', 200, t0);
      const cpuReady = treeCpuMs(server.child.pid!);
      print({
        how,
        workers: Number(args.workers),
        database: run === 0 ? 'new' : 'existing',
        first_answer_ms: first,
        ready_ms: ready,
        // CPU of every process of the service by then: what the machine's load does not change.
        cpu_ms_to_first_answer: cpuFirst,
        cpu_ms_to_ready: cpuReady,
      });
      if (args.crash && run === Number(args.restarts)) await crash(how, server, port, db);
      await stop(server);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function crash(how: string, server: Started, port: number, db: string): Promise<void> {
  const primary = server.child.pid!;
  // `npm start` runs node below npm (and a shell): the primary is the node process.
  const nodePrimary = how === 'npm' ? findNode(primary) : primary;
  const workersBefore = children(nodePrimary);
  if (workersBefore.length < 2) throw new Error('--crash needs --workers 2 or more');
  const victim = workersBefore[0]!;
  const t0 = performance.now();
  process.kill(victim, 'SIGKILL');
  let replacement: number | undefined;
  while (performance.now() - t0 < 60_000 && replacement === undefined) {
    replacement = children(nodePrimary).find((pid) => !workersBefore.includes(pid) && listening(server.log(), pid));
    if (replacement === undefined) await new Promise((r) => setTimeout(r, 10));
  }
  print({ how, figure: 'server process replaced after SIGKILL, listening', ms: Math.round(performance.now() - t0) });
  // The primary: its server processes exit with it, and the supervisor starts it again.
  const t1 = performance.now();
  process.kill(nodePrimary, 'SIGKILL');
  await server.exited.catch(() => {});
  for (const pid of children(nodePrimary)) process.kill(pid, 'SIGKILL');
  let closedAt: number | undefined;
  while (performance.now() - t1 < 10_000) {
    if ((await statusOf(port, '/')) !== 200) {
      closedAt = performance.now() - t1;
      break;
    }
  }
  await new Promise((r) => setTimeout(r, unitRestartMs()));
  const again = start(how, port, db, args.workers);
  const back = await until(port, '/', 200, t1);
  const ready = await until(port, '/readyz', 200, t1);
  print({
    how,
    figure: `primary SIGKILLed, restarted after RestartSec=${unitRestartMs()} ms`,
    port_closed_after_ms: closedAt === undefined ? null : Math.round(closedAt),
    answers_again_ms: back,
    ready_again_ms: ready,
  });
  await stop(again);
}

function findNode(pid: number): number {
  const frontier = [pid];
  while (frontier.length) {
    const p = frontier.shift()!;
    for (const c of children(p)) {
      if (/scripts\/start\.mjs|src\/entry\/node\.ts/.test(readFileSync(`/proc/${c}/cmdline`, 'utf8'))) return c;
      frontier.push(c);
    }
  }
  throw new Error('no node process below npm');
}
