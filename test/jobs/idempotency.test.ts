// Idempotency: a re-delivered queue message, a replayed outbox row, or a
// repeated PATCH never allocates a second attach handle or flips a final state.
import { eq } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attachHandles, outbox } from '../../src/db/schema/cyborg.js';
import { consume } from '../../src/jobs/consume.js';
import { listOutbox } from '../../src/jobs/outbox.js';
import { bindBody, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';

const INSTANCE = '506220bc-18f2-4294-9b29-80267a021dc0';

describe('idempotent binding', () => {
  let t: CyborgTestApp;
  let novaCalls = 0;
  beforeEach(async () => {
    t = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1' });
    novaCalls = 0;
    t.deps.novaFetch = async (_u, init) => {
      novaCalls++;
      const body = JSON.parse(String(init?.body)) as { events: unknown[] };
      return Response.json({ events: body.events });
    };
    await seedHost(t, 3);
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
  });
  afterEach(() => t.close());

  async function boundArq() {
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
      arqs: { uuid: string }[];
    };
    await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, INSTANCE) });
    await t.jobs.queue.idle();
    return arqs[0]!.uuid;
  }
  const heldHandles = async () => (await t.deps.store.db.select().from(attachHandles)).filter((h) => h.arqId !== null).length;

  it('skips a re-delivered bind message', async () => {
    await boundArq();
    const [bindRow] = await listOutbox(t.deps.store.db, { topic: 'bind' });
    expect(bindRow!.state).toBe('done');
    expect(await consume(t.deps, { type: 'bind', outboxId: bindRow!.id })).toEqual({ outcome: 'skipped' });
    expect(await heldHandles()).toBe(1);
  });

  it('does not double-allocate when a finished bind row is replayed (crash after work, before ack)', async () => {
    await boundArq();
    const [bindRow] = await listOutbox(t.deps.store.db, { topic: 'bind' });
    await t.deps.store.writeTx((tx) => tx.update(outbox).set({ state: 'pending', nextAttemptAt: 0 }).where(eq(outbox.id, bindRow!.id)));
    expect(await consume(t.deps, { type: 'bind', outboxId: bindRow!.id })).toEqual({ outcome: 'done' });
    await t.jobs.queue.idle();
    expect(await heldHandles()).toBe(1);
    expect(novaCalls).toBe(1);
  });

  it('treats a repeated bind PATCH as a no-op and refuses a different one', async () => {
    const uuid = await boundArq();
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(uuid, INSTANCE) })).status).toBe(202);
    await t.jobs.queue.idle();
    expect(await listOutbox(t.deps.store.db, { topic: 'bind' })).toHaveLength(1);
    expect(await heldHandles()).toBe(1);
    expect(novaCalls).toBe(1);
    const other = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(uuid, 'aaaaaaaa-18f2-4294-9b29-80267a021dc0') });
    expect(other.status).toBe(409);
    const arq = (await (await t.acc('GET', `/accelerator_requests/${uuid}`)).json()) as { state: string; instance_uuid: string };
    expect(arq).toMatchObject({ state: 'Bound', instance_uuid: INSTANCE });
  });

  it('concurrent deliveries of one message bind once', async () => {
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
      arqs: { uuid: string }[];
    };
    t.deps.jobs = { send: async () => {} }; // hold the job back
    await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, INSTANCE) });
    const [bindRow] = await listOutbox(t.deps.store.db, { topic: 'bind' });
    const results = await Promise.all([1, 2, 3].map(() => consume(t.deps, { type: 'bind', outboxId: bindRow!.id })));
    expect(results.filter((r) => r.outcome === 'done')).toHaveLength(1);
    expect(await heldHandles()).toBe(1);
  });

  it('drops a malformed message without touching anything', async () => {
    expect(await consume(t.deps, { type: 'bind', outboxId: 'x' })).toEqual({ outcome: 'skipped' });
    expect(await consume(t.deps, { kind: 'other' })).toEqual({ outcome: 'skipped' });
  });
});

describe('outbox housekeeping', () => {
  it('purges delivered rows after a day and keeps dead letters', async () => {
    const { purgeDelivered } = await import('../../src/jobs/sweeps.js');
    const t = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1', NOVA_EVENT_MAX_ATTEMPTS: '1' });
    try {
      let fail = false;
      t.deps.novaFetch = async () => (fail ? new Response('down', { status: 503 }) : Response.json({ events: [] }));
      await seedHost(t, 2);
      await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
      for (const nova of ['ok', 'down']) {
        fail = nova === 'down';
        const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
          arqs: { uuid: string }[];
        };
        await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, crypto.randomUUID()) });
        await t.jobs.queue.idle();
      }
      expect(await purgeDelivered(t.deps)).toBe(0);
      t.tick(25 * 3600_000);
      expect(await purgeDelivered(t.deps)).toBe(3); // two binds + one delivered event
      expect((await listOutbox(t.deps.store.db, {})).map((r) => r.state)).toEqual(['dead']);
    } finally {
      t.close();
    }
  });
});
