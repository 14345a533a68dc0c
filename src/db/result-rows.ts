// Results in @libsql/client's shapes (ResultSet, Row) built cheaply, for the
// batch runners that bypass the client (db/node-batches.ts: Node mode's
// cached statements; db/hrana-reads.ts: the Worker's read batches), so
// callers cannot tell them from the client's own.
import type { ResultSet, Row } from '@libsql/client';

/**
 * Rows as @libsql/client makes them (named columns enumerable, indices and
 * length not), built from one shared prototype per statement instead of one
 * defineProperty per value.
 */
export function rowFactory(columns: string[]): (values: unknown[]) => Row {
  const plainNames = new Set(columns).size === columns.length && columns.every((c) => !/^\d+$/.test(c) && c !== 'length');
  if (!plainNames) return (values) => definedRow(values, columns);
  const proto: object = Object.create(Object.prototype);
  for (const [i, name] of columns.entries()) {
    Object.defineProperty(proto, i, {
      get(this: Record<string, unknown>) {
        return this[name];
      },
    });
  }
  Object.defineProperty(proto, 'length', { value: columns.length });
  return (values) => {
    const row = Object.create(proto) as Record<string, unknown>;
    for (let i = 0; i < columns.length; i += 1) row[columns[i]!] = values[i];
    return row as Row;
  };
}

/** @libsql/client's own construction, for duplicate or numeric column names. */
function definedRow(values: unknown[], columns: string[]): Row {
  const row = {};
  Object.defineProperty(row, 'length', { value: values.length });
  values.forEach((value, i) => {
    Object.defineProperty(row, i, { value });
    const column = columns[i]!;
    if (!Object.hasOwn(row, column)) Object.defineProperty(row, column, { value, enumerable: true, configurable: true, writable: true });
  });
  return row as Row;
}

export function resultSet(
  columns: string[],
  columnTypes: string[],
  rows: Row[],
  rowsAffected: number,
  lastInsertRowid: bigint | undefined,
): ResultSet {
  return {
    columns,
    columnTypes,
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({
      columns,
      columnTypes,
      rows: rows.map((r) => Array.from(r as ArrayLike<unknown>, valueToJson)),
      rowsAffected,
      lastInsertRowid: lastInsertRowid?.toString() ?? null,
    }),
  };
}

function valueToJson(value: unknown): unknown {
  if (typeof value === 'bigint') return String(value);
  if (value instanceof ArrayBuffer) return base64Of(new Uint8Array(value));
  return value;
}

/** Bytes as base64, with what both runtimes have (no Node Buffer in a Worker). */
export function base64Of(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
