// Node-mode libSQL client: an embedded file by default, or a remote libSQL server.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createClient, type Client } from '@libsql/client';
import type { BatchConnection } from './client.js';
import { openBatchRunner, type Synchronous, synchronousPragma } from './node-batches.js';
import { openSharedWriter, type SharedWriter } from './shared-writer.js';

/** How long a writer in *another* process waits on SQLite's lock. */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * `fetch`: what a remote server's client sends its requests with (a time limit, db/replica.ts fetchWithTimeout).
 * `synchronous`: when a file database's commits reach the disk (db/node-batches.ts).
 */
export async function openNodeClient(
  url: string,
  authToken?: string,
  fetch?: typeof globalThis.fetch,
  synchronous: Synchronous = 'normal',
): Promise<Client> {
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length);
    if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const client = createClient({ url, timeout: BUSY_TIMEOUT_MS } as Parameters<typeof createClient>[0]);
    await client.execute('PRAGMA journal_mode=WAL');
    await client.execute(synchronousPragma(synchronous));
    return client;
  }
  return createClient({ url, authToken, ...(fetch ? { fetch } : {}) });
}

/**
 * The cached-statement batch runner for a file database (see
 * db/node-batches.ts), its concurrent write batches sharing commits when
 * `groupCommit` is set (db/group-commit.ts), or undefined where the client must run batches
 * itself: an in-memory database (one connection only), a URL with options,
 * a remote server.
 */
export function openNodeBatchRunner(
  url: string,
  { groupCommit = false, synchronous = 'normal' }: { groupCommit?: boolean; synchronous?: Synchronous } = {},
): BatchConnection | undefined {
  const path = batchFilePath(url);
  if (path === undefined) return undefined;
  const runner = openBatchRunner(path, BUSY_TIMEOUT_MS, { synchronous });
  if (groupCommit) return runner;
  // Every write batch commits on its own.
  return { readBatch: runner.readBatch, writeBatch: runner.writeBatch, close: runner.close };
}

/** The file a `file:` URL names, where batches can run on a connection of their own; else undefined. */
export function batchFilePath(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined;
  const path = url.slice('file:'.length);
  if (!path || path.includes(':memory:') || path.includes('?') || path.startsWith('//')) return undefined;
  return path;
}

/** The one writer of a cluster's server processes on a database file (db/shared-writer.ts); undefined where batches cannot run apart. */
export function openNodeSharedWriter(
  url: string,
  { synchronous = 'normal' }: { synchronous?: Synchronous } = {},
): SharedWriter | undefined {
  const path = batchFilePath(url);
  return path === undefined ? undefined : openSharedWriter(path, BUSY_TIMEOUT_MS, { synchronous });
}
