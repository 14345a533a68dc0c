// Both APIs are served by one HTTP kit (src/http/kit.ts) and a profile each;
// these are the exact bytes each API answers at the kit's edges, so a change
// to the shared code cannot move either API's wire format.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { Microversion } from '../../src/microversion.js';
import { MV } from '../../src/placement/versions.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

const ADMIN = { 'x-auth-token': 'admin' };
const get = (path: string, headers: Record<string, string> = ADMIN, method = 'GET') => t.app.request(path, { method, headers });

/** Status, the headers the kit sets, and the body with the request id named. */
async function answer(res: Response) {
  const requestId = res.headers.get('x-openstack-request-id') ?? '';
  const names = ['allow', 'vary', 'openstack-api-version', 'openstack-api-minimum-version', 'openstack-api-maximum-version'];
  const headers = Object.fromEntries(names.filter((n) => res.headers.has(n)).map((n) => [n, res.headers.get(n)]));
  return { status: res.status, headers, body: (await res.text()).replaceAll(requestId, 'REQ') };
}

const placementBody = (status: number, title: string, explanation: string, message: string, code?: string) =>
  JSON.stringify({
    errors: [
      {
        status,
        title,
        detail: `${explanation}\n\n ${message}  `,
        request_id: 'REQ',
        ...(code ? { code } : {}),
      },
    ],
  });
const cyborgBody = (message: string) =>
  JSON.stringify({ error_message: JSON.stringify({ faultcode: 'Client', faultstring: message, debuginfo: null }) });
const CYBORG_RANGE = { 'openstack-api-minimum-version': '2.0', 'openstack-api-maximum-version': '2.3', vary: 'OpenStack-API-Version' };

describe('405 with Allow', () => {
  it('placement', async () => {
    expect(await answer(await get('/resource_providers', { ...ADMIN, 'openstack-api-version': 'placement 1.39' }, 'PATCH'))).toEqual({
      status: 405,
      headers: { allow: 'GET, POST', vary: 'openstack-api-version', 'openstack-api-version': 'placement 1.39' },
      body: placementBody(
        405,
        'Method Not Allowed',
        'The method specified is not allowed for this resource.',
        'The method PATCH is not allowed for this resource.',
        'placement.undefined_code',
      ),
    });
  });

  it('accelerator', async () => {
    expect(await answer(await get('/accelerator/v2/device_profiles', ADMIN, 'PATCH'))).toEqual({
      status: 405,
      headers: { allow: 'GET, POST, DELETE', 'openstack-api-version': 'accelerator 2.0', ...CYBORG_RANGE },
      body: cyborgBody('The method PATCH is not allowed for this resource.'),
    });
  });
});

describe('a version the API cannot serve', () => {
  it('placement: 400 for bad syntax, 406 with min/max in the body, no version headers', async () => {
    const syntax = await answer(await get('/', { 'openstack-api-version': 'placement 1.x' }));
    expect(syntax).toEqual({
      status: 400,
      headers: {},
      body: placementBody(
        400,
        'Bad Request',
        'The server could not comply with the request since it is either malformed or otherwise incorrect.',
        'Invalid microversion: invalid version string: 1.x',
      ),
    });
    const range = await answer(await get('/', { 'openstack-api-version': 'placement 1.40' }));
    expect(range.status).toBe(406);
    expect(range.headers).toEqual({});
    expect(JSON.parse(range.body)).toEqual({
      errors: [
        {
          status: 406,
          title: 'Not Acceptable',
          detail:
            'The resource could not be generated that was acceptable to your browser (content of type application/json.\n\n Invalid microversion: Unacceptable version header: 1.40  ',
          request_id: 'REQ',
          max_version: '1.39',
          min_version: '1.0',
        },
      ],
    });
  });

  it('accelerator: 406 for any bad value, with its range in headers', async () => {
    for (const value of ['accelerator 2.9', 'accelerator x']) {
      const asked = value.split(' ')[1];
      expect(await answer(await get('/accelerator/v2/device_profiles', { ...ADMIN, 'openstack-api-version': value }))).toEqual({
        status: 406,
        headers: CYBORG_RANGE,
        body: cyborgBody(`Invalid value for OpenStack-API-Version header: ${asked}. Version must be between 2.0 and 2.3.`),
      });
    }
  });
});

describe('policy', () => {
  it("each API's words for a refusal", async () => {
    const member = { 'x-auth-token': 'user1:p1', 'openstack-api-version': 'placement 1.39' };
    expect((await answer(await get('/resource_providers', member))).body).toBe(
      placementBody(
        403,
        'Forbidden',
        'Access was denied to this resource.',
        'Policy does not allow placement:resource_providers:list to be performed.',
        'placement.undefined_code',
      ),
    );
    expect((await answer(await get('/accelerator/v2/deployables', member))).body).toBe(
      cyborgBody("Policy doesn't allow cyborg:deployable:get_all to be performed."),
    );
  });

  it('placement refuses a system-scoped token (scope always enforced); the accelerator API does not check scope', async () => {
    const system = { ...ADMIN, 'openstack-system-scope': 'all' };
    expect((await get('/resource_providers', system)).status).toBe(403);
    expect((await get('/accelerator/v2/deployables', system)).status).toBe(200);
  });
});

describe('URL checks', () => {
  it('414 and control characters, each in its envelope', async () => {
    const long = 'x'.repeat(70_000);
    expect((await answer(await get(`/resource_providers?name=${long}`))).body).toBe(
      placementBody(
        414,
        'Request-URI Too Long',
        'The request URI was too long for this server.',
        'The request URL is longer than 65536 characters.',
      ),
    );
    expect((await answer(await get(`/accelerator/v2/device_profiles?name=${long}`))).body).toBe(
      cyborgBody('The request URL is longer than 65536 characters.'),
    );
    expect((await answer(await get('/accelerator/v2/device_profiles?name=a%1fb'))).body).toBe(
      cyborgBody('The request URL contains the control character U+001F (%1f); control characters are not allowed.'),
    );
  });
});

describe('not found', () => {
  it('in each envelope', async () => {
    expect(await answer(await get('/nope', { ...ADMIN, 'openstack-api-version': 'placement 1.22' }))).toEqual({
      status: 404,
      headers: { vary: 'openstack-api-version', 'openstack-api-version': 'placement 1.22' },
      body: placementBody(404, 'Not Found', 'The resource could not be found.', 'The resource could not be found.'),
    });
    expect((await answer(await get('/accelerator/v2/nope'))).body).toBe(cyborgBody('The resource could not be found.'));
  });
});

describe("a route's `since`", () => {
  it('every operation that states one answers 404 (or its 405) one microversion below it, before its handler runs', async () => {
    const { allOperations } = await import('../../src/openapi/operations.js');
    const gated = allOperations().filter((op) => op.since !== undefined);
    expect(gated.length).toBeGreaterThan(20);
    for (const op of gated) {
      const [major, minor] = op.since!.split('.').map(Number);
      const below = `${major}.${minor! - 1}`;
      const path = op.path.replace(/:[a-z_]+/g, (name) => (name === ':uuid' ? crypto.randomUUID() : 'CUSTOM_GATED'));
      const method = op.method.toUpperCase();
      const got = await answer(await get(path, { ...ADMIN, 'openstack-api-version': `placement ${below}` }, method));
      const headers = { vary: 'openstack-api-version', 'openstack-api-version': `placement ${below}` };
      const code = Microversion.parse(below)!.atLeast(MV.ERROR_CODES) ? 'placement.undefined_code' : undefined;
      const body =
        op.belowSince === 405
          ? placementBody(
              405,
              'Method Not Allowed',
              'The method specified is not allowed for this resource.',
              `The method ${method} is not allowed for this resource.`,
              code,
            )
          : placementBody(404, 'Not Found', 'The resource could not be found.', 'The resource could not be found.', code);
      expect(got, `${method} ${op.path} at ${below}`).toEqual({ status: op.belowSince ?? 404, headers, body });
    }
  });
});
