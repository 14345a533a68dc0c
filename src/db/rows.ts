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

/**
 * A table's SQL column names by their schema keys, resolved once at load.
 * Hand-written statements and their row decoders name columns through it
 * (`` `SELECT ${P.generation} ...` ``, `num(row, P.generation)`), so renaming
 * or dropping a column in the drizzle schema fails `npm run typecheck`
 * instead of a query at run time; at run time they are the same constant
 * strings as before.
 */
export function columnNames<T extends SQLiteTable>(table: T): { readonly [K in keyof T['_']['columns']]: string } {
  const out: Record<string, string> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) out[key] = column.name;
  return out as { readonly [K in keyof T['_']['columns']]: string };
}

/** A row's column as a number or a string: the decoders of hand-written statements, `num(row, RP.generation)`. */
export const num = (row: Record<string, unknown>, column: string): number => Number(row[column]);
export const str = (row: Record<string, unknown>, column: string): string => String(row[column]);
/** The same, null where the column is NULL. */
export const numOrNull = (row: Record<string, unknown>, column: string): number | null =>
  row[column] === null || row[column] === undefined ? null : Number(row[column]);
export const strOrNull = (row: Record<string, unknown>, column: string): string | null =>
  row[column] === null || row[column] === undefined ? null : String(row[column]);
