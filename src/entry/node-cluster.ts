// Node mode on several cores: the primary process forks PLACEMENT_WORKERS
// HTTP server processes sharing the port (node:cluster) and the WAL database
// file, prepares the database once (migrations, standard names) while they
// start (each listens at once and holds its database requests until the
// primary says it is prepared: database-gate.ts), and runs the periodic
// sweeps (outbox drain, bind timeouts, purge) so they run in one place. Reads run in parallel; with group commit on (the
// default) the primary is the one writer: the server processes send it their
// write batches and it commits them together (one-writer.ts); otherwise each
// process queues its own writers behind its in-process lock and SQLite's
// BEGIN IMMEDIATE + busy timeout orders the processes (the race tests check the result).
//
// New connections are shared out by the kernel (SCHED_NONE) unless
// PLACEMENT_CLUSTER_SCHEDULING=round-robin: node:cluster's round-robin primary
// accepts each connection and passes it to a worker, and the ones it had
// passed to a worker killed at that moment were never answered nor closed.
import cluster, { type Worker } from 'node:cluster';
import type { AppConfig } from '../config.js';
import { consoleLogger, type Deps, type Logger } from '../deps.js';
import {
  checkDatabasePath,
  checkPolicyFile,
  databaseOpenProblem,
  EXIT_BAD_SETTING,
  EXIT_CANNOT_START,
  probePort,
  refuseStart,
} from './node-start.js';
import { serveClusterMetrics } from '../observability/cluster.js';
import { watchNodeRuntime } from '../observability/runtime.js';
import { SettingProblem } from '../shared/setting-problem.js';
import { relayWriteMarks } from './write-marks-sharing.js';
import { shareConnections } from './connection-balance.js';
import { answerPrepared, whenServersReady } from './database-gate.js';
import { serveServerProcessWrites } from './one-writer.js';

/** Beyond the workers' own grace period, how long the primary waits before killing them. */
const SHUTDOWN_MARGIN_MS = 2000;
/** How long before a worker killed while starting is started again. */
const RESTART_PAUSE_MS = 1000;
/**
 * How long the primary waits before replacing a worker that stopped cleanly
 * by itself: a SIGTERM to the whole process group (Ctrl-C, systemd) can reach
 * a worker before the primary, which then stops everything instead.
 */
const CLEAN_EXIT_PAUSE_MS = 300;

/** Server processes this primary replaced after they exited unasked (the metrics read it). */
export const clusterCounters = { processesReplaced: 0 };
/**
 * Semi-space size of each server process's young generation, in MB (V8
 * rounds it up to a power of two; npm start passes the same). Twice this is
 * resident once the young generation has grown: 32 held ~25 MiB more per
 * server process than 16, for ~10% less CPU per uncached full answer
 * (docs/performance.md, memory per process).
 */
const YOUNG_GENERATION_MB = 16;
/** V8 reads its flags with dashes or underscores. */
const SEMI_SPACE_FLAG = /^--max[-_]semi[-_]space[-_]size(=|$)/;
/**
 * Each server process's environment beyond this one's, each unless the
 * operator set it: glibc's malloc at two arenas (its default, 8 per core,
 * gives the threads of libuv, V8 and libSQL arenas of their own that stay
 * resident), and blocks of 128 KiB and more always mapped on their own
 * (glibc's default raises that bound to the largest block freed, so answer
 * buffers of a few hundred KiB then come from the heap and their pages stay
 * resident after them). Each held 4-15 MiB less per server process at no CPU
 * cost per answer (docs/performance.md, memory per process).
 */
const SERVER_ENV = {
  MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
  MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '131072',
};

export async function runPrimary(config: AppConfig, processes: number): Promise<void> {
  const started = performance.now();
  // A port taken or a database path unwritable is told once, here.
  try {
    checkPolicyFile(config.PLACEMENT_POLICY_FILE);
    checkDatabasePath(config.PLACEMENT_DB_URL);
    await probePort(config.HOST, config.PORT);
  } catch (err) {
    refuseStart(err);
  }
  const log = consoleLogger(config.LOG_LEVEL);
  // The server processes start first; this process loads the service's code
  // and prepares the database meanwhile (only it migrates and syncs, so no
  // server process races it), and tells each one when it is done.
  let deps: Deps | undefined;
  let jobs: { stop(): void } | undefined;
  let stopping = false;
  let announced = false;
  const listening = new Set<number>();
  const alive = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);

  function exit(code: number): never {
    jobs?.stop();
    deps?.store.close();
    log.info('placement-edge stopped', { pid: process.pid, code });
    process.exit(code);
  }

  // Each worker drains its own requests in flight (src/entry/drain.ts); the
  // primary waits for them, and kills what outlives their grace period.
  function shutdown(signal?: NodeJS.Signals): void {
    if (stopping) return;
    stopping = true;
    log.info('placement-edge stopping', { pid: process.pid, signal: signal ?? null, processes: alive().length });
    jobs?.stop();
    log.info('placement-edge stopping', { signal, processes: alive().length, grace_ms: config.PLACEMENT_SHUTDOWN_GRACE_MS });
    for (const worker of alive()) worker.process.kill('SIGTERM');
    if (alive().length === 0) exit(0);
    setTimeout(() => {
      const left = alive();
      if (left.length) log.warn('server processes outlived the grace period; killing them', { pids: left.map((w) => w.process.pid) });
      for (const worker of left) worker.process.kill('SIGKILL');
      exit(0);
    }, config.PLACEMENT_SHUTDOWN_GRACE_MS + SHUTDOWN_MARGIN_MS).unref();
  }

  function replace(worker: Worker, code: number | null, signal: string | null, pauseMs: number): void {
    const now = () => {
      if (stopping) return;
      clusterCounters.processesReplaced += 1;
      log.error('server process exited; starting another', {
        pid: worker.process.pid,
        code,
        signal,
        replaced_total: clusterCounters.processesReplaced,
      });
      cluster.fork(SERVER_ENV);
    };
    if (pauseMs === 0) now();
    else setTimeout(now, pauseMs);
  }

  cluster.on('listening', (worker, address) => {
    listening.add(worker.id);
    if (announced) return;
    announced = true;
    log.info('placement-edge listening', {
      url: `http://${config.HOST}:${address.port}`,
      db: config.PLACEMENT_DB_URL,
      processes,
    });
  });
  cluster.on('exit', (worker, code, signal) => {
    const hadListened = listening.delete(worker.id);
    if (stopping) {
      if (alive().length === 0) exit(0);
      return;
    }
    // A worker that lost the port (or met a setting) since the probe would
    // fail again: stop the service with its exit code.
    if (!hadListened && (code === EXIT_CANNOT_START || code === EXIT_BAD_SETTING)) {
      log.error('a server process could not start; stopping', { pid: worker.process.pid, code });
      stopping = true;
      for (const other of alive()) other.process.kill('SIGTERM');
      exit(code);
    }
    // A clean exit is a worker that drained after a SIGTERM: one sent to the
    // whole process group stops this process in a moment too, so wait for it
    // before replacing; a stray one (to that worker alone) must not halve
    // the service silently.
    if (code === 0 && !signal) replace(worker, code, signal, CLEAN_EXIT_PAUSE_MS);
    // Died after serving: at once. Killed before it listened (the OOM
    // killer, a slow start under load): after a pause.
    else if (hadListened) replace(worker, code, signal, 0);
    else if (signal) replace(worker, code, signal, RESTART_PAUSE_MS);
    // Exited by itself before listening: it would again (a bad start).
    else if (alive().length === 0) exit(1);
  });

  // Frozen by the first setupPrimary() or fork().
  if (config.PLACEMENT_CLUSTER_SCHEDULING === 'os') cluster.schedulingPolicy = cluster.SCHED_NONE;
  // A full candidates answer allocates a few MB of short-lived objects: a
  // larger young generation scavenges less often (less CPU per answer:
  // docs/performance.md#figures-behind-the-code), unless the operator chose a size: on the
  // command line or in NODE_OPTIONS (which a flag on the server processes' command line would override).
  if (![...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) => SEMI_SPACE_FLAG.test(arg))) {
    cluster.setupPrimary({ execArgv: [...process.execArgv, `--max-semi-space-size=${YOUNG_GENERATION_MB}`] });
  }
  relayWriteMarks();
  shareConnections();
  // The first set of server processes warmed up: the service is ready (replacements later are not announced).
  whenServersReady(processes, () =>
    log.info('placement-edge ready', { pid: process.pid, processes, ms: Math.round(performance.now() - started) }),
  );
  const prepared = openAndPrepare(config, log);
  answerPrepared(prepared);
  serveServerProcessWrites(config, prepared);
  for (let i = 0; i < processes; i += 1) cluster.fork(SERVER_ENV);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  try {
    deps = await prepared;
  } catch (err) {
    // The server processes are told nothing more: they go with this process.
    stopping = true;
    for (const worker of alive()) worker.process.kill('SIGKILL');
    // Project limits that cannot be read as configured name their own setting.
    refuseStart(err instanceof SettingProblem ? err : databaseOpenProblem(config.PLACEMENT_DB_URL, err));
  }
  if (stopping) return;
  watchNodeRuntime(deps.metrics.registry, { eventLoop: false });
  serveClusterMetrics(deps.metrics);
  const { startNodeJobs } = await import('../jobs/node-runner.js');
  jobs = startNodeJobs(deps);
}

/** The primary's Deps on the database, prepared; the service's code is loaded here, after the fork. */
async function openAndPrepare(config: AppConfig, log: Logger): Promise<Deps> {
  const [{ buildNodeDeps }, { prepareDatabase, prepareWhenAnswered }] = await Promise.all([
    import('./node-service.js'),
    import('./prepare-database.js'),
  ]);
  const deps = await buildNodeDeps(config, log, { prepare: false });
  // A database that does not answer is waited for; the server processes' /readyz name it meanwhile.
  await prepareWhenAnswered(() => prepareDatabase(deps.store.client), log);
  // The extensions' own start, once before any server process claims (project limits: read).
  await deps.extensions.start(deps);
  return deps;
}
