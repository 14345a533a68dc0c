// Node-mode wiring: open the libSQL database, apply migrations, sync the
// standard names (prepare-database.ts), and build the Deps createApp() needs.
// Shared by the server entry (which prepares after it listens), the CLI,
// tests and the benchmark.
import { readFileSync } from 'node:fs';
import type { AppConfig } from '../config.js';
import { createClient } from '@libsql/client';
import { createDataStore, type DataStore, type ReplicaConnection } from '../db/client.js';
import { fetchWithTimeout } from '../db/replica.js';
import { openNodeBatchRunner, openNodeClient } from '../db/node-client.js';
import { clientRequestLimitMs, databaseDeadline, replicaWithDeadline } from './database-deadline.js';
import { prepareDatabase } from './prepare-database.js';
import { writesThroughPrimary } from './one-writer.js';
import { makeDeps } from '../compose.js';
import { consoleLogger, parsePolicyOverrides, type Deps, type Logger } from '../deps.js';
import { InProcessQueue } from '../jobs/queue.js';
import { isStorageFull } from '../db/storage-full.js';

export interface OpenOptions {
  /** Apply migrations and sync standard names (false where the caller does it: the server entry, after it listens). */
  prepare?: boolean;
}

export async function openStore(
  config: AppConfig,
  { prepare = true }: OpenOptions = {},
  log: Logger = consoleLogger(config.LOG_LEVEL),
): Promise<DataStore> {
  const client = await openNodeClient(
    config.PLACEMENT_DB_URL,
    config.PLACEMENT_DB_AUTH_TOKEN,
    fetchWithTimeout(clientRequestLimitMs(config)),
    config.PLACEMENT_DB_SYNCHRONOUS,
  );
  const store = createDataStore(
    client,
    await writesThroughPrimary(
      config,
      openNodeBatchRunner(config.PLACEMENT_DB_URL, {
        groupCommit: config.PLACEMENT_GROUP_COMMIT,
        synchronous: config.PLACEMENT_DB_SYNCHRONOUS,
      }),
    ),
    openReplica(config, log),
    log,
    databaseDeadline(config),
  );
  // Prepared through the store's client: within the deadlines too.
  if (prepare) await prepareDatabase(store.client);
  return store;
}

/** The read replica's client, where PLACEMENT_DB_READ_URL names one (db/replica.ts). */
function openReplica(config: AppConfig, log: Logger): ReplicaConnection | undefined {
  if (!config.PLACEMENT_DB_READ_URL) return undefined;
  const client = replicaWithDeadline(
    config,
    createClient({
      url: config.PLACEMENT_DB_READ_URL,
      authToken: config.PLACEMENT_DB_READ_AUTH_TOKEN,
      fetch: fetchWithTimeout(config.PLACEMENT_DB_READ_TIMEOUT_MS),
    }),
  );
  return { client, retryMs: config.PLACEMENT_DB_READ_RETRY_MS, log };
}

export async function buildNodeDeps(
  config: AppConfig,
  log: Logger = consoleLogger(config.LOG_LEVEL),
  options: OpenOptions = {},
): Promise<Deps> {
  const file = config.PLACEMENT_POLICY_FILE;
  const overrides = file ? parsePolicyOverrides(readFileSync(file, 'utf8'), file) : undefined;
  // The queue consumes once startNodeJobs() attaches consume() to it.
  // A full disk is logged once per episode by the store, not per job.
  const jobs = new InProcessQueue((err) => isStorageFull(err) || log.error('job failed', { err: String(err) }));
  return makeDeps(await openStore(config, options, log), config, log, { policyOverrides: overrides, jobs });
}
