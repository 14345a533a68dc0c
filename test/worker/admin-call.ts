// One request to the Worker under test (its default export inside workerd),
// as admin at the latest microversion unless told otherwise, with a JSON body
// when one is given.
import { exports } from 'cloudflare:workers';
import { expect } from 'vitest';

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

/** A name part no other worker file uses: the database is shared by them all. */
export const uniqueSuffix = () => crypto.randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase();

/** A resource class of its own (`CUSTOM_<tag>_...`) and a new host with `total` of it, each step checked. */
export async function hostOfOwnClass(tag: string, total: number): Promise<{ rc: string; host: string }> {
  const rc = `CUSTOM_${tag}_${uniqueSuffix()}`;
  expect((await adminCall('PUT', `/resource_classes/${rc}`)).status).toBeLessThan(300);
  const host = crypto.randomUUID();
  expect((await adminCall('POST', '/resource_providers', { name: `${tag.toLowerCase()}-${host}`, uuid: host })).status).toBe(200);
  expect(
    (
      await adminCall('PUT', `/resource_providers/${host}/inventories`, {
        resource_provider_generation: 0,
        inventories: { [rc]: { total } },
      })
    ).status,
  ).toBe(200);
  return { rc, host };
}

/** A lasting claim as Nova writes one: `resources` of `rc` on `host` for `owner` (project and user alike), `query` after the path. */
export const claimOfClass = (host: string, rc: string, resources: number, owner: string, consumer: string, query = '') =>
  adminCall('PUT', `/allocations/${consumer}${query}`, {
    allocations: { [host]: { resources: { [rc]: resources } } },
    consumer_generation: null,
    project_id: owner,
    user_id: owner,
    consumer_type: 'INSTANCE',
  });
