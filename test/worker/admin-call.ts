// One request to the Worker under test (its default export inside workerd),
// as admin at the latest microversion unless told otherwise, with a JSON body
// when one is given.
import { exports } from 'cloudflare:workers';

export const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

export interface CallOptions {
  /** The placement microversion (default latest). */
  version?: string;
  /** The x-auth-token (default admin). */
  token?: string;
  headers?: Record<string, string>;
}

export function adminCall(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = {
    'x-auth-token': options.token ?? 'admin',
    accept: 'application/json',
    'openstack-api-version': `placement ${options.version ?? 'latest'}`,
    ...options.headers,
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return worker.fetch(
    new Request(`http://placement.test${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}
