// Reads drizzle-kit's output folder from disk (Node mode and tests).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MigrationFile } from './migrate.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));

export function readMigrationsDir(dir = MIGRATIONS_DIR): MigrationFile[] {
  const journal = JSON.parse(readFileSync(join(dir, 'meta', '_journal.json'), 'utf8')) as {
    entries: { tag: string; when: number }[];
  };
  return journal.entries.map((e) => ({ tag: e.tag, when: e.when, sql: readFileSync(join(dir, `${e.tag}.sql`), 'utf8') }));
}
