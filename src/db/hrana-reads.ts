// The Worker's read batches sent to a libSQL server as one hrana v3 pipeline
// request (JSON over HTTP), the same request @libsql/client sends for
// `client.batch(statements, 'read')`: BEGIN TRANSACTION READONLY, each
// statement run only if the one before it succeeded inside the transaction,
// COMMIT, ROLLBACK if the COMMIT did not succeed; then the stream closed. One
// snapshot, one round trip.
//
// Why not the client: in workerd its per-batch machinery (a SQL cache made
// and filled anew for every batch, a stream object, a request queue, its own
// JSON writer, and a decoder that checks every field and builds each row with
// one defineProperty per value) cost a warm candidates answer more CPU than
// the database work it carried. Here the request is JSON.stringify'd and the
// answer read with the runtime's JSON parser, rows built as db/node-batches.ts
// builds them. Results and errors keep the client's shapes (ResultSet, Row,
// LibsqlError, LibsqlBatchError with the statement's index).
//
// Only reads go this way; writes stay with the client. A server without the
// v3 pipeline (404), or a URL this does not speak (ws:, wss:), falls back to
// the client for good.
import { type Client, type InStatement, type InValue, LibsqlBatchError, LibsqlError, type ResultSet, type Row } from '@libsql/client';
import { base64Of, type BatchConnection, resultSet, rowFactory } from './client.js';

type HranaValue =
  | { type: 'null' }
  | { type: 'integer'; value: string }
  | { type: 'float'; value: number }
  | { type: 'text'; value: string }
  | { type: 'blob'; base64: string };

interface HranaStmtResult {
  cols: { name?: string | null; decltype?: string | null }[];
  rows: HranaValue[][];
  affected_row_count: number;
  last_insert_rowid?: string | null;
}

interface HranaError {
  message: string;
  code?: string | null;
}

type HranaResult = { type: 'ok'; response: { type: string; result?: BatchResult } } | { type: 'error'; error: HranaError };

interface BatchResult {
  step_results: (HranaStmtResult | null)[];
  step_errors: (HranaError | null)[];
}

/** The pipeline endpoint of a libSQL server URL, or null for a URL this does not speak (then the client reads). */
export function pipelineUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const tls = parsed.searchParams.get('tls');
  const scheme = { 'libsql:': tls === '0' ? 'http:' : 'https:', 'https:': 'https:', 'http:': 'http:' }[parsed.protocol];
  if (!scheme || parsed.username || parsed.password) return null;
  // The query holds the client's options, not the server's: only those this reader honours too.
  for (const key of parsed.searchParams.keys()) if (key !== 'tls' && key !== 'authToken') return null;
  const path = parsed.pathname.endsWith('/') ? parsed.pathname : `${parsed.pathname}/`;
  return `${scheme}//${parsed.host}${path}v3/pipeline`;
}

/**
 * Read batches over `url`'s v3 pipeline; writes (and every read, once the
 * server turned out not to have it) through `client`.
 */
export function hranaReads(
  client: Client,
  url: string,
  authToken: string | undefined,
  fetchFn: typeof fetch = (input, init) => fetch(input, init),
): BatchConnection {
  let endpoint = pipelineUrl(url);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  // As the client: the token given, else the URL's authToken.
  const token = authToken || (endpoint ? new URL(url).searchParams.get('authToken') : null);
  if (token) headers.authorization = `Bearer ${token}`;

  const readBatch = async (statements: InStatement[]): Promise<ResultSet[]> => {
    if (endpoint === null) return client.batch(statements, 'read');
    const body = JSON.stringify({ baton: null, requests: [{ type: 'batch', batch: { steps: readSteps(statements) } }, { type: 'close' }] });
    const response = await fetchFn(endpoint, { method: 'POST', headers, body });
    if (response.status === 404) {
      // No v3 pipeline here: the client negotiates what the server has.
      await response.body?.cancel();
      endpoint = null;
      return client.batch(statements, 'read');
    }
    if (!response.ok) {
      const text = await response.text();
      throw new LibsqlError(`Server returned HTTP status ${response.status}${text ? `: ${text.slice(0, 500)}` : ''}`, 'SERVER_ERROR');
    }
    const answer = (await response.json()) as { results: HranaResult[] };
    const first = answer.results[0];
    if (!first || first.type === 'error') throw responseError(first?.error ?? { message: 'The server sent no result for the batch' });
    return resultsOf(first.response.result!, statements.length);
  };

  return {
    readBatch,
    writeBatch: (statements) => client.batch(statements, 'write'),
    close: () => {},
  };
}

/** The steps of a read batch, as @libsql/client's executeHranaBatch builds them at protocol version 3. */
function readSteps(statements: InStatement[]): object[] {
  const inTransaction = (step: number) => ({
    type: 'and',
    conds: [
      { type: 'ok', step },
      { type: 'not', cond: { type: 'is_autocommit' } },
    ],
  });
  const steps: object[] = [{ stmt: { sql: 'BEGIN TRANSACTION READONLY', want_rows: false } }];
  for (const statement of statements) steps.push({ condition: inTransaction(steps.length - 1), stmt: stmtOf(statement) });
  const commit = steps.length;
  steps.push({ condition: inTransaction(commit - 1), stmt: { sql: 'COMMIT', want_rows: false } });
  steps.push({ condition: { type: 'not', cond: { type: 'ok', step: commit } }, stmt: { sql: 'ROLLBACK', want_rows: false } });
  return steps;
}

function stmtOf(statement: InStatement): object {
  if (typeof statement === 'string') return { sql: statement, want_rows: true };
  const { sql, args } = statement;
  if (args === undefined) return { sql, want_rows: true };
  if (Array.isArray(args)) return { sql, args: args.map(hranaValue), want_rows: true };
  return { sql, named_args: Object.entries(args).map(([name, value]) => ({ name, value: hranaValue(value) })), want_rows: true };
}

/** An argument as the client sends it (numbers as floats, booleans as integers, dates as their time). */
function hranaValue(value: InValue): HranaValue {
  if (value === null) return { type: 'null' };
  if (typeof value === 'string') return { type: 'text', value };
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('Only finite numbers (not Infinity or NaN) can be passed as arguments');
    return { type: 'float', value };
  }
  if (typeof value === 'bigint') return { type: 'integer', value: String(value) };
  if (typeof value === 'boolean') return { type: 'integer', value: value ? '1' : '0' };
  if (value instanceof Date) return { type: 'float', value: value.valueOf() };
  if (value instanceof ArrayBuffer) return { type: 'blob', base64: base64Of(new Uint8Array(value)) };
  if (value instanceof Uint8Array) return { type: 'blob', base64: base64Of(value) };
  throw new TypeError('Unsupported type of value');
}

/** Each statement's ResultSet, or the client's error for the first step that failed. */
function resultsOf(batch: BatchResult, count: number): ResultSet[] {
  const beginError = batch.step_errors[0];
  if (beginError) throw responseError(beginError);
  const results: ResultSet[] = [];
  for (let i = 0; i < count; i += 1) {
    const error = batch.step_errors[i + 1];
    // The client's wording: its LibsqlError's message (code-prefixed) wrapped once more.
    if (error) throw new LibsqlBatchError(responseError(error).message, i, error.code ?? 'UNKNOWN');
    const result = batch.step_results[i + 1];
    if (!result)
      throw new LibsqlBatchError(
        'Statement in a batch was not executed, probably because the transaction has been rolled back',
        i,
        'TRANSACTION_CLOSED',
      );
    results.push(resultSetOf(result));
  }
  const commitError = batch.step_errors[count + 1];
  if (commitError) throw responseError(commitError);
  return results;
}

/** Row makers by column names: the same few statements come back with every request. */
const rowMakers = new Map<string, (values: unknown[]) => Row>();

function rowMakerOf(columns: string[]): (values: unknown[]) => Row {
  const key = columns.join('\u0000');
  let make = rowMakers.get(key);
  if (!make) {
    if (rowMakers.size >= 256) rowMakers.delete(rowMakers.keys().next().value!);
    rowMakers.set(key, (make = rowFactory(columns)));
  }
  return make;
}

function resultSetOf(result: HranaStmtResult): ResultSet {
  const columns = result.cols.map((c) => c.name ?? '');
  const makeRow = rowMakerOf(columns);
  const rows = result.rows.map((values) => makeRow(values.map(fromHrana)));
  const rowid = result.last_insert_rowid;
  return resultSet(
    columns,
    result.cols.map((c) => c.decltype ?? ''),
    rows,
    result.affected_row_count,
    rowid === null || rowid === undefined ? undefined : BigInt(rowid),
  );
}

/** A value as the client returns it with intMode 'number': integers as numbers (a RangeError when unsafe), blobs as ArrayBuffers. */
function fromHrana(value: HranaValue): unknown {
  switch (value.type) {
    case 'null':
      return null;
    case 'integer': {
      const n = Number(value.value);
      if (!Number.isSafeInteger(n))
        throw new RangeError('Received integer which is too large to be safely represented as a JavaScript number');
      return n;
    }
    case 'float':
    case 'text':
      return value.value;
    case 'blob': {
      const binary = atob(value.base64);
      const bytes = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
      return bytes.buffer;
    }
  }
}

function responseError(error: HranaError): LibsqlError {
  return new LibsqlError(error.message, error.code ?? 'UNKNOWN');
}
