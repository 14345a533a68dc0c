// One writer for every server process of a Node cluster: each server
// process sends its write batches to the cluster primary, which commits the
// batches of all of them together (db/group-commit.ts) on one connection, and
// sends each batch's outcome back. Two processes committing on their own
// took turns at SQLite's write lock (a BEGIN IMMEDIATE refused while the
// other held it, and tried again) and each dropped its page cache whenever
// the other had committed: a claim cost about twice its server CPU with two
// processes (docs/performance.md). One writer pays neither, and a group
// gathers the concurrent writes of all the clients instead of one process's.
//
// Each batch keeps what it had alone: its own all-or-nothing outcome, its
// results or its own error (LibsqlBatchError with its statementIndex, the
// SQLite code a full disk or a constraint gives), answered only once its
// group's COMMIT has returned. A server process that dies with a batch sent
// never answers its request; the primary's death ends every server process.
//
// This file holds the transport-free parts: the messages, the server
// process's side (SharedWriterClient) and the primary's (SharedWriterService);
// src/entry/one-writer.ts carries them over node:cluster's channel.
import { LibsqlBatchError, LibsqlError, type InArgs, type InStatement, type InValue, type ResultSet, type Row } from '@libsql/client';
import { CommitGroups } from './group-commit.js';
import { type BatchRunner, openBatchRunner, type Synchronous } from './node-batches.js';
import { Mutex, resultSet, rowFactory } from './client.js';

/** A value as it travels in JSON: itself, or tagged where JSON would change it. */
type Wire = null | string | number | boolean | { i: string } | { x: string } | { n: string } | { u: 1 };
/** A statement: its text's number (texts are sent once per process) and its arguments. */
type WireStatement = [text: number, args: Wire[] | Record<string, Wire>];
/** `shape`: the number of the result's column names and types (sent once per process: a guard's column is its whole SQL text). */
type WireResult = [shape: number, rows: Wire[][], rowsAffected: number, lastInsertRowid: string | null];
interface WireError {
  name: string;
  message: string;
  code?: string;
  extendedCode?: string;
  rawCode?: number;
  statementIndex?: number;
  cause?: WireError;
}
type WireOutcome = { r: WireResult[] } | { e: WireError };

/** A server process's write batches of one turn of its event loop. */
export interface WriteRequest {
  type: 'placement-write';
  id: number;
  /** Statement texts this process had not sent before, by number. */
  texts?: [number, string][];
  batches: WireStatement[][];
}

/** The writer's answer to one request: one outcome per batch of it, in order. */
interface WriteAnswer {
  id: number;
  /** Result shapes (column names and types) this process had not been sent before, by number. */
  shapes?: [number, string[], string[]][];
  outcomes: WireOutcome[];
}

/** The writer's answers to a process that were ready in one turn of its event loop (a shared commit's), in order. */
export interface WriteReply {
  type: 'placement-written';
  answers: WriteAnswer[];
}

export const isWriteReply = (msg: unknown): msg is WriteReply =>
  typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'placement-written';

// --- Values ------------------------------------------------------------------

function toWire(value: unknown): Wire {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // NaN and the infinities arrive as themselves, so the writer refuses them as it would here.
      return Number.isFinite(value) ? value : { n: String(value) };
    case 'bigint':
      return { i: value.toString() };
    case 'undefined':
      return { u: 1 };
    default:
      if (value === null) return null;
      if (value instanceof Date) return value.valueOf();
      if (value instanceof ArrayBuffer) return { x: Buffer.from(value).toString('base64') };
      if (ArrayBuffer.isView(value)) return { x: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
      throw new TypeError(`a write argument of type ${typeof value} cannot be sent to the writer`);
  }
}

/** `bytes`: what a blob decodes to (an argument: a Uint8Array; a result value: an ArrayBuffer, as the client gives). */
function fromWire(wire: Wire, bytes: (b: Buffer) => unknown): unknown {
  if (wire === null || typeof wire !== 'object') return wire;
  if ('i' in wire) return BigInt(wire.i);
  if ('x' in wire) return bytes(Buffer.from(wire.x, 'base64'));
  if ('n' in wire) return Number(wire.n);
  return undefined;
}

const argBytes = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
const resultBytes = (b: Buffer): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

const plain = (wire: Wire): boolean => wire === null || typeof wire !== 'object';

function argsToWire(args: InArgs | undefined): Wire[] | Record<string, Wire> {
  if (args === undefined) return [];
  if (Array.isArray(args)) return args.map(toWire);
  const named: Record<string, Wire> = {};
  for (const [name, value] of Object.entries(args)) named[name] = toWire(value);
  return named;
}

function argsFromWire(args: Wire[] | Record<string, Wire>): InArgs {
  if (Array.isArray(args)) return args.every(plain) ? (args as InValue[]) : args.map((a) => fromWire(a, argBytes) as InValue);
  const named: Record<string, InValue> = {};
  for (const [name, value] of Object.entries(args)) named[name] = fromWire(value, argBytes) as InValue;
  return named;
}

// --- Results and errors --------------------------------------------------------

function resultToWire(result: ResultSet, shape: number): WireResult {
  const width = result.columns.length;
  const rows = result.rows.map((row) => {
    const values: Wire[] = [];
    for (let i = 0; i < width; i += 1) values.push(toWire(row[i]));
    return values;
  });
  return [shape, rows, result.rowsAffected, result.lastInsertRowid?.toString() ?? null];
}

function errorToWire(err: unknown, depth = 0): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const wire: WireError = { name: err.name, message: err.message };
  const fields = err as Error & Partial<Record<'code' | 'extendedCode', unknown>> & Partial<Record<'rawCode' | 'statementIndex', unknown>>;
  if (typeof fields.code === 'string') wire.code = fields.code;
  if (typeof fields.extendedCode === 'string') wire.extendedCode = fields.extendedCode;
  if (typeof fields.rawCode === 'number') wire.rawCode = fields.rawCode;
  if (typeof fields.statementIndex === 'number') wire.statementIndex = fields.statementIndex;
  if (err.cause !== undefined && depth < 4) wire.cause = errorToWire(err.cause, depth + 1);
  return wire;
}

/** The error as the batch's own connection would have thrown it: same class, message, codes and index. */
function errorFromWire(wire: WireError): Error {
  const cause = wire.cause ? errorFromWire(wire.cause) : undefined;
  // LibsqlError puts "CODE: " before the message it is given.
  const prefix = wire.code === undefined ? '' : `${wire.code}: `;
  const message = prefix && wire.message.startsWith(prefix) ? wire.message.slice(prefix.length) : wire.message;
  if (wire.name === 'LibsqlBatchError' && wire.statementIndex !== undefined) {
    return new LibsqlBatchError(message, wire.statementIndex, wire.code!, wire.extendedCode, wire.rawCode, cause);
  }
  if (wire.name === 'LibsqlError' && wire.code !== undefined)
    return new LibsqlError(message, wire.code, wire.extendedCode, wire.rawCode, cause);
  const err =
    wire.name === 'RangeError'
      ? new RangeError(wire.message)
      : wire.name === 'TypeError'
        ? new TypeError(wire.message)
        : new Error(wire.message);
  if (err.name !== wire.name) err.name = wire.name;
  const extra = err as Error & Record<string, unknown>;
  if (wire.code !== undefined) extra.code = wire.code;
  if (wire.rawCode !== undefined) extra.rawCode = wire.rawCode;
  if (cause) extra.cause = cause;
  return err;
}

// --- The server process's side -------------------------------------------------

interface Sending {
  statements: InStatement[];
  resolve(results: ResultSet[]): void;
  reject(err: unknown): void;
}

/**
 * Sends write batches to the writer, those of one turn of the event loop in
 * one message, and settles each with its own outcome. `send` calls `done`
 * once the message is handed to the channel, with the error when it could
 * not be (a closed channel: nothing of it reached the writer).
 */
export class SharedWriterClient {
  private readonly texts = new Map<string, number>();
  private readonly inFlight = new Map<number, Sending[]>();
  private waiting: Sending[] = [];
  private scheduled = false;
  private nextId = 1;
  /** Result shapes by number, each with the row builder its rows share. */
  private readonly shapes = new Map<number, { columns: string[]; columnTypes: string[]; makeRow: (values: unknown[]) => Row }>();

  constructor(private readonly send: (msg: WriteRequest, done: (err: Error | null) => void) => void) {}

  write(statements: InStatement[]): Promise<ResultSet[]> {
    return new Promise<ResultSet[]>((resolve, reject) => {
      this.waiting.push({ statements, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** A message from the writer: settles the batches it answers. False when it is not a reply. */
  receive(msg: unknown): boolean {
    if (!isWriteReply(msg)) return false;
    for (const answer of msg.answers) this.settle(answer);
    return true;
  }

  private settle(answer: WriteAnswer): void {
    for (const [n, columns, columnTypes] of answer.shapes ?? []) this.shapes.set(n, { columns, columnTypes, makeRow: rowFactory(columns) });
    const batches = this.inFlight.get(answer.id);
    if (!batches) return;
    this.inFlight.delete(answer.id);
    batches.forEach((batch, i) => {
      const outcome = answer.outcomes[i];
      if (!outcome) batch.reject(new Error('the writer gave no outcome for this write batch'));
      else if ('e' in outcome) batch.reject(errorFromWire(outcome.e));
      else {
        try {
          batch.resolve(outcome.r.map((r) => this.result(r)));
        } catch (err) {
          batch.reject(err);
        }
      }
    });
  }

  /** The writer is gone: every batch sent and not answered fails (written or not, nobody can tell). */
  failAll(err: Error): void {
    for (const batches of this.inFlight.values()) for (const batch of batches) batch.reject(err);
    this.inFlight.clear();
  }

  private flush(): void {
    this.scheduled = false;
    const sending = this.waiting;
    this.waiting = [];
    const id = this.nextId++;
    const texts: [number, string][] = [];
    const batches = sending.map(({ statements }) =>
      statements.map((s): WireStatement => {
        const [sql, args] = typeof s === 'string' ? [s, undefined] : [s.sql, s.args];
        let text = this.texts.get(sql);
        if (text === undefined) {
          text = this.texts.size;
          this.texts.set(sql, text);
          texts.push([text, sql]);
        }
        return [text, argsToWire(args)];
      }),
    );
    this.inFlight.set(id, sending);
    const unsent = (err: unknown) => {
      if (!this.inFlight.delete(id)) return;
      const why = err instanceof Error ? err.message : String(err);
      const failure = new Error(`the cluster primary, which commits every write, cannot be reached (${why}): nothing was written`);
      for (const batch of sending) batch.reject(failure);
    };
    try {
      this.send({ type: 'placement-write', id, ...(texts.length > 0 ? { texts } : {}), batches }, (err) => {
        if (err) unsent(err);
      });
    } catch (err) {
      unsent(err);
    }
  }

  private result([shape, rows, rowsAffected, lastInsertRowid]: WireResult): ResultSet {
    const known = this.shapes.get(shape);
    if (!known) throw new Error(`result shape ${shape} was never sent`);
    const { columns, columnTypes, makeRow } = known;
    return resultSet(
      columns,
      columnTypes,
      rows.map((values) => makeRow(values.every(plain) ? values : values.map((v) => fromWire(v, resultBytes)))),
      rowsAffected,
      lastInsertRowid === null ? undefined : BigInt(lastInsertRowid),
    );
  }
}

// --- The writer's side ----------------------------------------------------------

/** Commits write batches: one BatchRunner's shared commits, taken in turn. */
export interface SharedWriter {
  write(statements: InStatement[]): Promise<ResultSet[]>;
  close(): void;
}

/**
 * The writer on the database file at `path`: the batches that reach it during
 * one turn of its event loop, from every server process, share one COMMIT.
 */
export function openSharedWriter(path: string, busyTimeoutMs: number, options: { synchronous?: Synchronous } = {}): SharedWriter {
  const runner: BatchRunner = openBatchRunner(path, busyTimeoutMs, options);
  const turns = new Mutex();
  const groups = new CommitGroups((batches) => turns.run(() => runner.writeGroup(batches)));
  return { write: (statements) => groups.write(statements), close: () => runner.close() };
}

interface Sender {
  /** Statement texts by number. */
  texts: Map<number, string>;
  /** Result shapes sent to it, by their column names and types. */
  shapes: Map<string, number>;
  /** Answers ready and not yet sent: those of one turn go in one message. */
  ready: WriteAnswer[];
}

/** Answers the server processes' write requests through one writer. */
export class SharedWriterService {
  private readonly senders = new Map<string | number, Sender>();

  constructor(private readonly writer: Promise<SharedWriter>) {}

  /**
   * Commits the request's batches and answers with their outcomes (nothing
   * is answered before its COMMIT); the answers to one sender that are ready
   * in one turn (a shared commit's) go to `reply` in one message.
   */
  async receive(from: string | number, msg: WriteRequest, reply: (msg: WriteReply) => void): Promise<void> {
    let sender = this.senders.get(from);
    if (!sender) {
      sender = { texts: new Map(), shapes: new Map(), ready: [] };
      this.senders.set(from, sender);
    }
    const { texts } = sender;
    for (const [n, sql] of msg.texts ?? []) texts.set(n, sql);
    const answer = (ready: WriteAnswer) => {
      const { ready: waiting } = sender;
      waiting.push(ready);
      if (waiting.length === 1) setImmediate(() => reply({ type: 'placement-written', answers: waiting.splice(0) }));
    };
    let writer: SharedWriter;
    try {
      writer = await this.writer;
    } catch (err) {
      answer({ id: msg.id, outcomes: msg.batches.map(() => ({ e: errorToWire(err) })) });
      return;
    }
    const settled = await Promise.all(
      msg.batches.map(async (batch): Promise<ResultSet[] | { error: unknown }> => {
        try {
          const statements = batch.map(([text, args]): InStatement => {
            const sql = texts.get(text);
            if (sql === undefined) throw new Error(`statement text ${text} was never sent`);
            return { sql, args: argsFromWire(args) };
          });
          return await writer.write(statements);
        } catch (error) {
          return { error };
        }
      }),
    );
    // Shapes are numbered as the replies go out, so each arrives before its first use.
    const shapes: [number, string[], string[]][] = [];
    const shapeOf = (result: ResultSet): number => {
      const key = `${result.columns.join('\0')}\u0001${result.columnTypes.join('\0')}`;
      let n = sender.shapes.get(key);
      if (n === undefined) {
        n = sender.shapes.size;
        sender.shapes.set(key, n);
        shapes.push([n, result.columns, result.columnTypes]);
      }
      return n;
    };
    const outcomes = settled.map(
      (s): WireOutcome => ('error' in s ? { e: errorToWire(s.error) } : { r: s.map((r) => resultToWire(r, shapeOf(r))) }),
    );
    answer({ id: msg.id, ...(shapes.length > 0 ? { shapes } : {}), outcomes });
  }

  /** The sender is gone (a server process exited): what it was sent goes with it. */
  forget(from: string | number): void {
    this.senders.delete(from);
  }
}
