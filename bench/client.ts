// A minimal Placement API client for the bench: noauth2-style token header,
// a microversion per call, errors as exceptions, and a per-request timeout
// (a service that takes minutes to answer is recorded as a timeout, not waited on).
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLAIM_CONSUMER_TYPE, CLAIM_VERSION } from './upstream.js';

export interface RequestOptions {
  body?: unknown;
  version?: string;
  okStatuses?: number[];
  timeoutMs?: number;
}

export class TimeoutError extends Error {}

export class PlacementClient {
  constructor(
    readonly base: string,
    readonly token: string,
    readonly defaultVersion = '1.36',
    readonly timeoutMs = 60_000,
    /** Tests pass an app's own fetch to load without a socket. */
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = {
      'x-auth-token': this.token,
      accept: 'application/json',
      'openstack-api-version': `placement ${opts.version ?? this.defaultVersion}`,
    };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.fetchFn(`${this.base}${path}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(opts.timeoutMs ?? this.timeoutMs),
      });
    } catch (err) {
      if (err instanceof Error && err.name === 'TimeoutError')
        throw new TimeoutError(`${method} ${path}: no answer within ${opts.timeoutMs ?? this.timeoutMs} ms`);
      throw err;
    }
    const ok = opts.okStatuses ? opts.okStatuses.includes(res.status) : res.status < 400;
    if (!ok) throw new Error(`${method} ${this.base}${path} -> ${res.status}: ${(await res.text()).slice(0, 500)}`);
    return res;
  }

  /**
   * A timed GET: milliseconds from sending the request to the answer's last
   * byte, as perfload-runner.sh's `time curl ... > /dev/null` measures it.
   * node:http on kept-alive connections, so the timer holds the service's
   * work and the transfer, not a heavy client's (fetch's stream machinery
   * and JSON parsing cost ~5-10 ms on a 714 KiB answer on this VM, and at
   * concurrency 10 that CPU is taken from the service under test).
   */
  timedGet(path: string, version: string): Promise<{ ms: number; body: Buffer }> {
    const url = new URL(`${this.base}${path}`);
    const https = url.protocol === 'https:';
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(
        url,
        {
          agent: https ? keepAliveHttps : keepAlive,
          headers: { 'x-auth-token': this.token, accept: 'application/json', 'openstack-api-version': `placement ${version}` },
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const ms = performance.now() - started;
            const body = Buffer.concat(chunks);
            if ((res.statusCode ?? 0) >= 400) reject(new Error(`GET ${url} -> ${res.statusCode}: ${body.toString('utf8', 0, 500)}`));
            else resolve({ ms, body });
          });
        },
      );
      req.on('timeout', () => req.destroy(new TimeoutError(`GET ${path}: no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });
const keepAliveHttps = new HttpsAgent({ keepAlive: true, maxSockets: 64 });

/** Closes the timed GETs' idle connections (so the bench process can exit). */
export function closeTimedConnections(): void {
  keepAlive.destroy();
  keepAliveHttps.destroy();
}

/** Runs task(0..count-1) with at most `width` in flight. */
export async function pool<T>(count: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}

/**
 * One claim cycle as perfload-nested-runner.sh's write_allocation: the first
 * of `limit=5` candidates for `query`, PUT for a new consumer; its uuid.
 * `conflictOk`: a 409 (another client took the room first) gives null
 * instead of an error, for benches that count it and try again.
 */
export async function claimFirstCandidate(api: PlacementClient, query: string, version: string): Promise<string>;
export async function claimFirstCandidate(
  api: PlacementClient,
  query: string,
  version: string,
  options: { conflictOk: true },
): Promise<string | null>;
export async function claimFirstCandidate(
  api: PlacementClient,
  query: string,
  version: string,
  { conflictOk = false }: { conflictOk?: boolean } = {},
): Promise<string | null> {
  const res = await api.request('GET', `/allocation_candidates?${query}&limit=5`, { version });
  const body = (await res.json()) as { allocation_requests: { allocations: unknown }[] };
  const first = body.allocation_requests[0];
  if (!first) throw new Error('claim cycle: no candidates left');
  const consumer = crypto.randomUUID();
  const put = await api.request('PUT', `/allocations/${consumer}`, {
    version: CLAIM_VERSION,
    ...(conflictOk ? { okStatuses: [204, 409] } : {}),
    body: {
      allocations: first.allocations,
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
      consumer_generation: null,
      consumer_type: CLAIM_CONSUMER_TYPE,
    },
  });
  await put.arrayBuffer();
  return put.status === 409 ? null : consumer;
}

/**
 * One GET timed by curl, as perfload-runner.sh times its two requests: a
 * process of its own and a new connection each (so with several server
 * processes each request may land on another one), to the last byte; curl's
 * own `time_total`, so the bench's client is not in the figure.
 */
export async function curlGet(api: PlacementClient, query: string, version: string): Promise<{ ms: number; candidates: number }> {
  const out = join(tmpdir(), `placement-bench-curl-${process.pid}.json`);
  const run = await new Promise<{ status: number | null; stdout: string }>((resolve, reject) => {
    const child = spawn(
      'curl',
      [
        '-s',
        '-o',
        out,
        '-w',
        '%{http_code} %{time_total}',
        '-H',
        `x-auth-token: ${api.token}`,
        '-H',
        'accept: application/json',
        '-H',
        `openstack-api-version: placement ${version}`,
        '--max-time',
        String(api.timeoutMs / 1000),
        `${api.base}/allocation_candidates?${query}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (status) => resolve({ status, stdout }));
  });
  const [code, seconds] = run.stdout.trim().split(' ');
  const body = readFileSync(out, 'utf8');
  rmSync(out, { force: true });
  if (run.status !== 0 || code !== '200') throw new Error(`curl ${query}: exit ${run.status}, HTTP ${code}: ${body.slice(0, 300)}`);
  return { ms: Number(seconds) * 1000, candidates: (JSON.parse(body) as { allocation_requests: unknown[] }).allocation_requests.length };
}
