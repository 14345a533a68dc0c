// The deadlines of the service's database (db/deadline.ts), from the
// settings: a libSQL server has them, an embedded file needs none. Both
// entries (Node and the Worker) build theirs here.
import { type AppConfig, databaseUrlScheme } from '../config.js';
import type { Client } from '@libsql/client';
import { clientWithDeadlines, DatabaseDeadline } from '../db/deadline.js';
import { redactUrl } from '../observability/config-summary.js';

export function databaseDeadline(config: AppConfig): DatabaseDeadline | undefined {
  if (databaseUrlScheme(config.PLACEMENT_DB_URL) === 'file:') return undefined;
  return new DatabaseDeadline({
    database: `PLACEMENT_DB_URL (${redactUrl(config.PLACEMENT_DB_URL)})`,
    readMs: config.PLACEMENT_DB_READ_TIMEOUT_MS,
    writeMs: config.PLACEMENT_DB_WRITE_TIMEOUT_MS,
  });
}

/**
 * The read replica's client with the read deadline on each call (a ws:
 * replica has no fetch to time out): a replica that does not answer in time
 * sends the read to the primary (db/replica.ts).
 */
export function replicaWithDeadline(config: AppConfig, client: Client): Client {
  const url = config.PLACEMENT_DB_READ_URL ?? '';
  return clientWithDeadlines(
    client,
    new DatabaseDeadline({
      database: `PLACEMENT_DB_READ_URL (${redactUrl(url)})`,
      readMs: config.PLACEMENT_DB_READ_TIMEOUT_MS,
      writeMs: config.PLACEMENT_DB_READ_TIMEOUT_MS,
    }),
  );
}

/**
 * How long one of the client's HTTP requests may take: a little past the
 * longest deadline, so a call given up is also closed, and frees its
 * connection and the client's slot, while the deadline answers first.
 */
export const clientRequestLimitMs = (config: AppConfig): number =>
  Math.max(config.PLACEMENT_DB_READ_TIMEOUT_MS, config.PLACEMENT_DB_WRITE_TIMEOUT_MS) + 1_000;
