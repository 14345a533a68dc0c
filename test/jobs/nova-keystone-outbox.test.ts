// Nova events with a Keystone identity through the outbox (docs/keystone.md):
// when no token or no endpoint can be had (Keystone down, the Nova user's
// password refused), the attempt fails like Nova down and the event waits in
// the outbox, retried with backoff and dead-lettered with the reason, never
// dropped. A fake Keystone (counts and faults a real one cannot give; the real
// one is test/keystone/nova-events.test.ts) and a Nova behind deps.novaFetch.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listOutbox } from '../../src/jobs/outbox.js';
import { drainOutbox } from '../../src/jobs/sweeps.js';
import { bindBody, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';
import { FakeKeystone } from '../helpers/fake-keystone.js';
import { novaIdentity, passwordCredentials, SERVICE_USER } from '../helpers/keystone-credentials.js';

const NOVA = 'http://nova.test/v2.1';

describe('Nova events with a Keystone identity, through the outbox', () => {
  let t: CyborgTestApp;
  let ks: FakeKeystone;
  const delivered: { instance: string; token: string | null }[] = [];

  const useIdentity = (password: string) => {
    t.deps.nova = novaIdentity('http://keystone.test/v3', { credentials: passwordCredentials(SERVICE_USER, password) }, ks.fetch, () =>
      t.deps.clock().getTime(),
    );
  };

  beforeEach(async () => {
    t = await makeCyborgApp({ NOVA_EVENT_MAX_ATTEMPTS: '3', NOVA_EVENT_BACKOFF_MS: '1000' });
    ks = new FakeKeystone(3_600_000, () => t.deps.clock().getTime());
    ks.catalog = [{ type: 'compute', endpoints: [{ interface: 'internal', region_id: 'RegionOne', url: NOVA }] }];
    delivered.length = 0;
    t.deps.novaFetch = async (url, init) => {
      expect(String(url)).toBe(`${NOVA}/os-server-external-events`);
      const body = JSON.parse(String(init?.body)) as { events: { server_uuid: string }[] };
      const token = new Headers(init?.headers).get('x-auth-token');
      delivered.push({ instance: body.events[0]!.server_uuid, token });
      return Response.json({ events: body.events.map((e) => ({ ...e, code: 200 })) });
    };
    await seedHost(t, 4);
    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
  });
  afterEach(() => t.close());

  const bind = async (instance: string) => {
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
      arqs: { uuid: string }[];
    };
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, instance) })).status).toBe(202);
    await t.jobs.queue.idle();
  };
  const novaEvents = async (state: 'pending' | 'done' | 'dead') => listOutbox(t.deps.store.db, { state, topic: 'nova-event' });

  it('keeps the event while Keystone is down and delivers it with a Keystone token once Keystone is back', async () => {
    useIdentity(SERVICE_USER.password);
    ks.down = true;
    await bind('00000000-0000-4000-8000-000000000001');
    expect(delivered).toEqual([]);
    const [waiting] = await novaEvents('pending');
    expect(waiting).toMatchObject({ attempts: 1 });
    expect(waiting!.lastError).toMatch(/^cannot reach nova: Keystone at http:\/\/keystone.test\/v3 did not answer/);

    ks.down = false;
    t.tick(5_000);
    await drainOutbox(t.deps);
    await t.jobs.queue.idle();
    expect(delivered).toEqual([{ instance: '00000000-0000-4000-8000-000000000001', token: 'svc-1' }]);
    expect(await novaEvents('done')).toHaveLength(1);
    expect(await novaEvents('pending')).toHaveLength(0);
  });

  it("dead-letters the event, naming Keystone's refusal, when the Nova user's password is wrong", async () => {
    useIdentity('wrong-password');
    await bind('00000000-0000-4000-8000-000000000002');
    for (let round = 0; round < 5; round++) {
      t.tick(10_000);
      await drainOutbox(t.deps);
      await t.jobs.queue.idle();
    }
    expect(delivered).toEqual([]);
    const [dead] = await novaEvents('dead');
    expect(dead).toMatchObject({ attempts: 3 });
    expect(dead!.lastError).toMatch(/^cannot reach nova: Keystone at .* refused user placement \(domain Default\) for project service/);
    expect(ks.count('POST /v3/auth/tokens')).toBe(3);
  });
});
