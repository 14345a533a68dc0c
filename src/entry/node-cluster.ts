// Node mode on several cores: the primary process prepares the database once
// (migrations, standard names), runs the periodic sweeps (outbox drain, bind
// timeouts, purge) so they run in one place, and forks PLACEMENT_WORKERS
// HTTP server processes sharing the port (node:cluster) and the WAL database
// file. Reads run in parallel; writes stay serialised: each process queues
// its own writers behind its in-process lock and SQLite's BEGIN IMMEDIATE +
// busy timeout orders the processes (the race tests check the result).
import cluster, { type Worker } from 'node:cluster';
import type { AppConfig } from '../config.js';
import type { Deps } from '../deps.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import { buildNodeDeps } from './node-service.js';
import { relayWriteMarks } from './write-marks-sharing.js';

/** How long the primary waits for workers to finish their requests on SIGTERM. */
const SHUTDOWN_GRACE_MS = 3000;
/** How long before a worker killed while starting is started again. */
const RESTART_PAUSE_MS = 1000;
/** Semi-space size of each server process's young generation, in MB. */
const YOUNG_GENERATION_MB = 32;

export async function runPrimary(config: AppConfig, processes: number): Promise<void> {
  // Migrate and sync before any worker opens the file, so none of them races it.
  const deps: Deps = await buildNodeDeps(config);
  const jobs = startNodeJobs(deps);
  let stopping = false;
  let announced = false;
  const listening = new Set<number>();
  const alive = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);

  function exit(code: number): never {
    jobs.stop();
    deps.store.close();
    process.exit(code);
  }

  function shutdown(): void {
    if (stopping) return;
    stopping = true;
    jobs.stop();
    for (const worker of alive()) worker.process.kill('SIGTERM');
    if (alive().length === 0) exit(0);
    setTimeout(() => {
      for (const worker of alive()) worker.process.kill('SIGKILL');
      exit(0);
    }, SHUTDOWN_GRACE_MS).unref();
  }

  cluster.on('listening', (worker, address) => {
    listening.add(worker.id);
    if (announced) return;
    announced = true;
    deps.log.info('placement-edge listening', {
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
    // A clean exit is a worker told to stop (a SIGTERM to the whole process
    // group can reach it before this process): nothing to replace.
    if (code === 0 && !signal) {
      if (alive().length === 0) shutdown();
      return;
    }
    deps.log.error('server process exited', { pid: worker.process.pid, code, signal });
    // A worker that dies after serving is replaced. One that never got to
    // listen: killed by a signal (the OOM killer, an operator, a slow start
    // under load) it is tried again after a pause; exiting by itself it
    // would exit again (bad configuration): give up once none is left.
    if (hadListened) cluster.fork();
    else if (signal) setTimeout(() => stopping || cluster.fork(), RESTART_PAUSE_MS);
    else if (alive().length === 0) exit(1);
  });

  // A full candidates answer allocates a few MB of short-lived objects: a
  // larger young generation scavenges less often (~15% less CPU per answer
  // at N=1000), unless the operator chose a size.
  if (!process.execArgv.some((arg) => arg.startsWith('--max-semi-space-size'))) {
    cluster.setupPrimary({ execArgv: [...process.execArgv, `--max-semi-space-size=${YOUNG_GENERATION_MB}`] });
  }
  relayWriteMarks();
  for (let i = 0; i < processes; i += 1) cluster.fork();
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
