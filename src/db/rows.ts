// Raw rows of a libSQL batch (snake_case columns) as drizzle's select types,
// for the repos of the write model that read and write through batches.
import type { Row } from '@libsql/client';
import { getTableColumns } from 'drizzle-orm';
import type { SQLiteTable } from 'drizzle-orm/sqlite-core';

export function rowOf<T extends SQLiteTable>(table: T, row: Row): T['$inferSelect'] {
  const out: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) out[key] = row[column.name] ?? null;
  return out as T['$inferSelect'];
}
