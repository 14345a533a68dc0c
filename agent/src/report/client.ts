// A small Placement HTTP client. `fetch` is injectable so tests can pass an
// in-process app's `app.fetch`. Transport failures and 5xx become
// ServiceUnavailableError, which callers answer with backoff.
import type { MAX_VERSION } from '../../../src/placement/versions.js';
import type { PlacementErrorBody } from './placement-api.js';

export type FetchLike = (input: Request) => Response | Promise<Response>;

/**
 * The version the agent speaks: the server's newest, the one the bodies in
 * placement-api.ts are typed at. Typed as the server's MAX_VERSION (a type-only
 * import, nothing of the service is bundled), so when the server moves on,
 * typecheck fails until someone checks those bodies and moves this too.
 */
export const PLACEMENT_MICROVERSION: typeof MAX_VERSION = '1.39';

export class ServiceUnavailableError extends Error {}

export class PlacementError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    readonly detail: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(`${method} ${path} -> ${status}${code ? ` (${code})` : ''}: ${detail}`);
  }

  get isGenerationConflict(): boolean {
    return (
      this.status === 409 && (this.code === 'placement.concurrent_update' || (this.code === undefined && /generation/i.test(this.detail)))
    );
  }
}

export interface ClientOptions {
  endpoint: string;
  token?: string;
  /** Asked before each request instead of `token` (a Keystone token, renewed before it expires). */
  tokenSource?: () => Promise<string>;
  fetch?: FetchLike;
  microversion?: string;
}

export class PlacementClient {
  private readonly base: string;
  private readonly doFetch: FetchLike;

  constructor(private readonly options: ClientOptions) {
    this.base = options.endpoint.replace(/\/+$/, '');
    this.doFetch = options.fetch ?? ((req) => fetch(req));
  }

  /** `signal`: give the request up (a long poll when the agent stops); it then throws ServiceUnavailableError. */
  async request<T = unknown>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'openstack-api-version': `placement ${this.options.microversion ?? PLACEMENT_MICROVERSION}`,
      'user-agent': 'placement-agent',
    };
    let token = this.options.token;
    if (this.options.tokenSource) {
      try {
        token = await this.options.tokenSource();
      } catch (err) {
        if ((err as Error).name === 'KeystoneUnavailable') throw new ServiceUnavailableError(`Keystone: ${(err as Error).message}`);
        throw err;
      }
    }
    if (token) headers['x-auth-token'] = token;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await this.doFetch(
        new Request(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal }),
      );
    } catch (err) {
      throw new ServiceUnavailableError(`${method} ${path}: ${(err as Error).message}`);
    }
    const text = await response.text();
    let parsed: unknown;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (response.status >= 500) throw new ServiceUnavailableError(`${method} ${path} -> ${response.status}`);
    if (response.status >= 400) {
      // Anything may answer a 4xx (a proxy, too): every field is looked at with care.
      const first = (parsed as Partial<PlacementErrorBody> | undefined)?.errors?.[0];
      throw new PlacementError(response.status, first?.code, first?.detail ?? String(text).slice(0, 300), method, path);
    }
    return { status: response.status, body: parsed as T };
  }
}
