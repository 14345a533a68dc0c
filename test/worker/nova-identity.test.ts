// Nova events with the service's Keystone identity inside workerd (docs/keystone.md,
// Events to Nova): the Worker's boot pieces (bindings -> config, makeDeps) in keystone
// mode without NOVA_URL/NOVA_TOKEN find Nova's `compute` endpoint in the
// catalog of the service's token and deliver an event there with that token,
// over workerd's fetch. The fake Keystone (fake-keystone-setup.ts) issues the
// token and catalog; the fake Nova (fake-nova-setup.ts) refuses each event's
// first attempt with 503, so the retry path runs too. The real Keystone with
// expiring and revoked tokens is test/keystone/nova-events.test.ts (Node).
import { createClient } from '@libsql/client/web';
import { describe, expect, inject, it } from 'vitest';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { sendNovaEvents } from '../../src/cyborg/nova-events.js';
import { createDataStore } from '../../src/db/client.js';
import { consoleLogger } from '../../src/deps.js';
import { environmentFromBindings } from '../../src/entry/worker.js';
import { fakeKeystoneEnv } from '../helpers/fake-keystone.js';

const keystoneUrl = inject('keystoneUrl');
const novaUrl = inject('novaUrl');
const control = new URL(keystoneUrl).origin;

describe('Nova events with a Keystone identity in workerd', () => {
  it("delivers to the catalog's compute endpoint with the service's token", async () => {
    await fetch(`${control}/__catalog`, {
      method: 'PUT',
      body: JSON.stringify([
        {
          type: 'compute',
          endpoints: [
            { interface: 'public', region_id: 'RegionOne', url: 'http://127.0.0.1:9/nowhere' },
            { interface: 'internal', region_id: 'RegionOne', url: `${novaUrl}/v2.1` },
          ],
        },
      ]),
    });
    const config = loadConfig(
      environmentFromBindings({ PLACEMENT_DB_URL: inject('sqldUrl'), LOG_LEVEL: 'silent', ...fakeKeystoneEnv(keystoneUrl) }),
    );
    expect(config.NOVA_URL).toBeUndefined();
    const deps = makeDeps(
      createDataStore(createClient({ url: config.PLACEMENT_DB_URL, concurrency: Number.MAX_SAFE_INTEGER })),
      config,
      consoleLogger('silent'),
    );
    const access = await deps.nova.access();
    expect(access?.url).toBe(`${novaUrl}/v2.1`);
    expect(access?.token).toMatch(/^svc-\d+$/);

    const instance = crypto.randomUUID();
    const payload = { instanceUuid: instance, events: [{ arqUuid: crypto.randomUUID(), status: 'completed' as const }] };
    const http = { timeoutMs: 10_000, fetch: deps.novaFetch };
    // The fake Nova refuses every event's first attempt: not delivered, so the outbox retries it.
    expect(await sendNovaEvents(deps.nova, http, payload)).toEqual({ delivered: false, error: 'nova answered 503: try later' });
    expect(await sendNovaEvents(deps.nova, http, payload)).toEqual({ delivered: true });
    const calls = (await (await fetch(`${novaUrl}/__calls`)).json()) as { server_uuid: string; token: string }[];
    expect(calls.filter((c) => c.server_uuid === instance).map((c) => c.token)).toEqual([access?.token]);
  });
});
