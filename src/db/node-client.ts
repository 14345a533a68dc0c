// Node-mode libSQL client: an embedded file by default, or a remote libSQL server.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createClient, type Client } from '@libsql/client';

export async function openNodeClient(url: string, authToken?: string): Promise<Client> {
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length);
    if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    // timeout: how long a writer in *another* process waits on SQLite's lock.
    const client = createClient({ url, timeout: 10_000 } as Parameters<typeof createClient>[0]);
    await client.execute('PRAGMA journal_mode=WAL');
    await client.execute('PRAGMA synchronous=NORMAL');
    return client;
  }
  return createClient({ url, authToken });
}
