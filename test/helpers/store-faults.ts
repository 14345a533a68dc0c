// Faults injected into a live app's data store, for the write model's safety
// tests: a write batch that fails at one statement, a crash between a write's
// read and its write batch. Each returns what undoes it.
import type { InStatement, ResultSet } from '@libsql/client';
import type { DataStore } from '../../src/db/client.js';

/** Fails every write batch at statement `index` (guards counted) until restored; `sizes` are the batch sizes seen. */
export function failWritesAt(store: DataStore, index: number): { sizes: number[]; restore: () => void } {
  const write = store.writeBatch;
  const sizes: number[] = [];
  store.writeBatch = async (statements: InStatement[]) => {
    sizes.push(statements.length);
    return write(statements.map((s, i) => (i === index ? "SELECT json('injected failure')" : s)));
  };
  return {
    sizes,
    restore: () => {
      store.writeBatch = write;
    },
  };
}

/**
 * Runs `send` once with each statement of its first write batch failing in turn (the batch's size
 * is learnt from the first run) and hands each result to `check`. Returns the batch's size.
 */
export async function failEachWriteStatement<T>(
  store: DataStore,
  send: () => Promise<T>,
  check: (result: T, index: number, size: number) => Promise<void>,
): Promise<number> {
  let size = 1;
  for (let index = 0; index < size; index += 1) {
    const fault = failWritesAt(store, index);
    const result = await send();
    fault.restore();
    size = fault.sizes[0]!;
    await check(result, index, size);
  }
  return size;
}

/** Every read batch runs and then throws, as a crash after a write's read would, until restored. */
export function crashAfterRead(store: DataStore): () => void {
  const read = store.readBatch;
  store.readBatch = async (statements: InStatement[]): Promise<ResultSet[]> => {
    await read(statements);
    throw new Error('injected crash between read and write');
  };
  return () => {
    store.readBatch = read;
  };
}

/** Runs `interfere` once, just before the store's next write batch goes out: another writer gets in first. */
export function onceBeforeWrite(store: DataStore, interfere: () => Promise<void>): void {
  const write = store.writeBatch;
  let interfered = false;
  store.writeBatch = async (statements: InStatement[]) => {
    if (!interfered) {
      interfered = true;
      await interfere();
    }
    return write(statements);
  };
}
