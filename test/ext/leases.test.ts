// Allocation leases: set, renew, confirm; expiry releases allocations exactly
// as DELETE /allocations/{consumer} unless the consumer was rewritten since;
// the sweep racing a confirm, a renew and a rewrite; faults at every
// statement of the sweep's batch; a failed ARQ bind releasing its lease.
import type { InStatement } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepExpiredLeases } from '../../src/ext/allocation-ends.js';
import { leaseStats } from '../../src/ext/leases/leases.js';
import { runSweeps } from '../../src/jobs/sweeps.js';
import { bindBody, FPGA_RP, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';
import { dumpPlacement } from '../helpers/placement-seed.js';
import { provider } from '../helpers/providers.js';
import { claim, PROJECT, USER } from './helpers.js';

let t: CyborgTestApp;
beforeEach(async () => {
  t = await makeCyborgApp({ ARQ_BINDING_TIMEOUT: '300' });
});
afterEach(() => t.close());

interface Lease {
  consumer_uuid: string;
  seconds: number;
  expires_at: string;
  consumer_generation: number;
}

async function lease(consumer: string, seconds: number): Promise<Lease> {
  const res = await t.call('PUT', `/ext/leases/${consumer}`, { body: { seconds } });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Lease;
}

async function allocationsOf(consumer: string): Promise<Record<string, unknown>> {
  return ((await (await t.call('GET', `/allocations/${consumer}`)).json()) as { allocations: Record<string, unknown> }).allocations;
}

/** A host and a consumer holding 2 VCPU on it. */
async function claimed(): Promise<{ host: string; consumer: string }> {
  const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
  const consumer = crypto.randomUUID();
  expect((await claim(t, { [host]: { resources: { VCPU: 2 } } }, consumer)).status).toBe(204);
  return { host, consumer };
}

const sweep = () => sweepExpiredLeases(t.deps.store, t.deps.clock().getTime());

/** The consumer (generation 1) rewrites its allocations to `vcpu` VCPU on `host`, after its lease was set. */
async function rewrite(consumer: string, host: string, vcpu: number): Promise<void> {
  const res = await t.call('PUT', `/allocations/${consumer}`, {
    body: {
      allocations: { [host]: { resources: { VCPU: vcpu } } },
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: 1,
      consumer_type: 'INSTANCE',
    },
  });
  expect(res.status).toBe(204);
}

/** Runs `action` once, right after the next read batch (between the sweep's read and its write). */
function afterNextRead(action: () => Promise<void>): void {
  const { store } = t.deps;
  const read = store.readBatch;
  store.readBatch = async (statements: InStatement[]) => {
    const results = await read(statements);
    store.readBatch = read;
    await action();
    return results;
  };
}

describe('/ext/leases/{consumer_uuid}', () => {
  it('sets, shows, renews and confirms; refuses a consumer without allocations and a bad body', async () => {
    const { consumer } = await claimed();
    const set = await lease(consumer, 60);
    expect(set).toMatchObject({ consumer_uuid: consumer, seconds: 60, consumer_generation: 1 });
    expect(Date.parse(set.expires_at)).toBe(t.deps.clock().getTime() + 60_000);
    expect(await (await t.call('GET', `/ext/leases/${consumer}`)).json()).toEqual(set);
    t.tick(30_000);
    const renewed = await lease(consumer, 60);
    expect(Date.parse(renewed.expires_at)).toBe(t.deps.clock().getTime() + 60_000);
    expect(((await (await t.call('GET', '/ext/leases')).json()) as { leases: Lease[] }).leases).toEqual([renewed]);
    expect((await t.call('DELETE', `/ext/leases/${consumer}`)).status).toBe(204);
    expect((await t.call('GET', `/ext/leases/${consumer}`)).status).toBe(404);
    expect((await t.call('DELETE', `/ext/leases/${consumer}`)).status).toBe(404);
    expect((await t.call('PUT', `/ext/leases/${crypto.randomUUID()}`, { body: { seconds: 5 } })).status).toBe(404);
    for (const body of [{ seconds: 0 }, { seconds: 1.5 }, { seconds: '5' }, {}, { seconds: 5, extra: 1 }]) {
      expect((await t.call('PUT', `/ext/leases/${consumer}`, { body })).status).toBe(400);
    }
    // Confirmed: expiry time passes and nothing is removed.
    t.tick(3600_000);
    await runSweeps(t.deps);
    expect(Object.keys(await allocationsOf(consumer))).toHaveLength(1);
  });

  it('releases unconfirmed allocations at expiry exactly as DELETE /allocations would, and counts it', async () => {
    const { host, consumer } = await claimed();
    const twin = crypto.randomUUID();
    expect((await claim(t, { [host]: { resources: { VCPU: 2 } } }, twin)).status).toBe(204);
    await lease(consumer, 10);
    t.tick(9_000);
    await runSweeps(t.deps);
    expect(Object.keys(await allocationsOf(consumer))).toHaveLength(1);
    t.tick(1_000);
    const before = await dumpPlacement(t.deps);
    await runSweeps(t.deps);
    // The same change as DELETE /allocations/{twin} makes on a copy of the state.
    expect(await allocationsOf(consumer)).toEqual({});
    expect((await t.call('GET', `/ext/leases/${consumer}`)).status).toBe(404);
    const released = await dumpPlacement(t.deps);
    expect((await t.call('DELETE', `/allocations/${twin}`)).status).toBe(204);
    const bothGone = await dumpPlacement(t.deps);
    const withoutConsumer = (dump: Record<string, unknown[]>, uuid: string) => JSON.stringify(dump).split(uuid).length - 1;
    expect(withoutConsumer(before, consumer)).toBeGreaterThan(0);
    expect(withoutConsumer(released, consumer)).toBe(0);
    expect(withoutConsumer(bothGone, twin)).toBe(0);
    expect(((await (await t.call('GET', `/resource_providers/${host}/usages`)).json()) as { usages: object }).usages).toEqual({ VCPU: 0 });
    expect(await leaseStats(t.deps.store, t.deps.clock().getTime())).toMatchObject({ active: 0, released: 1, dropped: 0 });
    // The audit shows the sweep's counters.
    const audit = (await (await t.call('GET', '/diagnostics/audit')).json()) as { extensions: { leases: object } };
    expect(audit.extensions.leases).toMatchObject({ active: 0, sweeps: 1, released: 1, dropped: 0, binding_failures: 0 });
  });

  it('expires at expires_at to the millisecond: a sweep 1 ms before keeps it, a sweep at expires_at releases it', async () => {
    const { consumer } = await claimed();
    const set = await lease(consumer, 10);
    const expiresAt = Date.parse(set.expires_at);
    t.tick(expiresAt - 1 - t.deps.clock().getTime());
    expect(t.deps.clock().getTime()).toBe(expiresAt - 1);
    expect(await leaseStats(t.deps.store, t.deps.clock().getTime())).toMatchObject({ active: 1, expired_unswept: 0 });
    expect(await sweep()).toEqual({ released: [], dropped: [] });
    await runSweeps(t.deps);
    expect(Object.keys(await allocationsOf(consumer))).toHaveLength(1);
    expect((await t.call('GET', `/ext/leases/${consumer}`)).status).toBe(200);
    t.tick(1);
    expect(await leaseStats(t.deps.store, expiresAt)).toMatchObject({ active: 1, expired_unswept: 1 });
    expect(await sweep()).toEqual({ released: [consumer], dropped: [] });
    expect(await allocationsOf(consumer)).toEqual({});
    expect((await t.call('GET', `/ext/leases/${consumer}`)).status).toBe(404);
  });

  it('sweeps several leases in one batch, each with its own outcome, and records when it ran', async () => {
    expect(await leaseStats(t.deps.store, t.deps.clock().getTime())).toEqual({
      active: 0,
      expired_unswept: 0,
      sweeps: 0,
      released: 0,
      dropped: 0,
      binding_failures: 0,
      last_sweep_at: null,
    });
    const a = await claimed();
    const b = await claimed();
    const shown = [await lease(a.consumer, 10), await lease(b.consumer, 10)];
    // Each lease read back as its own (two statements of the same text, two consumers).
    for (const [i, { consumer }] of [a, b].entries()) {
      expect(await (await t.call('GET', `/ext/leases/${consumer}`)).json()).toEqual(shown[i]);
    }
    await rewrite(b.consumer, b.host, 1);
    t.tick(10_000);
    const at = t.deps.clock().toISOString();
    expect(await sweep()).toEqual({ released: [a.consumer], dropped: [b.consumer] });
    expect(await leaseStats(t.deps.store, t.deps.clock().getTime())).toMatchObject({
      active: 0,
      sweeps: 1,
      released: 1,
      dropped: 1,
      last_sweep_at: at,
    });
  });

  it('keeps allocations the consumer rewrote after the lease: only the lease goes', async () => {
    const { host, consumer } = await claimed();
    await lease(consumer, 10);
    await rewrite(consumer, host, 3);
    t.tick(10_000);
    expect(await sweep()).toEqual({ released: [], dropped: [consumer] });
    expect(await allocationsOf(consumer)).toEqual({ [host]: expect.objectContaining({ resources: { VCPU: 3 } }) });
    expect((await t.call('GET', `/ext/leases/${consumer}`)).status).toBe(404);
  });

  it('loses to a confirm, a renew or a rewrite that lands between its read and its write', async () => {
    const races: [string, (consumer: string, host: string) => Promise<void>][] = [
      ['confirm', async (c) => void expect((await t.call('DELETE', `/ext/leases/${c}`)).status).toBe(204)],
      ['renew', async (c) => void (await lease(c, 60))],
      [
        'rewrite',
        async (c, host) => {
          const res = await t.call('PUT', `/allocations/${c}`, {
            body: {
              allocations: { [host]: { resources: { VCPU: 1 } } },
              project_id: PROJECT,
              user_id: USER,
              consumer_generation: 1,
              consumer_type: 'INSTANCE',
            },
          });
          expect(res.status).toBe(204);
        },
      ],
    ];
    for (const [name, race] of races) {
      const { host, consumer } = await claimed();
      await lease(consumer, 10);
      t.tick(10_000);
      afterNextRead(() => race(consumer, host));
      const outcome = await sweep();
      expect(outcome.released, name).toEqual([]);
      // A rewrite makes the lease moot (dropped); a confirm or a renew leaves nothing for this sweep to do.
      expect(outcome.dropped, name).toEqual(name === 'rewrite' ? [consumer] : []);
      expect(Object.keys(await allocationsOf(consumer)), name).toEqual([host]);
    }
  });

  it('leaves everything as it was when any statement of the sweep batch fails, and the next sweep finishes', async () => {
    const leased: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const { consumer } = await claimed();
      await lease(consumer, 5);
      leased.push(consumer);
    }
    t.tick(5_000);
    const before = await dumpPlacement(t.deps);
    const { store } = t.deps;
    const write = store.writeBatch;
    let size = 1;
    for (let index = 0; index < size; index += 1) {
      store.writeBatch = async (statements: InStatement[]) => {
        size = statements.length;
        return write(statements.map((s, i) => (i === index ? "SELECT json('injected failure')" : s)));
      };
      await expect(sweep()).rejects.toThrow();
      store.writeBatch = write;
      expect(await dumpPlacement(t.deps)).toEqual(before);
    }
    expect(size).toBeGreaterThan(8);
    expect((await sweep()).released.sort()).toEqual([...leased].sort());
  });

  it('is released at once when an ARQ bound to the leased consumer fails to bind', async () => {
    await seedHost(t, 1);
    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
    const holder = crypto.randomUUID();
    const leased = crypto.randomUUID();
    for (const consumer of [holder, leased]) {
      expect((await claim(t, { [FPGA_RP]: { resources: { FPGA: 1 } } }, consumer)).status).toBe(consumer === holder ? 204 : 409);
    }
    // Two FPGA handles' worth of claims is not possible on one: give the leased consumer VCPU on another host.
    const other = await provider(t, { inventory: { VCPU: { total: 4 } } });
    expect((await claim(t, { [other]: { resources: { VCPU: 1 } } }, leased)).status).toBe(204);
    await lease(leased, 600);
    const arqOf = async () => {
      const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } });
      return ((await res.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
    };
    // The holder's ARQ takes the one handle; the leased consumer's ARQ then fails to bind.
    const [first, second] = [await arqOf(), await arqOf()];
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(first, holder) })).status).toBe(202);
    await t.jobs.queue.idle();
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(second, leased) })).status).toBe(202);
    await t.jobs.queue.idle();
    const state = ((await (await t.acc('GET', `/accelerator_requests/${second}`)).json()) as { state: string }).state;
    expect(state).toBe('BindFailed');
    expect(await allocationsOf(leased)).toEqual({});
    expect((await t.call('GET', `/ext/leases/${leased}`)).status).toBe(404);
    expect(Object.keys(await allocationsOf(holder))).toEqual([FPGA_RP]);
    expect((await leaseStats(t.deps.store, t.deps.clock().getTime())).binding_failures).toBe(1);
  });

  it('is released at once when the leased consumer bind times out', async () => {
    await seedHost(t, 1);
    const bitstream = crypto.randomUUID();
    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile('fpga-bs', { 'accel:bitstream_id': bitstream }) })).status).toBe(
      201,
    );
    const leased = crypto.randomUUID();
    expect((await claim(t, { [FPGA_RP]: { resources: { FPGA: 1 } } }, leased)).status).toBe(204);
    await lease(leased, 3600);
    const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-bs' } });
    const arq = ((await res.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq, leased) })).status).toBe(202);
    await t.jobs.queue.idle();
    // Waiting for the bitstream: still leased.
    expect((await t.call('GET', `/ext/leases/${leased}`)).status).toBe(200);
    t.tick(301_000);
    await runSweeps(t.deps);
    expect(await allocationsOf(leased)).toEqual({});
    expect((await t.call('GET', `/ext/leases/${leased}`)).status).toBe(404);
  });
});
