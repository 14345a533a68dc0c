// Deadlines on every call to a database reached over the network (a libSQL
// server: PLACEMENT_DB_URL http://, libsql://, ws://), in both runtimes.
//
// A server that refuses the connection fails a call at once; one behind a
// path that drops packets, or one that hangs, accepts it and answers nothing,
// and without a deadline the call (and the request, and the write lock behind
// it) waited for good. Here each call is given up after its deadline: reads
// after PLACEMENT_DB_READ_TIMEOUT_MS, writes after PLACEMENT_DB_WRITE_TIMEOUT_MS,
// counted from the call (a write's wait behind this process's write lock
// included). The caller gets a DatabaseTimeout saying what is known of the
// write: nothing was written (never sent, or a statement of a transaction that
// never committed), or its outcome is unknown (a commit, or a write batch, was
// sent and not answered). Nothing retries it: what it did is what the database
// says once it answers again.
//
// This is a layer around the client and the batch drivers (node-batches.ts,
// hrana-reads.ts), which stay as they are. An embedded file needs none: its
// calls run synchronously, start to finish, and cannot be left unanswered.
import type { Client, InStatement, ResultSet, Transaction } from '@libsql/client';
import type { BatchConnection, Mutex } from './client.js';

/** What a timed-out call left in the database. */
export type WriteOutcome = 'not_written' | 'unknown';

/** A database call given up at its deadline. `code` lets the HTTP kit know it without importing db/. */
export class DatabaseTimeout extends Error {
  readonly code = 'PLACEMENT_DB_TIMEOUT';
  constructor(
    readonly operation: 'read' | 'write',
    readonly outcome: WriteOutcome,
    readonly database: string,
    readonly timeoutMs: number,
  ) {
    super(
      `The database did not answer: ${database} gave no answer within ${timeoutMs} ms. ${
        outcome === 'unknown'
          ? 'The write was sent and its outcome is unknown: it may or may not have been applied. Read the state back before trying it again.'
          : 'Nothing was written.'
      }`,
    );
    this.name = 'DatabaseTimeout';
  }
}

export interface DeadlineSettings {
  /** How the database is named to callers and operators: the setting and its (redacted) URL. */
  database: string;
  readMs: number;
  writeMs: number;
  now?: () => number;
}

/** The deadlines of one database, and when it last answered (for /readyz). */
export class DatabaseDeadline {
  readonly database: string;
  readonly readMs: number;
  readonly writeMs: number;
  private readonly now: () => number;
  #answeredAt: number | undefined;

  constructor(settings: DeadlineSettings) {
    this.database = settings.database;
    this.readMs = settings.readMs;
    this.writeMs = settings.writeMs;
    this.now = settings.now ?? Date.now;
  }

  /** When the database last answered a call (epoch ms), if it has since this process started. */
  get answeredAt(): number | undefined {
    return this.#answeredAt;
  }

  /** A read: given up after readMs. */
  read<T>(call: () => Promise<T>): Promise<T> {
    return this.bounded('read', this.readMs, 'not_written', call);
  }

  /** A write sent at once: given up after writeMs, its outcome then `outcome`. */
  write<T>(call: () => Promise<T>, outcome: WriteOutcome = 'unknown'): Promise<T> {
    return this.bounded('write', this.writeMs, outcome, call);
  }

  /**
   * A write behind `lock`, within one deadline counted from now: given up
   * while still waiting, it is never sent (nothing written); given up once
   * sent, its outcome is unknown. The lock is let go at the deadline, so the
   * writes queued behind a call that does not answer are not held longer.
   */
  queued<T>(lock: Mutex, send: () => Promise<T>): Promise<T> {
    let sent = false;
    let expired = false;
    let giveUp!: () => void;
    const expiry = new Promise<never>((_, reject) => {
      giveUp = () => reject(this.timeout('write', this.writeMs, sent ? 'unknown' : 'not_written'));
    });
    const timer = setTimeout(() => {
      expired = true;
      giveUp();
    }, this.writeMs);
    const inLock = lock.run(async () => {
      if (expired) return undefined as T;
      sent = true;
      return Promise.race([send(), expiry]);
    });
    return this.settle(Promise.race([inLock, expiry]), timer);
  }

  private bounded<T>(operation: 'read' | 'write', ms: number, outcome: WriteOutcome, call: () => Promise<T>): Promise<T> {
    let timer!: ReturnType<typeof setTimeout>;
    const expiry = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.timeout(operation, ms, outcome)), ms);
    });
    return this.settle(Promise.race([call(), expiry]), timer);
  }

  private timeout(operation: 'read' | 'write', ms: number, outcome: WriteOutcome): DatabaseTimeout {
    return new DatabaseTimeout(operation, outcome, this.database, ms);
  }

  private settle<T>(raced: Promise<T>, timer: ReturnType<typeof setTimeout>): Promise<T> {
    return raced.then(
      (value) => {
        clearTimeout(timer);
        this.#answeredAt = this.now();
        return value;
      },
      (err: unknown) => {
        clearTimeout(timer);
        // An error the database sent is an answer too.
        if (!(err instanceof DatabaseTimeout)) this.#answeredAt = this.now();
        throw err;
      },
    );
  }
}

/** The DatabaseTimeout `err` is, or has among its causes, if any. */
export function databaseTimeoutIn(err: unknown): DatabaseTimeout | undefined {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    if (cur instanceof DatabaseTimeout) return cur;
  }
  return undefined;
}

export const isDatabaseTimeout = (err: unknown): boolean => databaseTimeoutIn(err) !== undefined;

const READS = /^\s*(SELECT|WITH|EXPLAIN|PRAGMA\s+\w+\s*$|VALUES)\b/i;
const isRead = (statement: InStatement | string): boolean => READS.test(typeof statement === 'string' ? statement : statement.sql);

/**
 * The client with a deadline on each call: statements and batches by what
 * they do (a read batch, a SELECT, or a write), an interactive transaction
 * per statement (given up before its commit, nothing was written; at its
 * commit, the outcome is unknown).
 */
export function clientWithDeadlines(client: Client, deadline: DatabaseDeadline): Client {
  return withMethods(client, (prop, call) => {
    switch (prop) {
      case 'execute':
        return (...args) => (isRead(args[0] as InStatement) ? deadline.read(() => call(args)) : deadline.write(() => call(args)));
      case 'batch':
        return (...args) => (args[1] === 'read' ? deadline.read(() => call(args)) : deadline.write(() => call(args)));
      case 'executeMultiple':
      case 'migrate':
        return (...args) => deadline.write(() => call(args));
      case 'transaction':
        return async (...args) =>
          transactionWithDeadlines((await deadline.write(() => call(args), 'not_written')) as Transaction, deadline);
      default:
        return undefined;
    }
  });
}

function transactionWithDeadlines(tx: Transaction, deadline: DatabaseDeadline): Transaction {
  return withMethods(tx, (prop, call) => {
    switch (prop) {
      case 'execute':
      case 'batch':
      case 'executeMultiple':
      case 'rollback':
        // Uncommitted: whatever it did is undone when the server drops the transaction.
        return (...args) => deadline.write(() => call(args), 'not_written');
      case 'commit':
        return (...args) => deadline.write(() => call(args), 'unknown');
      default:
        return undefined;
    }
  });
}

/** `target` with the methods `wrap` replaces (given how to call the original); the others as they are. */
function withMethods<T extends object>(
  target: T,
  wrap: (prop: string | symbol, call: (args: unknown[]) => Promise<unknown>) => ((...args: unknown[]) => Promise<unknown>) | undefined,
): T {
  return new Proxy(target, {
    get(object, prop) {
      const value: unknown = Reflect.get(object, prop);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => Promise<unknown>;
      return wrap(prop, (args) => fn.apply(object, args)) ?? fn.bind(object);
    },
  });
}

/** A batch driver whose reads have the read deadline (its writes go through the store's queued deadline). */
export function readsWithDeadline(batches: BatchConnection, deadline: DatabaseDeadline): BatchConnection {
  return {
    readBatch: (statements: InStatement[]): Promise<ResultSet[]> => deadline.read(() => batches.readBatch(statements)),
    writeBatch: (statements) => batches.writeBatch(statements),
    close: () => batches.close(),
  };
}
