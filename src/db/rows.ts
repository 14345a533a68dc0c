// Raw rows of a libSQL batch (snake_case columns) as drizzle's select types,
// for the repos of the write model that read and write through batches; the
// decoders of hand-written statements; and the tools that keep the packed
// reads (candidates, holds, simulate) readable and typed: named parameters
// (a value is bound once, by name, wherever the SQL text repeats it) and
// column lists that decode json_array() rows by name, not by index.
import type { InValue, Row } from '@libsql/client';
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

/** Collects a statement's named parameters as its SQL is assembled. */
export class SqlParams {
  readonly args: Record<string, InValue> = {};
  private count = 0;

  /** A placeholder bound to `value` (`:p0`, `:p1`, ...). */
  bind(value: InValue): string {
    const name = `p${this.count}`;
    this.count += 1;
    this.args[name] = value;
    return `:${name}`;
  }

  /** A placeholder for `values` as JSON, to read with json_each(). */
  json(values: unknown): string {
    return this.bind(JSON.stringify(values));
  }
}

/** A value as the database packs it with json_array(). */
export type PackedValue = string | number | null;
export type PackedRow = PackedValue[];

/**
 * The columns of a packed row: `sql` lists them for json_array(), `at` gives
 * each one's index, so decoders read `Number(row[c.at.used])`, never `row[11]`.
 */
export interface Columns<Name extends string> {
  sql: string;
  at: Readonly<Record<Name, number>>;
}

export function columns<const Name extends string>(names: readonly Name[]): Columns<Name> {
  const at = {} as Record<Name, number>;
  names.forEach((name, i) => {
    at[name] = i;
  });
  return { sql: names.join(', '), at };
}

/** json_group_array of json_array rows, '[]' when there are none. */
export const packedArray = (cols: Columns<string>): string => `COALESCE(json_group_array(json_array(${cols.sql})), json('[]'))`;
