// The accelerator API on the write model (one read batch, one guarded write
// batch): round trips of the job path (outbox claim, bind job, Nova event
// delivery, sweeps), concurrent binds that must grant exactly the attach
// handles there are, and faults injected between the read and the write batch
// or inside the write batch, which must leave every table as it was.
import { createClient } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runBindJob } from '../../src/cyborg/bind.js';
import { sweepBindingTimeouts } from '../../src/cyborg/jobs.js';
import { createDataStore, type DataStore } from '../../src/db/client.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { consume } from '../../src/jobs/consume.js';
import type { JobMessage } from '../../src/jobs/messages.js';
import { listOutbox } from '../../src/jobs/outbox.js';
import { drainOutbox, purgeDelivered } from '../../src/jobs/sweeps.js';
import { bindBody, FPGA_RP, fpgaProfile, HOST, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';
import { crashAfterRead, failEachWriteStatement } from '../helpers/store-faults.js';

let t: CyborgTestApp;
beforeEach(async () => {
  t = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1' });
});
afterEach(() => t.close());

const CYBORG_TABLES = [
  'device_profiles',
  'devices',
  'deployables',
  'attributes',
  'attach_handles',
  'accelerator_requests',
  'cyborg_outbox',
];
async function dump(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of CYBORG_TABLES) {
    out[table] = (await t.deps.store.client.execute(`SELECT * FROM ${table} ORDER BY id`)).rows.map((r) => ({ ...r }));
  }
  return out;
}

async function createArqs(n: number, profile = 'fpga-dp1'): Promise<string[]> {
  const uuids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: profile } });
    expect(res.status).toBe(201);
    uuids.push(...((await res.json()) as { arqs: { uuid: string }[] }).arqs.map((a) => a.uuid));
  }
  return uuids;
}

const pendingMessages = async (): Promise<JobMessage[]> =>
  (await listOutbox(t.deps.store.db, { state: 'pending' })).reverse().map((r) => ({ type: r.topic, outboxId: r.id }) as JobMessage);

const arqStates = async () =>
  (await t.deps.store.client.execute('SELECT state, count(*) AS n FROM accelerator_requests GROUP BY state ORDER BY state')).rows.map(
    (r) => `${String(r.state)}:${Number(r.n)}`,
  );

/** Counts the round trips of everything the app does from now on. */
function countHops(): { hops(): number } {
  const counted = countRoundTrips(t.deps.store.client);
  t.deps.store = createDataStore(counted.client);
  return {
    hops: () => {
      const n = counted.count();
      counted.reset();
      return n;
    },
  };
}

describe('the job path takes at most 2 round trips per outbox update', () => {
  it('claims, binds, delivers, retries, sweeps and purges', async () => {
    await seedHost(t, 2);
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
    const [arq, stuck] = await createArqs(2);
    t.jobs.stop(); // this test runs the jobs itself
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq!, crypto.randomUUID()) })).status).toBe(202);
    let novaAnswers = [503, 200];
    t.deps.novaFetch = async (_url, init) => {
      const status = novaAnswers.shift() ?? 200;
      const { events } = JSON.parse(String(init?.body)) as { events: unknown[] };
      return status === 200 ? Response.json({ events }) : new Response('later', { status });
    };
    const counter = countHops();

    const [bind] = await pendingMessages();
    counter.hops();
    // Claim (one statement, a compare-and-swap), then the bind job's read batch and write batch.
    expect(await consume(t.deps, bind!)).toEqual({ outcome: 'done' });
    expect(counter.hops()).toBe(3);
    expect(await arqStates()).toEqual(['Bound:1', 'Initial:1']);
    counter.hops();
    // A re-delivered message finds the row done: the claim alone.
    expect(await consume(t.deps, bind!)).toEqual({ outcome: 'skipped' });
    expect(counter.hops()).toBe(1);

    const [event] = await pendingMessages();
    expect(event!.type).toBe('nova-event');
    counter.hops();
    expect(await consume(t.deps, event!)).toMatchObject({ outcome: 'retry' });
    expect(counter.hops()).toBe(2); // claim, retry
    t.tick(60_000 + 1000);
    counter.hops();
    expect(await consume(t.deps, event!)).toEqual({ outcome: 'done' });
    expect(counter.hops()).toBe(2); // claim, done

    counter.hops();
    expect(await sweepBindingTimeouts(t.deps)).toBe(0);
    expect(counter.hops()).toBe(1); // the read finds nothing stuck
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(stuck!, crypto.randomUUID()) })).status).toBe(202);
    t.tick(301_000);
    counter.hops();
    expect(await sweepBindingTimeouts(t.deps)).toBe(1);
    expect(counter.hops()).toBe(2);
    expect(await arqStates()).toEqual(['BindFailed:1', 'Bound:1']);

    counter.hops();
    expect(await drainOutbox(t.deps)).toBe(2); // the stuck bind's job and its failed event
    expect(counter.hops()).toBe(1);
    expect(await purgeDelivered(t.deps)).toBe(0);
    expect(counter.hops()).toBe(1);
    t.tick(25 * 3600_000);
    counter.hops();
    expect(await purgeDelivered(t.deps)).toBe(2);
    expect(counter.hops()).toBe(2);
    novaAnswers = [];
  });
});

describe('concurrent binds', () => {
  it('grant exactly the attach handles there are: 17 bind jobs from two clients for 5 handles', async () => {
    await seedHost(t, 5);
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
    const arqs = await createArqs(17);
    t.jobs.stop();
    // 16 binds at once, each for its own instance: every one is accepted (the jobs decide who gets a handle).
    const bound = await Promise.all(
      arqs.slice(0, 16).map((arq) => t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq, crypto.randomUUID()) })),
    );
    expect(bound.map((r) => r.status)).toEqual(Array(16).fill(202));
    // 8 binds of one ARQ to 8 instances at once: exactly one wins, the others find it BindStarted.
    const contested = await Promise.all(
      Array.from({ length: 8 }, () => t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[16]!, crypto.randomUUID()) })),
    );
    expect(contested.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
    const jobs = await pendingMessages();
    expect(jobs).toHaveLength(17);

    // Every job at once, half through a second client on the same database file.
    const other: DataStore = createDataStore(createClient({ url: t.dbUrl }));
    const otherDeps = { ...t.deps, store: other };
    let reads = 0;
    for (const store of [t.deps.store, other]) {
      const read = store.readBatch.bind(store);
      store.readBatch = (statements) => {
        reads += 1;
        return read(statements);
      };
    }
    try {
      const results = await Promise.all(jobs.map((job, i) => consume(i % 2 ? otherDeps : t.deps, job)));
      expect(results.map((r) => r.outcome)).toEqual(Array(17).fill('done'));
    } finally {
      other.close();
    }
    // Jobs did lose races between their read and their write, and were decided again.
    expect(reads).toBeGreaterThan(17);
    expect(await arqStates()).toEqual(['BindFailed:12', 'Bound:5']);
    const held = await t.deps.store.client.execute('SELECT arq_id FROM attach_handles WHERE arq_id IS NOT NULL');
    expect(new Set(held.rows.map((r) => Number(r.arq_id))).size).toBe(5);
    const boundArqs = await t.deps.store.client.execute(
      "SELECT count(DISTINCT attach_handle_id) AS n FROM accelerator_requests WHERE state = 'Bound'",
    );
    expect(Number(boundArqs.rows[0]!.n)).toBe(5);
  });
});

describe('faults between the read and the write batch, or inside the write batch', () => {
  const report = (handles: number, extra = 0) => ({
    devices: [
      {
        key: '0000:0c:00.0',
        type: 'FPGA',
        vendor: '0x8086',
        model: 'arria10',
        deployables: [
          {
            name: `${HOST}_FPGA`,
            num_accelerators: handles,
            rp_uuid: FPGA_RP,
            bitstream_id: null,
            attach_handles: Array.from({ length: handles }, (_, i) => ({
              type: 'PCI',
              info: { domain: '0000', bus: '0d', device: '00', function: String(i) },
            })),
          },
        ],
      },
      ...Array.from({ length: extra }, (_, d) => ({
        key: `0000:1${d}:00.0`,
        type: 'GPU',
        vendor: '10de',
        model: 'a100',
        deployables: [{ name: `gpu-${d}`, num_accelerators: 1, attach_handles: [{ type: 'PCI', info: { bus: `1${d}` } }] }],
      })),
    ],
  });

  it('a crash after the read leaves every table as it was, for each accelerator write', async () => {
    await seedHost(t, 2);
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
    const [arq, bound] = await createArqs(2);
    t.jobs.stop();
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(bound!, crypto.randomUUID()) })).status).toBe(202);
    const [job] = await pendingMessages();
    const before = await dump();
    const restore = crashAfterRead(t.deps.store);
    const requests: [string, string, unknown?][] = [
      ['PUT', `/hosts/${HOST}/devices`, report(3, 2)],
      ['POST', '/device_profiles', fpgaProfile('another')],
      ['DELETE', '/device_profiles/fpga-dp1'],
      ['POST', '/accelerator_requests', { device_profile_name: 'fpga-dp1' }],
      ['PATCH', '/accelerator_requests', bindBody(arq!, crypto.randomUUID())],
      ['PATCH', '/accelerator_requests', { [bound!]: [{ path: '/hostname', op: 'remove' }] }],
      ['DELETE', `/accelerator_requests?arqs=${bound}`],
    ];
    for (const [method, path, body] of requests) {
      const res = await t.acc(method, path, { body });
      expect(res.status, `${method} ${path}`).toBe(500);
      expect(await dump(), `${method} ${path}`).toEqual(before);
    }
    await expect(runBindJob(t.deps, [1, 2], job!.outboxId, '2026-01-01T00:00:00Z', 0)).rejects.toThrow('injected crash');
    restore();
    expect(await dump()).toEqual(before);
  });

  it('a failure at any statement of the write batch leaves every table as it was', async () => {
    await seedHost(t, 2);
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
    const [arq] = await createArqs(1);
    t.jobs.stop();
    // Held handles, a waiting bind and a deployable to drop: the next report touches all of it.
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq!, crypto.randomUUID()) })).status).toBe(202);
    const before = await dump();
    const cases: { what: string; run: () => Promise<number> }[] = [
      { what: 'host report', run: async () => (await t.acc('PUT', `/hosts/${HOST}/devices`, { body: report(3, 3) })).status },
      {
        what: 'bind job',
        run: async () => {
          const [job] = await pendingMessages();
          return runBindJob(t.deps, [1], job!.outboxId, '2026-01-01T00:00:00Z', 0).then(
            () => 200,
            (err: unknown) => (String(err).includes('concurrently') ? 409 : 500),
          );
        },
      },
    ];
    for (const { what, run } of cases) {
      const size = await failEachWriteStatement(t.deps.store, run, async (status, index, size) => {
        // A failed statement is a 500; a failed guard reads as a lost race, decided again until it gives up (409).
        expect([409, 500], `${what}: failing statement ${index}`).toContain(status);
        expect(await dump(), `${what}: failing statement ${index} of ${size}`).toEqual(before);
      });
      expect(size, what).toBeGreaterThan(4);
    }
    // Without a fault, both go through.
    expect((await t.acc('PUT', `/hosts/${HOST}/devices`, { body: report(3, 3) })).status).toBe(200);
    const [job] = await pendingMessages();
    expect(await runBindJob(t.deps, [1], job!.outboxId, '2026-01-01T00:00:00Z', 0)).toHaveLength(1);
    expect(await arqStates()).toEqual(['Bound:1']);
  });
});
