// Keystone that accepts connections and answers nothing (a hung Keystone, a
// path that drops packets): token validation and the service's own sign-in
// end within PLACEMENT_KEYSTONE_TIMEOUT_MS, so a request with a token is
// answered (503: Keystone cannot say) instead of waiting, and /readyz answers
// within a second naming Keystone.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keystoneEnv } from '../helpers/keystone-credentials.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const TIMEOUT_MS = 700;
/** "A little": the request's own work and a loaded machine's scheduling, beyond the time limit. */
const SLACK_MS = 1_500;

describe('Keystone that accepts and answers nothing', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let app: TestApp;

  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    if (!address || typeof address === 'string') throw new Error('no port');
    app = await makeTestApp(keystoneEnv(`http://127.0.0.1:${address.port}/v3`, { PLACEMENT_KEYSTONE_TIMEOUT_MS: String(TIMEOUT_MS) }));
  });

  afterAll(() => {
    app?.close();
    for (const socket of sockets) socket.destroy();
    silent?.close();
  });

  it('a request with a token ends within PLACEMENT_KEYSTONE_TIMEOUT_MS (sign-in, then validation): 503, Keystone unavailable', async () => {
    const started = performance.now();
    const res = await app.app.request('/resource_providers', {
      headers: { 'x-auth-token': 'a-token-keystone-would-know', 'openstack-api-version': 'placement latest' },
    });
    const ms = performance.now() - started;
    expect(res.status).toBe(503);
    expect(sockets.size).toBeGreaterThan(0); // it did reach the silent Keystone
    // The sign-in's time limit, and at most once more for the validation.
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(2 * TIMEOUT_MS + SLACK_MS);
  });

  it('/readyz answers within a second, naming Keystone', async () => {
    const started = performance.now();
    const res = await app.app.request('/readyz');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { reason: string }).reason).toMatch(/Keystone/);
  });
});
