// Two small tools that keep the candidate SQL readable and its results typed:
// named parameters (a value is bound once, by name, wherever the SQL text
// repeats it) and column lists that decode packed rows by name, not by index.
import type { InValue } from '@libsql/client';

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
 * each one's index, so decoders read `row[c.at.used]`, never `row[11]`.
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

export const num = (v: PackedValue | undefined): number => Number(v);
