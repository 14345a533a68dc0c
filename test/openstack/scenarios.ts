// The scenarios test/openstack/*.test.ts run against a cloud of scripts/openstack-cloud.ts,
// the same steps whichever placement service it has: each registers its steps as tests of
// the describe it is called in, in order, sharing the servers they made.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Cloud, cloudMissing, type PlacementKind, RACE_ROOM, startCloud } from '../../scripts/openstack-cloud.js';
import { describeWithPart } from '../helpers/parts.js';
import {
  eventually,
  expectNoProviderOverCapacity,
  expectPlacementMatchesServers,
  PlacementReader,
  SdkSession,
  type Server,
} from './cloud-session.js';

export interface CloudContext {
  cloud: Cloud;
  sdk: SdkSession;
  placement: PlacementReader;
}

const STEP = { timeout: 600_000 };

/**
 * A describe block around one cloud with `placement`: started before its steps (a missing
 * Debian package fails the block, naming it: test/helpers/parts.ts), stopped after them.
 */
export function describeCloud(placement: PlacementKind, title: string, steps: (ctx: () => CloudContext) => void): void {
  let context: CloudContext | undefined;
  const ctx = () => {
    if (!context) throw new Error('the cloud did not start');
    return context;
  };
  describeWithPart(cloudMissing(), title, () => {
    let cloud: Cloud | undefined;
    beforeAll(async () => {
      const t0 = Date.now();
      cloud = await startCloud({ placement, log: (line) => console.log(line) });
      console.log(`openstack-cloud: ${title}: cloud started in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      context = { cloud, sdk: new SdkSession(cloud.adminEnv), placement: new PlacementReader(cloud) };
    }, 900_000);
    afterAll(async () => {
      context?.sdk.close();
      await cloud?.stop();
    }, 120_000);
    steps(ctx);
  });
}

async function flavor(sdk: SdkSession, name: string, vcpus: number, ram: number, disk: number): Promise<string> {
  const existing = await sdk.compute<{ id: string } | null>('find_flavor', [name], { ignore_missing: true });
  if (existing) return existing.id;
  return (await sdk.compute<{ id: string }>('create_flavor', [], { name, vcpus, ram, disk })).id;
}

/** Boots `count` servers vm0.. of `flavorRef` from the cloud's image, without a network, and waits until each is active; their ids, in order. */
export async function bootServers(sdk: SdkSession, cloud: Cloud, flavorRef: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const s = await sdk.compute<Server>('create_server', [], {
      name: `vm${i}`,
      flavorRef,
      imageRef: cloud.imageId,
      networks: 'none',
    });
    ids.push(s.id);
  }
  for (const id of ids) await sdk.waitActive(id);
  return ids;
}

/** `nova-manage placement audit` and `heal_allocations` have nothing to report. */
export async function expectAuditClean(cloud: Cloud): Promise<void> {
  const audit = await cloud.novaManage(['placement', 'audit', '--verbose']);
  // 0: no orphaned allocations (3 would mean some were found).
  expect(audit, audit.output).toMatchObject({ code: 0 });
  expect(audit.output).not.toMatch(/orphan/i);
  const heal = await cloud.novaManage(['placement', 'heal_allocations', '--verbose']);
  // 4: "Command completed successfully but no allocations were created".
  expect(heal, heal.output).toMatchObject({ code: 4 });
}

/**
 * Boot, resize + confirm, resize + revert, cold migrate, live migrate, shelve-offload +
 * unshelve, evacuate a downed compute, delete all; placement checked after every step.
 * compute3 (the race host) is disabled for it.
 */
export function computeScenario(ctx: () => CloudContext, count = 4): void {
  const ids: string[] = [];
  let small = '';
  let large = '';
  const check = () => expectPlacementMatchesServers(ctx().sdk, ctx().placement);
  const hostOf = async (id: string) => (await ctx().sdk.compute<Server>('get_server', [id])).compute_host;

  it(`boots ${count} servers (compute3 disabled)`, STEP, async () => {
    const { sdk, cloud } = ctx();
    await sdk.setEnabled('compute3', false);
    small = await flavor(sdk, 'm1.small', 1, 128, 1);
    large = await flavor(sdk, 'm1.large', 2, 256, 2);
    ids.push(...(await bootServers(sdk, cloud, small, count)));
    const servers = await check();
    // Where each goes is the scheduler's choice (equal hosts tie); never compute3.
    for (const s of servers) expect(['compute1', 'compute2']).toContain(s.compute_host);
  });

  it('resizes a server and confirms: the new flavor on the new host, the migration holds nothing', STEP, async () => {
    const { sdk } = ctx();
    const before = await hostOf(ids[0]!);
    await sdk.compute('resize_server', [ids[0], large]);
    await sdk.waitFor(ids[0]!, 'VERIFY_RESIZE');
    await sdk.compute('confirm_server_resize', [ids[0]]);
    const s = await sdk.waitActive(ids[0]!);
    expect(s.flavor.vcpus).toBe(2);
    expect(s.compute_host).not.toBe(before);
    await eventually(check, 60_000);
  });

  it('resizes a server and reverts: the old flavor back on the old host', STEP, async () => {
    const { sdk } = ctx();
    const before = await hostOf(ids[1]!);
    await sdk.compute('resize_server', [ids[1], large]);
    await sdk.waitFor(ids[1]!, 'VERIFY_RESIZE');
    await sdk.compute('revert_server_resize', [ids[1]]);
    const s = await sdk.waitActive(ids[1]!);
    expect(s.flavor.vcpus).toBe(1);
    expect(s.compute_host).toBe(before);
    await eventually(check, 60_000);
  });

  it('cold-migrates a server and confirms', STEP, async () => {
    const { sdk } = ctx();
    const before = await hostOf(ids[2]!);
    await sdk.compute('migrate_server', [ids[2]]);
    await sdk.waitFor(ids[2]!, 'VERIFY_RESIZE');
    await sdk.compute('confirm_server_resize', [ids[2]]);
    const s = await sdk.waitActive(ids[2]!);
    expect(s.compute_host).not.toBe(before);
    await eventually(check, 60_000);
  });

  it('live-migrates a server', STEP, async () => {
    const { sdk } = ctx();
    const before = await hostOf(ids[3]!);
    await sdk.compute('live_migrate_server', [ids[3]], { host: null, block_migration: 'auto' });
    const s = await eventually(async () => {
      const now = await sdk.waitActive(ids[3]!);
      expect(now.compute_host).not.toBe(before);
      return now;
    }, 300_000);
    expect(s.status).toBe('ACTIVE');
    await eventually(check, 60_000);
  });

  it('shelves a server (offloaded: nothing allocated) and unshelves it', STEP, async () => {
    const { sdk } = ctx();
    await sdk.compute('shelve_server', [ids[0]]);
    await sdk.waitFor(ids[0]!, 'SHELVED_OFFLOADED');
    expect(await ctx().placement.allocations(ids[0]!)).toEqual({});
    await check();
    await sdk.compute('unshelve_server', [ids[0]]);
    await sdk.waitActive(ids[0]!);
    await eventually(check, 60_000);
  });

  it('evacuates the servers of a compute host that died, which cleans up when it comes back', STEP, async () => {
    const { sdk, cloud } = ctx();
    let servers = await sdk.servers();
    if (!servers.some((s) => s.compute_host === 'compute2')) {
      const id = servers.find((s) => s.compute_host === 'compute1')!.id;
      await sdk.compute('live_migrate_server', [id], { host: 'compute2', block_migration: 'auto' });
      await eventually(async () => expect(await hostOf(id)).toBe('compute2'), 300_000);
      servers = await sdk.servers();
    }
    const victims = servers.filter((s) => s.compute_host === 'compute2').map((s) => s.id);
    await cloud.killCompute('compute2');
    const service = await sdk.service('compute2');
    await sdk.compute('update_service_forced_down', [service.id, 'compute2', 'nova-compute', true]);
    for (const id of victims) await sdk.request({ op: 'action', server: id, body: { evacuate: {} } });
    for (const id of victims) {
      await eventually(async () => {
        const s = await sdk.waitActive(id);
        expect(s.compute_host).toBe('compute1');
      }, 300_000);
    }
    // The dead host comes back: it finds the evacuated servers gone and frees their allocations.
    await cloud.startCompute('compute2');
    // Nova refuses to force the host up until its nova-compute has started and finished the
    // evacuations (their migration records move from `done` to `completed`).
    await eventually(() => sdk.compute('update_service_forced_down', [service.id, 'compute2', 'nova-compute', false]), 300_000, 2000);
    await eventually(async () => expect((await sdk.service('compute2')).state).toBe('up'), 300_000, 2000);
    await eventually(check, 300_000, 2000);
  });

  it('deletes every server: nothing allocated anywhere', STEP, async () => {
    const { sdk } = ctx();
    for (const id of ids) await sdk.compute('delete_server', [id]);
    for (const id of ids) await sdk.waitDeleted(id);
    const servers = await eventually(check, 60_000);
    expect(servers).toEqual([]);
    for (const p of await ctx().placement.providers()) expect(await ctx().placement.usages(p.uuid), p.name).toSatisfy(allZero);
  });

  it('leaves nova-manage placement audit and heal_allocations nothing to report', STEP, async () => {
    await expectAuditClean(ctx().cloud);
  });
}

const allZero = (usages: Record<string, number>) => Object.values(usages).every((n) => n === 0);

/**
 * 3K one-VCPU servers booted at once on compute3, which has room for K = RACE_ROOM:
 * exactly K go ACTIVE, the rest ERROR with NoValidHost, and placement holds K flavors.
 */
export function raceScenario(ctx: () => CloudContext): void {
  const count = 3 * RACE_ROOM;
  it(`boots ${count} servers at once on a host with room for ${RACE_ROOM}: ${RACE_ROOM} ACTIVE, the rest NoValidHost`, STEP, async () => {
    const { sdk, cloud, placement } = ctx();
    await sdk.setEnabled('compute3', true);
    await sdk.setEnabled('compute1', false);
    await sdk.setEnabled('compute2', false);
    const compute3 = await placement.providerUuid('compute3');
    // Nova marks a disabled host's provider with COMPUTE_STATUS_DISABLED and asks placement for
    // hosts without it: placement alone decides who gets compute3's room.
    await eventually(async () => {
      expect(await placement.traits(compute3)).not.toContain('COMPUTE_STATUS_DISABLED');
      for (const host of ['compute1', 'compute2']) {
        expect(await placement.traits(await placement.providerUuid(host))).toContain('COMPUTE_STATUS_DISABLED');
      }
    }, 120_000);
    const inventory = (await placement.inventories(compute3)).VCPU!;
    expect(Math.floor((inventory.total - inventory.reserved) * inventory.allocation_ratio)).toBe(RACE_ROOM);
    const tiny = await flavor(sdk, 'r1.tiny', 1, 64, 1);
    let created: Server[] = [];
    try {
      created = await sdk.request<Server[]>({
        op: 'create_many',
        count,
        kwargs: { name: 'race', flavorRef: tiny, imageRef: cloud.imageId, networks: 'none' },
      });
      expect(created).toHaveLength(count);
      const settled: Server[] = [];
      for (const s of created) settled.push(await sdk.waitFor(s.id, 'ACTIVE', 600));
      const active = settled.filter((s) => s.status === 'ACTIVE');
      const failed = settled.filter((s) => s.status === 'ERROR');
      expect(active.map((s) => s.compute_host)).toEqual(Array(RACE_ROOM).fill('compute3'));
      expect(failed).toHaveLength(count - RACE_ROOM);
      for (const s of failed) expect(s.fault?.message).toMatch(/No valid host/);
      expect(await placement.usages(compute3)).toEqual({ VCPU: RACE_ROOM, MEMORY_MB: RACE_ROOM * 64, DISK_GB: RACE_ROOM });
      await expectPlacementMatchesServers(sdk, placement);
      await expectNoProviderOverCapacity(placement);
      await expectAuditClean(cloud);
    } finally {
      // Deleted whatever happened, so the next scenario starts from an empty cloud.
      for (const s of created) await sdk.compute('delete_server', [s.id]);
      for (const s of created) await sdk.waitDeleted(s.id);
      await sdk.setEnabled('compute1', true);
      await sdk.setEnabled('compute2', true);
      await sdk.setEnabled('compute3', false);
    }
    expect(await placement.usages(compute3)).toSatisfy(allZero);
  });
}
