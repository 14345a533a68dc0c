// One admin request to the Worker under test (its default export inside
// workerd), at the latest microversion, with a JSON body when one is given.
import { exports } from 'cloudflare:workers';

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

export function adminCall(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = {
    'x-auth-token': 'admin',
    accept: 'application/json',
    'openstack-api-version': 'placement latest',
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return worker.fetch(
    new Request(`http://placement.test${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}
