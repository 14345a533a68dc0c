// `placement-admin backup FILE` and `restore FILE` for the embedded database
// (a `file:` PLACEMENT_DB_URL). A backup is SQLite's VACUUM INTO: one read
// transaction, so the copy is the database as of one moment (every write
// committed before it began, none half done), taken while the service keeps
// serving. A libSQL server is backed up with the server's own tools (see
// docs/operations-backup.md).
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { createClient } from '@libsql/client';
import { AdminError } from './placement-reader.js';
import { EPOCH } from '../db/columns.js';

/** The path of a `file:` URL; AdminError for anything else. */
export function filePathOf(dbUrl: string, what: string): string {
  if (!dbUrl.startsWith('file:')) {
    throw new AdminError(
      `${what} works on the embedded database (a file: PLACEMENT_DB_URL); for a libSQL server (${dbUrl}) use the server's own backup (docs/operations-backup.md)`,
    );
  }
  const path = dbUrl.slice('file:'.length).split('?')[0]!;
  if (!path || path.includes(':memory:')) throw new AdminError(`${what} needs a database file, not ${dbUrl}`);
  return resolve(path);
}

export interface BackupResult {
  file: string;
  bytes: number;
  providers: number;
  consumers: number;
}

export async function backupDatabase(dbUrl: string, file: string): Promise<BackupResult> {
  const source = filePathOf(dbUrl, 'backup');
  const target = resolve(file);
  if (!existsSync(source)) throw new AdminError(`no database at ${source} (PLACEMENT_DB_URL)`);
  if (existsSync(target)) throw new AdminError(`${target} already exists; choose a new file`);
  if (!existsSync(dirname(target))) throw new AdminError(`the folder ${dirname(target)} does not exist`);
  // Written beside the target, then renamed: a FILE that exists is a whole backup.
  const partial = `${target}.partial-${process.pid}`;
  const client = createClient({ url: `file:${source}`, timeout: 10_000 } as Parameters<typeof createClient>[0]);
  try {
    await client.execute({ sql: 'VACUUM INTO ?', args: [partial] });
  } catch (err) {
    rmSync(partial, { force: true });
    throw new AdminError(`backup of ${source} failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    client.close();
  }
  renameSync(partial, target);
  const counts = await checkDatabaseFile(target);
  return { file: target, bytes: statSync(target).size, ...counts };
}

/** Opens a database file and checks it is a whole placement-edge database; returns what it holds. */
export async function checkDatabaseFile(file: string): Promise<{ providers: number; consumers: number }> {
  const client = createClient({ url: `file:${file}` });
  try {
    const [integrity, tables] = await client.batch(
      ['PRAGMA integrity_check', "SELECT count(*) AS n FROM sqlite_master WHERE name IN ('resource_providers', '__drizzle_migrations')"],
      'read',
    );
    const verdict = String(integrity!.rows[0]?.[0] ?? '');
    if (verdict !== 'ok') throw new AdminError(`${file} is damaged: ${verdict}`);
    if (Number(tables!.rows[0]!.n) !== 2) throw new AdminError(`${file} is not a placement-edge database`);
    const [providers, consumers] = await client.batch(
      ['SELECT count(*) AS n FROM resource_providers', 'SELECT count(*) AS n FROM consumers'],
      'read',
    );
    return { providers: Number(providers!.rows[0]!.n), consumers: Number(consumers!.rows[0]!.n) };
  } catch (err) {
    if (err instanceof AdminError) throw err;
    throw new AdminError(`${file} cannot be read as a database: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    client.close();
  }
}

/**
 * Puts a backup in place of the database PLACEMENT_DB_URL names. The service
 * must be stopped: a running process would keep the replaced file open.
 * Refuses to overwrite an existing database unless `replace`.
 */
export async function restoreDatabase(dbUrl: string, backup: string, replace: boolean): Promise<BackupResult> {
  const target = filePathOf(dbUrl, 'restore');
  const from = resolve(backup);
  if (!existsSync(from)) throw new AdminError(`no backup at ${from}`);
  const counts = await checkDatabaseFile(from);
  if (existsSync(target) && !replace)
    throw new AdminError(`a database already exists at ${target}; stop the service and run with --replace`);
  if (!existsSync(dirname(target))) throw new AdminError(`the folder ${dirname(target)} does not exist`);
  const partial = `${target}.restore-${process.pid}`;
  await copyFile(from, partial);
  // A process that still has the trees of the old file in memory reads them again.
  const client = createClient({ url: `file:${partial}` });
  try {
    await client.execute(`UPDATE placement_epoch SET ${EPOCH.token} = lower(hex(randomblob(8)))`);
  } finally {
    client.close();
  }
  // The old file's write-ahead log must not be applied to the restored one.
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${target}${suffix}`, { force: true });
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${partial}${suffix}`, { force: true });
  renameSync(partial, target);
  return { file: target, bytes: statSync(target).size, ...counts };
}
