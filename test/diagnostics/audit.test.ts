// GET /diagnostics/audit and POST /diagnostics/audit/repairs: each finding is
// produced the way it happens in a cloud (inventory shrunk under usage, a lost
// queue send, Nova down past the retry budget, an instance gone from
// placement), then the report, its paging, its auth and the safe repairs.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bindBody, FPGA_RP, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';
import { errorOf } from '../helpers/test-app.js';
import type { AuditRepairsResult, AuditReport } from '../../src/diagnostics/audit.js';

const PROJECT = '6b4e8a0c-0000-4000-8000-000000000001';
const USER = '6b4e8a0c-0000-4000-8000-000000000002';

async function audit(t: CyborgTestApp, query = ''): Promise<AuditReport> {
  const res = await t.call('GET', `/diagnostics/audit${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as AuditReport;
}

async function repairs(t: CyborgTestApp, body: unknown): Promise<AuditRepairsResult> {
  const res = await t.call('POST', '/diagnostics/audit/repairs', { body });
  expect(res.status).toBe(200);
  return (await res.json()) as AuditRepairsResult;
}

async function allocate(t: CyborgTestApp, consumer: string, rp: string, resources: Record<string, number>): Promise<void> {
  const res = await t.call('PUT', `/allocations/${consumer}`, {
    body: {
      allocations: { [rp]: { resources } },
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
  expect(res.status).toBe(204);
}

async function newArq(t: CyborgTestApp): Promise<string> {
  const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
}

describe('GET /diagnostics/audit', () => {
  let t: CyborgTestApp;
  beforeEach(async () => {
    t = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1', ARQ_BINDING_TIMEOUT: '300', NOVA_EVENT_MAX_ATTEMPTS: '1' });
    t.deps.novaFetch = async (_u, init) => Response.json(JSON.parse(String(init?.body)));
    await seedHost(t, 4);
    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
  });
  afterEach(() => t.close());

  it('is empty on a healthy cloud', async () => {
    const report = await audit(t);
    expect(report.summary).toEqual({
      over_capacity_providers: 0,
      empty_consumers: 0,
      stuck_arqs: 0,
      bound_arqs_without_allocation: 0,
      dead_letters: 0,
      over_counter_providers: 0,
    });
    expect(report.binding_timeout_s).toBe(300);
    expect(report.over_capacity_providers).toEqual({ items: [], next_marker: null });
    expect(report.dead_letters).toEqual({ items: [], next_marker: null });
  });

  it('reports a provider whose inventory shrank below its usage, with the consumers on it', async () => {
    const host = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: 'shrunk', uuid: host } })).status).toBe(200);
    expect(
      (
        await t.call('PUT', `/resource_providers/${host}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } },
        })
      ).status,
    ).toBe(200);
    const [vm1, vm2] = [crypto.randomUUID(), crypto.randomUUID()];
    await allocate(t, vm1, host, { VCPU: 4, MEMORY_MB: 1024 });
    await allocate(t, vm2, host, { VCPU: 3 });
    expect((await audit(t)).summary.over_capacity_providers).toBe(0);

    // Placement accepts an inventory below current usage (it only warns).
    const gen = ((await (await t.call('GET', `/resource_providers/${host}`)).json()) as { generation: number }).generation;
    expect(
      (
        await t.call('PUT', `/resource_providers/${host}/inventories`, {
          body: { resource_provider_generation: gen, inventories: { VCPU: { total: 8, reserved: 2 }, MEMORY_MB: { total: 4096 } } },
        })
      ).status,
    ).toBe(200);

    const report = await audit(t);
    expect(report.summary.over_capacity_providers).toBe(1);
    expect(report.over_capacity_providers!.items).toEqual([
      {
        uuid: host,
        name: 'shrunk',
        root_provider_uuid: host,
        resources: [{ resource_class: 'VCPU', total: 8, reserved: 2, allocation_ratio: 1, capacity: 6, used: 7 }],
        consumers: [vm1, vm2].sort().map((c) => ({
          consumer_uuid: c,
          resources: c === vm1 ? { MEMORY_MB: 1024, VCPU: 4 } : { VCPU: 3 },
        })),
      },
    ]);
  });

  it('reports a consumer left with no allocations, and the repair deletes it after a dry run', async () => {
    const vm = crypto.randomUUID();
    await allocate(t, vm, FPGA_RP, { FPGA: 1 });
    // No API path leaves an empty consumer (placement deletes it with its last
    // allocation); a crash between the two statements of an older release did.
    await t.deps.store.client.execute({ sql: 'DELETE FROM allocations WHERE consumer_id = ?', args: [vm] });

    const report = await audit(t, '?section=empty_consumers');
    expect(report.summary.empty_consumers).toBe(1);
    expect(report.over_capacity_providers).toBeUndefined();
    expect(report.empty_consumers!.items).toMatchObject([{ uuid: vm, project_id: PROJECT, user_id: USER, consumer_type: 'INSTANCE' }]);

    const bogus = crypto.randomUUID();
    const dry = await repairs(t, { dry_run: true, delete_empty_consumers: [vm, bogus] });
    expect(dry).toEqual({
      dry_run: true,
      deleted_empty_consumers: [vm],
      resent_dead_letters: [],
      skipped: { empty_consumers: [bogus], dead_letters: [] },
    });
    expect((await audit(t)).summary.empty_consumers).toBe(1);

    const applied = await repairs(t, { dry_run: false, delete_empty_consumers: [vm] });
    expect(applied.deleted_empty_consumers).toEqual([vm]);
    expect((await audit(t)).summary.empty_consumers).toBe(0);
  });

  it('leaves a consumer that got allocations again since the dry run', async () => {
    const vm = crypto.randomUUID();
    await allocate(t, vm, FPGA_RP, { FPGA: 1 });
    await t.deps.store.client.execute({ sql: 'DELETE FROM allocations WHERE consumer_id = ?', args: [vm] });
    expect((await repairs(t, { dry_run: true, delete_empty_consumers: [vm] })).deleted_empty_consumers).toEqual([vm]);
    // The consumer still exists (generation 1 after its first claim), so a new claim names it.
    const res = await t.call('PUT', `/allocations/${vm}`, {
      body: {
        allocations: { [FPGA_RP]: { resources: { FPGA: 1 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: 1,
        consumer_type: 'INSTANCE',
      },
    });
    expect(res.status).toBe(204);
    const applied = await repairs(t, { dry_run: false, delete_empty_consumers: [vm] });
    expect(applied.deleted_empty_consumers).toEqual([]);
    expect(applied.skipped.empty_consumers).toEqual([vm]);
    expect(((await t.call('GET', `/allocations/${vm}`).then((r) => r.json())) as { allocations: object }).allocations).toHaveProperty(
      FPGA_RP,
    );
  });

  it('reports ARQs stuck in BindStarted past the binding timeout', async () => {
    const arq = await newArq(t);
    const queue = t.deps.jobs;
    t.deps.jobs = {
      send: async () => {
        throw new Error('queue unavailable');
      },
    };
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq, crypto.randomUUID()) })).status).toBe(202);
    t.deps.jobs = queue;

    t.tick(299_000);
    expect((await audit(t)).summary.stuck_arqs).toBe(0);
    t.tick(2_000);
    const report = await audit(t);
    expect(report.summary.stuck_arqs).toBe(1);
    expect(report.stuck_arqs!.items).toMatchObject([{ uuid: arq, state: 'BindStarted', stuck_for_s: 301, device_rp_uuid: FPGA_RP }]);
  });

  it('reports Bound ARQs whose instance holds no allocation', async () => {
    const [held, orphan] = [await newArq(t), await newArq(t)];
    const [vmHeld, vmGone] = [crypto.randomUUID(), crypto.randomUUID()];
    await allocate(t, vmHeld, FPGA_RP, { FPGA: 1 });
    expect(
      (await t.acc('PATCH', '/accelerator_requests', { body: { ...bindBody(held, vmHeld), ...bindBody(orphan, vmGone) } })).status,
    ).toBe(202);
    await t.jobs.queue.idle();

    const report = await audit(t, '?section=bound_arqs_without_allocation');
    expect(report.summary.bound_arqs_without_allocation).toBe(1);
    expect(report.bound_arqs_without_allocation!.items).toMatchObject([{ uuid: orphan, state: 'Bound', instance_uuid: vmGone }]);
  });

  it('reports dead letters, and the repair re-sends them', async () => {
    let novaUp = false;
    const delivered: string[] = [];
    t.deps.novaFetch = async (_u, init) => {
      if (!novaUp) return new Response('{"error":"down"}', { status: 503 });
      const body = JSON.parse(String(init?.body)) as { events: { tag: string }[] };
      delivered.push(...body.events.map((e) => e.tag));
      return Response.json(body);
    };
    const arq = await newArq(t);
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq, crypto.randomUUID()) })).status).toBe(202);
    await t.jobs.queue.idle();

    const report = await audit(t, '?section=dead_letters');
    expect(report.summary.dead_letters).toBe(1);
    const [dead] = report.dead_letters!.items;
    expect(dead).toMatchObject({ topic: 'nova-event', attempts: 1, payload: { events: [{ arqUuid: arq, status: 'completed' }] } });
    expect(dead!.last_error).toContain('503');

    novaUp = true;
    const dry = await repairs(t, { dry_run: true, resend_dead_letters: [dead!.id] });
    expect(dry.resent_dead_letters).toEqual([dead!.id]);
    await t.jobs.queue.idle();
    expect(delivered).toEqual([]);

    expect((await repairs(t, { dry_run: false, resend_dead_letters: [dead!.id, dead!.id + 1000] })).resent_dead_letters).toEqual([
      dead!.id,
    ]);
    await t.jobs.queue.idle();
    expect(delivered).toEqual([arq]);
    expect((await audit(t)).summary.dead_letters).toBe(0);
  });

  it('pages each section with limit and marker', async () => {
    const vms = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()].sort();
    for (const vm of vms) await allocate(t, vm, FPGA_RP, { FPGA: 1 });
    await t.deps.store.client.execute('DELETE FROM allocations');

    const first = await audit(t, '?section=empty_consumers&limit=2');
    expect(first.empty_consumers!.items.map((c) => c.uuid)).toEqual(vms.slice(0, 2));
    expect(first.empty_consumers!.next_marker).toBe(vms[1]);
    const second = await audit(t, `?section=empty_consumers&limit=2&marker=${first.empty_consumers!.next_marker}`);
    expect(second.empty_consumers!.items.map((c) => c.uuid)).toEqual(vms.slice(2));
    expect(second.empty_consumers!.next_marker).toBeNull();
    expect(second.summary.empty_consumers).toBe(3);
  });

  it('refuses bad queries and bodies in the placement error envelope', async () => {
    for (const query of ['?limit=0', '?limit=abc', '?marker=x', '?section=nope', '?bogus=1', '?section=dead_letters&marker=abc']) {
      const res = await t.call('GET', `/diagnostics/audit${query}`);
      expect(res.status, query).toBe(400);
      expect((await errorOf(res)).detail, query).toContain('Invalid query string parameters');
    }
    const res = await t.call('POST', '/diagnostics/audit/repairs', { body: { delete_empty_consumers: [] } });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain("'dry_run' is a required property");
    expect((await t.call('DELETE', '/diagnostics/audit')).status).toBe(405);
  });

  it('is admin only', async () => {
    const anonymous = await t.app.request('/diagnostics/audit');
    expect(anonymous.status).toBe(401);
    const member = await t.call('GET', '/diagnostics/audit', { headers: { 'x-auth-token': 'alice:proj', 'x-roles': 'member,reader' } });
    expect(member.status).toBe(403);
    expect((await errorOf(member)).detail).toContain('admin_api');
    const repair = await t.call('POST', '/diagnostics/audit/repairs', {
      body: { dry_run: false },
      headers: { 'x-auth-token': 'nova:svc', 'x-roles': 'service' },
    });
    expect(repair.status).toBe(403);
  });
});
