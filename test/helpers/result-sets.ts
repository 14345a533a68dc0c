// What a caller can observe of a @libsql/client ResultSet, for the tests that
// hold the batch runners bypassing the client (db/node-batches.ts,
// db/hrana-reads.ts) to the client's own results.
import type { ResultSet } from '@libsql/client';

/** What a caller can observe of a result set: its rows by name, by index, enumerated, and its counters. */
export function observable(rs: ResultSet) {
  return {
    columns: rs.columns,
    columnTypes: rs.columnTypes,
    rowsAffected: rs.rowsAffected,
    lastInsertRowid: rs.lastInsertRowid,
    rows: rs.rows.map((row) => ({
      keys: Object.keys(row),
      byName: Object.fromEntries(rs.columns.map((c) => [c, row[c]])),
      byIndex: Array.from({ length: row.length }, (_, i) => row[i]),
      json: JSON.stringify(row),
    })),
    json: JSON.stringify(rs),
  };
}
