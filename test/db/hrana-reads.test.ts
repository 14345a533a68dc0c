// The Worker's read batches (src/db/hrana-reads.ts: one hrana v3 pipeline
// request, not @libsql/client's batch) answer exactly as the client does on
// a real libSQL server: rows by name, by index and enumerated, column types,
// every kind of value and argument; a failing statement gives the client's
// error with its index; a server without the v3 pipeline is read through the
// client. Writes stay with the client.
import { createClient, type Client, type InStatement, LibsqlBatchError } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchConnection } from '../../src/db/client.js';
import { hranaReads, pipelineUrl } from '../../src/db/hrana-reads.js';
import { describeWithPart } from '../helpers/parts.js';
import { observable } from '../helpers/result-sets.js';
import { SQLD_MISSING, type SqldServer, startSqld } from '../helpers/sqld.js';

describeWithPart(SQLD_MISSING, 'read batches over the hrana v3 pipeline', () => {
  let sqld: SqldServer;
  let client: Client;
  let reads: BatchConnection;
  const requests: string[] = [];
  beforeAll(async () => {
    sqld = await startSqld();
    client = createClient({ url: sqld.url });
    await client.batch(
      [
        'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, amount INTEGER, ratio REAL, data BLOB)',
        "INSERT INTO t (name, amount, ratio, data) VALUES ('a', 1, 1.5, x'0102'), ('b', NULL, 16.0, NULL)",
      ],
      'write',
    );
    reads = hranaReads(client, sqld.url, undefined, (input, init) => {
      requests.push(String(input));
      return fetch(input, init);
    });
  }, 60_000);
  afterAll(() => {
    client?.close();
    sqld?.stop();
  });

  it('answers as client.batch(statements, "read") does, in one request to the v3 pipeline', async () => {
    const statements: InStatement[] = [
      { sql: 'SELECT id, name, amount, ratio, data FROM t WHERE id IN (?, ?) ORDER BY id', args: [1, 2] },
      'SELECT count(*), max(amount) AS top, name AS name, name AS name FROM t',
      { sql: 'SELECT 1 AS "0", 2 AS length', args: [] },
      {
        sql: 'SELECT :n + 1 AS next, :s AS s, :b AS b, :z AS z, :big AS big',
        args: { n: 41, s: 'x"y', b: true, z: null, big: 9007199254740991n },
      },
      { sql: 'SELECT name FROM t WHERE data = ?', args: [new Uint8Array([1, 2])] },
      "SELECT json_object('k', 1)",
      'SELECT * FROM t WHERE 0',
    ];
    requests.length = 0;
    const mine = await reads.readBatch(statements);
    expect(requests).toEqual([pipelineUrl(sqld.url)]);
    const theirs = await client.batch(statements, 'read');
    expect(mine.map(observable)).toEqual(theirs.map(observable));
  });

  it("throws the client's error, with the failing statement's index", async () => {
    const error = await reads.readBatch(['SELECT 1', 'SELECT nope FROM t', 'SELECT 2']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LibsqlBatchError);
    expect((error as LibsqlBatchError).statementIndex).toBe(1);
    expect((error as Error).message).toMatch(/no such column: nope/);
    // As the client's: the error of the failing statement, not of the COMMIT or the ROLLBACK after it.
    const theirs = await client.batch(['SELECT 1', 'SELECT nope FROM t', 'SELECT 2'], 'read').catch((e: unknown) => e);
    expect([(error as LibsqlBatchError).code, (error as Error).message]).toEqual([
      (theirs as LibsqlBatchError).code,
      (theirs as Error).message,
    ]);
  });

  it('reads through the client where the server has no v3 pipeline (a 404), and from then on', async () => {
    const asked: string[] = [];
    const noPipeline = hranaReads(client, sqld.url, undefined, async (input) => {
      asked.push(String(input));
      return new Response('not found', { status: 404 });
    });
    const [rows] = await noPipeline.readBatch(['SELECT name FROM t ORDER BY id']);
    expect(rows!.rows.map((r) => r.name)).toEqual(['a', 'b']);
    await noPipeline.readBatch(['SELECT 1']);
    expect(asked).toHaveLength(1);
  });
});

describe('the pipeline URL of a libSQL server URL', () => {
  it('speaks http(s) and libsql (https, or http with tls=0), not websockets', () => {
    expect(pipelineUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080/v3/pipeline');
    expect(pipelineUrl('libsql://db-org.turso.io?authToken=x')).toBe('https://db-org.turso.io/v3/pipeline');
    expect(pipelineUrl('libsql://127.0.0.1:8080?tls=0')).toBe('http://127.0.0.1:8080/v3/pipeline');
    expect(pipelineUrl('wss://db-org.turso.io')).toBeNull();
    // A client option this reader does not honour: the client reads.
    expect(pipelineUrl('libsql://db-org.turso.io?intMode=bigint')).toBeNull();
  });

  it("sends the token given, else the URL's authToken, as the client does", async () => {
    const sent: (string | null)[] = [];
    const answer = () =>
      new Response(
        JSON.stringify({
          results: [
            {
              type: 'ok',
              response: {
                type: 'batch',
                result: {
                  step_results: [{}, { cols: [], rows: [], affected_row_count: 0 }, {}, null],
                  step_errors: [null, null, null, null],
                },
              },
            },
          ],
        }),
      );
    const recording: typeof fetch = async (_input, init) => {
      sent.push(new Headers(init?.headers).get('authorization'));
      return answer();
    };
    const unused = {} as Client;
    await hranaReads(unused, 'libsql://db.example?authToken=from-url', undefined, recording).readBatch(['SELECT 1']);
    await hranaReads(unused, 'libsql://db.example?authToken=from-url', 'given', recording).readBatch(['SELECT 1']);
    await hranaReads(unused, 'http://127.0.0.1:1', undefined, recording).readBatch(['SELECT 1']);
    expect(sent).toEqual(['Bearer from-url', 'Bearer given', null]);
  });
});
