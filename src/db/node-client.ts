// Node-mode libSQL client: an embedded file by default, or a remote libSQL server.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createClient, type Client } from '@libsql/client';
import { openBatchRunner, type BatchRunner } from './node-batches.js';

/** How long a writer in *another* process waits on SQLite's lock. */
const BUSY_TIMEOUT_MS = 10_000;

/** `fetch`: what a remote server's client sends its requests with (a time limit, db/replica.ts fetchWithTimeout). */
export async function openNodeClient(url: string, authToken?: string, fetch?: typeof globalThis.fetch): Promise<Client> {
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length);
    if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const client = createClient({ url, timeout: BUSY_TIMEOUT_MS } as Parameters<typeof createClient>[0]);
    await client.execute('PRAGMA journal_mode=WAL');
    await client.execute('PRAGMA synchronous=NORMAL');
    return client;
  }
  return createClient({ url, authToken, ...(fetch ? { fetch } : {}) });
}

/**
 * The cached-statement batch runner for a file database (see
 * db/node-batches.ts), or undefined where the client must run batches
 * itself: an in-memory database (one connection only), a URL with options,
 * a remote server.
 */
export function openNodeBatchRunner(url: string): BatchRunner | undefined {
  if (!url.startsWith('file:')) return undefined;
  const path = url.slice('file:'.length);
  if (!path || path.includes(':memory:') || path.includes('?') || path.startsWith('//')) return undefined;
  return openBatchRunner(path, BUSY_TIMEOUT_MS);
}
