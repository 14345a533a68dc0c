// A minimal Placement API client for the bench: noauth2-style token header,
// a microversion per call, errors as exceptions, and a per-request timeout
// (a service that takes minutes to answer is recorded as a timeout, not waited on).

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
