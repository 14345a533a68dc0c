// What the Node server's HTTP parser refuses or cannot hand to fetch (TRACE,
// unknown methods, oversized heads, a bad content-length) still gets an answer
// in the API's envelope, against a real `npm start` in token mode.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `head` as is on a fresh connection and reads the response until the server closes or sends it all. */
function raw(server: ServerProcess, head: string): Promise<RawResponse> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [top = '', ...rest] = data.split('\r\n\r\n');
      const [statusLine = '', ...lines] = top.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

const request = (method: string, target: string, headers: Record<string, string> = {}) =>
  `${method} ${target} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
const ADMIN = { 'x-auth-token': 's3cret-admin', 'openstack-api-version': 'placement 1.39' };

let dir: string;
let server: ServerProcess;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'placement-edges-'));
  server = await startServer(`file:${join(dir, 'placement.db')}`, {
    PLACEMENT_AUTH_STRATEGY: 'token',
    PLACEMENT_AUTH_TOKENS: JSON.stringify({ 's3cret-admin': { roles: ['admin'], project_id: 'ops' } }),
    PLACEMENT_REQUEST_TIMEOUT_MS: '1500',
  });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const placementError = (res: RawResponse) =>
  (JSON.parse(res.body) as { errors: { status: number; detail: string; code?: string }[] }).errors[0]!;
const cyborgFault = (res: RawResponse) =>
  JSON.parse((JSON.parse(res.body) as { error_message: string }).error_message) as { faultstring: string };

describe('methods', () => {
  it('answers TRACE and unknown methods with 405 and Allow in the envelope', async () => {
    for (const method of ['TRACE', 'TRACK', 'FOO', 'PROPFIND']) {
      const res = await raw(server, request(method, '/resource_providers', ADMIN));
      expect(res.status, method).toBe(405);
      expect(res.headers.allow).toBe('GET, POST');
      expect(placementError(res)).toMatchObject({
        status: 405,
        code: 'placement.undefined_code',
        detail: expect.stringContaining(`The method ${method} is not allowed`),
      });

      const accel = await raw(server, request(method, '/accelerator/v2/device_profiles', { 'x-auth-token': 's3cret-admin' }));
      expect(accel.status, method).toBe(405);
      expect(accel.headers.allow).toBe('GET, POST, DELETE');
      expect(cyborgFault(accel).faultstring).toBe(`The method ${method} is not allowed for this resource.`);
    }
  });

  it('still authenticates first: an unknown method without a token is 401', async () => {
    const res = await raw(server, request('FOO', '/resource_providers'));
    expect(res.status).toBe(401);
    expect(placementError(res).status).toBe(401);
  });
});

describe('oversized heads', () => {
  it('serves URLs up to 64 KiB and answers 414 in the envelope beyond', async () => {
    const ok = await raw(server, request('GET', `/resource_providers?name=${'a'.repeat(20_000)}`, ADMIN));
    expect(ok.status).toBe(200);
    for (const size of [70_000, 200_000]) {
      const res = await raw(server, request('GET', `/resource_providers?name=${'a'.repeat(size)}`, ADMIN));
      expect(res.status, String(size)).toBe(414);
      expect(placementError(res).detail).toContain('longer than 65536 characters');
    }
    // Past the server's 256 KiB head limit the parser stops: still an envelope.
    const huge = await raw(server, request('GET', `/resource_providers?name=${'a'.repeat(300_000)}`, ADMIN));
    expect([414, 431]).toContain(huge.status);
    expect(placementError(huge).status).toBe(huge.status);
    const accel = await raw(
      server,
      request('GET', `/accelerator/v2/device_profiles?name=${'a'.repeat(200_000)}`, { 'x-auth-token': 's3cret-admin' }),
    );
    expect(accel.status).toBe(414);
    expect(cyborgFault(accel).faultstring).toContain('longer than 65536 characters');
  });

  it('answers 431 in the envelope for headers too large', async () => {
    const res = await raw(server, request('GET', '/resource_providers', { ...ADMIN, 'x-padding': 'p'.repeat(300_000) }));
    expect(res.status).toBe(431);
    expect(placementError(res).detail).toContain('headers are too large');
  });

  it('answers whatever else the HTTP parser refuses with 400 in the envelope', async () => {
    const head = 'x-auth-token: s3cret-admin\r\ncontent-type: application/json\r\nconnection: close\r\n';
    const cases = [
      `GET /resource_providers HTTP/1.1\r\nhost: x\r\n${head}x-a: a\x01b\r\n\r\n`,
      `GET /resource providers HTTP/1.1\r\nhost: x\r\n${head}\r\n`,
      `GET /resource_providers HTTP/1.1\nhost: x\nconnection: close\n\n`,
      `POST /resource_providers HTTP/1.1\r\nhost: x\r\n${head}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    ];
    for (const data of cases) {
      const res = await raw(server, data);
      expect(res.status, JSON.stringify(data)).toBe(400);
      expect(placementError(res).detail).toContain('The request is not valid HTTP/1.1: ');
    }
    const accel = await raw(
      server,
      `POST /accelerator/v2/device_profiles HTTP/1.1\r\nhost: x\r\n${head}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    expect(accel.status).toBe(400);
    expect(cyborgFault(accel).faultstring).toBe('The request is not valid HTTP/1.1: Invalid character in chunk size.');
  });

  it('answers a request without Host, or with a target that is no path, with 400 in the envelope', async () => {
    const noHost = await raw(
      server,
      'GET /accelerator/v2/device_profiles HTTP/1.1\r\nx-auth-token: s3cret-admin\r\nconnection: close\r\n\r\n',
    );
    expect(noHost.status).toBe(400);
    expect(cyborgFault(noHost).faultstring).toBe('The request has no Host header; HTTP/1.1 requires one.');
    const star = await raw(server, request('OPTIONS', '*', ADMIN));
    expect(star.status).toBe(400);
    expect(placementError(star).detail).toContain('The request could not be read: Invalid URL');
  });

  it('keeps answering a non-integer content-length in the envelope', async () => {
    const res = await raw(
      server,
      request('POST', '/resource_providers', { ...ADMIN, 'content-type': 'application/json', 'content-length': 'abc' }),
    );
    expect(res.status).toBe(400);
    expect(placementError(res).detail).toContain('content-length header must be an integer');
  });
});

/** Opens a connection, writes `data`, and resolves with the first whole response, leaving the socket open. */
function firstResponse(data: string, socketOut?: (s: Socket) => void): Promise<RawResponse> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(data));
    socketOut?.(socket);
    let got = '';
    socket.setEncoding('latin1');
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      got += chunk;
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine = '', ...lines] = got.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const body = got.slice(end + 4);
      if (Buffer.byteLength(body, 'latin1') < Number(headers['content-length'] ?? 0)) return;
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

describe('bodies', () => {
  it('answers 413 in each envelope from a declared length over the limit, without waiting for the body', async () => {
    const head = (path: string) =>
      `PUT ${path} HTTP/1.1\r\nhost: localhost\r\nx-auth-token: s3cret-admin\r\ncontent-type: application/json\r\n` +
      `openstack-api-version: placement 1.39\r\ncontent-length: ${10 * 1024 * 1024 * 1024}\r\n\r\n{"name": "`;
    const sockets: Socket[] = [];
    try {
      const placement = await firstResponse(head(`/resource_providers/${crypto.randomUUID()}`), (s) => sockets.push(s));
      expect(placement.status).toBe(413);
      expect(placementError(placement).detail).toContain('larger than the limit of 1048576 bytes');
      const accel = await firstResponse(head('/accelerator/v2/device_profiles').replace('PUT', 'POST'), (s) => sockets.push(s));
      expect(accel.status).toBe(413);
      expect(cyborgFault(accel).faultstring).toContain('larger than the limit of 1048576 bytes');
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it('closes a request not sent in full within PLACEMENT_REQUEST_TIMEOUT_MS with 408 in the envelope', async () => {
    const started = Date.now();
    // A head that never ends, and a body that never ends.
    const [head, body] = await Promise.all([
      raw(server, 'GET /resource_providers HTTP/1.1\r\nhost: localhost\r\nx-auth-token: s3cret-admin\r\n'),
      raw(
        server,
        'POST /resource_providers HTTP/1.1\r\nhost: localhost\r\nx-auth-token: s3cret-admin\r\ncontent-type: application/json\r\n' +
          'openstack-api-version: placement 1.39\r\ncontent-length: 100\r\n\r\n{"name": "slow-timeout"',
      ),
    ]);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1_400);
    expect(waited).toBeLessThan(10_000);
    expect(head.status).toBe(408);
    expect(placementError(head).detail).toContain('The request was not received completely in time.');
    // The body's request had reached the service: it is refused as received incompletely, or timed out.
    expect([400, 408]).toContain(body.status);
    const listed = await fetch(`${server.url}/resource_providers?name=slow-timeout`, { headers: ADMIN });
    expect(((await listed.json()) as { resource_providers: unknown[] }).resource_providers).toEqual([]);
  });

  it('serves other requests, reads and writes, while many request bodies arrive slowly', async () => {
    const rp = crypto.randomUUID();
    const created = await fetch(`${server.url}/resource_providers`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `slow-${rp}`, uuid: rp }),
    });
    expect(created.status).toBe(200);
    // Half-sent writes on both APIs: each declares 1000 bytes and sends a few.
    const slow: Socket[] = [];
    const { hostname, port } = new URL(server.url);
    const targets = [
      ['PUT', `/resource_providers/${rp}/inventories`],
      ['PUT', `/allocations/${crypto.randomUUID()}`],
      ['POST', '/reshaper'],
      ['POST', '/accelerator/v2/device_profiles'],
      ['PATCH', '/accelerator/v2/accelerator_requests'],
    ];
    try {
      for (let i = 0; i < 40; i++) {
        const [method, path] = targets[i % targets.length]!;
        const socket = connect(Number(port), hostname);
        socket.on('error', () => {});
        socket.write(
          `${method} ${path} HTTP/1.1\r\nhost: localhost\r\nx-auth-token: s3cret-admin\r\ncontent-type: application/json\r\n` +
            `openstack-api-version: placement 1.39\r\ncontent-length: 1000\r\n\r\n{"resource_provider_generation": 0, `,
        );
        slow.push(socket);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = Date.now();
      const inventory = await fetch(`${server.url}/resource_providers/${rp}/inventories`, {
        method: 'PUT',
        headers: { ...ADMIN, 'content-type': 'application/json' },
        body: JSON.stringify({ resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } }),
      });
      expect(inventory.status).toBe(200);
      const claim = await fetch(`${server.url}/allocations/${crypto.randomUUID()}`, {
        method: 'PUT',
        headers: { ...ADMIN, 'content-type': 'application/json' },
        body: JSON.stringify({
          allocations: { [rp]: { resources: { VCPU: 1 } } },
          project_id: 'p',
          user_id: 'u',
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        }),
      });
      expect(claim.status).toBe(204);
      const profiles = await fetch(`${server.url}/accelerator/v2/device_profiles`, { headers: { 'x-auth-token': 's3cret-admin' } });
      expect(profiles.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const s of slow) s.destroy();
    }
  });
});
