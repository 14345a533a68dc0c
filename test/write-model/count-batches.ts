// Counts a store's read and write batches (its round trips) from now on.
import type { InStatement, ResultSet } from '@libsql/client';
import type { DataStore } from '../../src/db/client.js';

export function countBatches(store: DataStore): { reads: number; writes: number } {
  const counts = { reads: 0, writes: 0 };
  const [read, write] = [store.readBatch.bind(store), store.writeBatch.bind(store)];
  store.readBatch = (statements: InStatement[]): Promise<ResultSet[]> => {
    counts.reads += 1;
    return read(statements);
  };
  store.writeBatch = (statements: InStatement[]): Promise<ResultSet[]> => {
    counts.writes += 1;
    return write(statements);
  };
  return counts;
}
