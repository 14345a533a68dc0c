// Fault test: Nova fails (5xx, timeouts, connection refused) the first K
// attempts of every event, over 200 binds. Every event is delivered in the
// end; duplicates only where at-least-once allows (none here, since failed
// attempts were not accepted by Nova).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listOutbox } from '../../src/jobs/outbox.js';
import { drainOutbox } from '../../src/jobs/sweeps.js';
import { bindBody, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';

const BINDS = 200;
const K = 3;

describe('Nova event delivery under faults', () => {
  let t: CyborgTestApp;
  beforeEach(async () => {
    t = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1', NOVA_EVENT_MAX_ATTEMPTS: '10', NOVA_EVENT_BACKOFF_MS: '1000' });
    await seedHost(t, BINDS);
  });
  afterEach(() => t.close());

  it(`delivers every event of ${BINDS} binds when each fails ${K} times first`, async () => {
    const attemptsByTag = new Map<string, number>();
    const delivered: string[] = [];
    t.deps.novaFetch = async (_url, init) => {
      const body = JSON.parse(String(init?.body)) as { events: { tag: string; status: string; server_uuid: string }[] };
      const tag = body.events[0]!.tag;
      const n = (attemptsByTag.get(tag) ?? 0) + 1;
      attemptsByTag.set(tag, n);
      if (n <= K) {
        const fault = n % 3;
        if (fault === 1) return new Response('{"error":"down"}', { status: 503 });
        if (fault === 2) throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
        throw new TypeError('fetch failed: connect ECONNREFUSED');
      }
      for (const e of body.events) delivered.push(`${e.server_uuid}/${e.tag}/${e.status}`);
      return Response.json({ events: body.events.map((e) => ({ ...e, code: 200 })) });
    };

    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
    const expected: string[] = [];
    for (let i = 0; i < BINDS; i++) {
      const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
        arqs: { uuid: string }[];
      };
      const instance = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, instance) })).status).toBe(202);
      expected.push(`${instance}/${arqs[0]!.uuid}/completed`);
    }
    await t.jobs.queue.idle();

    // Let time pass in backoff-sized steps; the drain re-sends what is due.
    for (let round = 0; round < 40 && delivered.length < BINDS; round++) {
      t.tick(5_000);
      await drainOutbox(t.deps);
      await t.jobs.queue.idle();
    }
    expect(new Set(delivered)).toEqual(new Set(expected));
    expect(delivered).toHaveLength(BINDS);
    expect([...attemptsByTag.values()].every((n) => n === K + 1)).toBe(true);
    expect(await listOutbox(t.deps.store.db, { state: 'pending' })).toHaveLength(0);
    expect(await listOutbox(t.deps.store.db, { state: 'dead' })).toHaveLength(0);

    // Every ARQ holds its own attach handle.
    const { arqs } = (await (await t.acc('GET', '/accelerator_requests')).json()) as {
      arqs: { state: string; attach_handle_uuid: string }[];
    };
    expect(arqs.every((a) => a.state === 'Bound')).toBe(true);
    expect(new Set(arqs.map((a) => a.attach_handle_uuid)).size).toBe(BINDS);
  }, 60_000);

  it('dead-letters an event after N failed attempts and shows it through the API', async () => {
    let calls = 0;
    t.deps.novaFetch = async () => {
      calls++;
      return new Response('nope', { status: 500 });
    };
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
      arqs: { uuid: string }[];
    };
    await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, '506220bc-18f2-4294-9b29-80267a021dc0') });
    await t.jobs.queue.idle();
    for (let round = 0; round < 20; round++) {
      t.tick(600_000);
      await drainOutbox(t.deps);
      await t.jobs.queue.idle();
    }
    expect(calls).toBe(10);
    const res = await t.acc('GET', '/outbox?state=dead');
    expect(res.status).toBe(200);
    const { outbox } = (await res.json()) as {
      outbox: { topic: string; attempts: number; last_error: string; payload: { events: { arqUuid: string }[] } }[];
    };
    expect(outbox).toHaveLength(1);
    expect(outbox[0]).toMatchObject({ topic: 'nova-event', attempts: 10 });
    expect(outbox[0]!.last_error).toContain('500');
    expect(outbox[0]!.payload.events[0]!.arqUuid).toBe(arqs[0]!.uuid);
    // A project member may not read the outbox.
    const member = await t.acc('GET', '/outbox', { headers: { 'x-auth-token': 'u1:p1', 'x-roles': 'member,reader' } });
    expect(member.status).toBe(403);
  });
});
