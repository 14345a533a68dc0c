// docs/openstack.md's cut-over, done exactly as written on a cloud that runs servers on
// OpenStack Placement 8.0.0: stop Nova's services, `placement-admin import --verify` into
// placement-edge's database, start placement-edge, point the catalog's placement endpoint at
// it (`openstack endpoint set --url`), start Nova again. Nothing is lost: every server keeps
// its allocations with their generations, Nova carries on (a new server, a resize, a delete)
// against placement-edge, the audit is clean, and the old placement gets no write after the
// stop (its providers' generations and usages stay as they were).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { adminLoginArgs } from '../helpers/keystone.js';
import { eventually, expectPlacementMatchesServers, openstack, PlacementReader, type Server } from './cloud-session.js';
import { bootServers, describeCloud, expectAuditClean } from './scenarios.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const STEP = { timeout: 600_000 };

type Snapshot = Record<string, { generation: number; usages: Record<string, number> }>;

/** Every provider's generation and usages, by name: what a write would change. */
async function snapshot(placement: PlacementReader): Promise<Snapshot> {
  const out: Snapshot = {};
  const { resource_providers } = await placement.get<{ resource_providers: { uuid: string; name: string; generation: number }[] }>(
    '/resource_providers',
  );
  for (const p of resource_providers) out[p.name] = { generation: p.generation, usages: await placement.usages(p.uuid) };
  return out;
}

describeCloud('8.0.0', 'the cut-over from Placement 8.0.0 to placement-edge, servers running', (ctx) => {
  let oldUrl = '';
  let old: PlacementReader;
  let edge: PlacementReader;
  let small = '';
  const ids: string[] = [];
  const allocationsBefore: Record<string, unknown> = {};
  let oldAtStop: Snapshot;
  const check = () => expectPlacementMatchesServers(ctx().sdk, edge);

  it('boots 3 servers on Placement 8.0.0 (compute3 disabled)', STEP, async () => {
    const { sdk, cloud } = ctx();
    oldUrl = cloud.placementUrl;
    old = new PlacementReader({ ...cloud, placementUrl: oldUrl });
    await sdk.setEnabled('compute3', false);
    small = (await sdk.compute<{ id: string }>('create_flavor', [], { name: 'm1.small', vcpus: 1, ram: 128, disk: 1 })).id;
    ids.push(...(await bootServers(sdk, cloud, small, 3)));
    await expectPlacementMatchesServers(sdk, old);
    for (const id of ids) allocationsBefore[id] = await old.allocations(id);
  });

  it('stops Nova, imports with --verify, starts placement-edge on what was imported', STEP, async () => {
    const { cloud } = ctx();
    await cloud.stopNova();
    oldAtStop = await snapshot(old);
    const dbFile = join(cloud.dir, 'placement-edge-cut-over.db');
    const imported = await run(
      process.execPath,
      [join(ROOT, 'bin', 'placement-admin.js'), 'import', '--from', oldUrl, ...adminLoginArgs(cloud.keystone.url), '--verify'],
      { cwd: ROOT, env: { ...process.env, PLACEMENT_DB_URL: `file:${dbFile}` }, timeout: 300_000 },
    );
    expect(imported.stdout).toMatch(/verify: the source and the target agree/);
    const edgeUrl = await cloud.startPlacementEdge(dbFile);
    edge = new PlacementReader({ ...cloud, placementUrl: edgeUrl });
    cloud.placementUrl = edgeUrl;
    expect(await snapshot(edge)).toEqual(oldAtStop);
  });

  it('points the catalog at placement-edge (openstack endpoint set --url)', STEP, async () => {
    const { cloud } = ctx();
    const endpoints = (await openstack(cloud, ['endpoint', 'list', '--service', 'placement', '-f', 'value', '-c', 'ID']))
      .split('\n')
      .filter(Boolean);
    expect(endpoints.length).toBeGreaterThan(0);
    for (const id of endpoints) await openstack(cloud, ['endpoint', 'set', '--url', cloud.placementUrl, id]);
    const urls = (await openstack(cloud, ['endpoint', 'list', '--service', 'placement', '-f', 'value', '-c', 'URL']))
      .split('\n')
      .filter(Boolean);
    expect(new Set(urls)).toEqual(new Set([cloud.placementUrl]));
  });

  it("starts Nova again: every server's allocations are as they were, on placement-edge", STEP, async () => {
    const { cloud } = ctx();
    const restarted = Date.now();
    await cloud.startNova();
    // Each nova-compute has reported since its restart (its heartbeat), so it runs against the new catalog.
    const token = await cloud.keystone.adminToken();
    await eventually(async () => {
      const res = await fetch(`${cloud.novaUrl}/os-services?binary=nova-compute`, { headers: { 'x-auth-token': token } });
      const { services } = (await res.json()) as { services: { host: string; state: string; updated_at: string | null }[] };
      for (const s of services) {
        expect(s.state, s.host).toBe('up');
        expect(Date.parse(`${s.updated_at}Z`), s.host).toBeGreaterThan(restarted);
      }
    }, 300_000);
    for (const id of ids) expect(await edge.allocations(id)).toEqual(allocationsBefore[id]);
    await check();
  });

  it('Nova carries on against placement-edge; the old placement gets nothing after the stop', STEP, async () => {
    const { sdk, cloud } = ctx();
    const large = (await sdk.compute<{ id: string }>('create_flavor', [], { name: 'm1.large', vcpus: 2, ram: 256, disk: 2 })).id;
    const added = await sdk.compute<Server>('create_server', [], {
      name: 'after',
      flavorRef: small,
      imageRef: cloud.imageId,
      networks: 'none',
    });
    await sdk.waitActive(added.id);
    expect(Object.keys(await edge.allocations(added.id))).toHaveLength(1);
    await sdk.compute('resize_server', [ids[0], large]);
    await sdk.waitFor(ids[0]!, 'VERIFY_RESIZE');
    await sdk.compute('confirm_server_resize', [ids[0]]);
    expect((await sdk.waitActive(ids[0]!)).flavor.vcpus).toBe(2);
    await sdk.compute('delete_server', [ids[1]]);
    await sdk.waitDeleted(ids[1]!);
    await eventually(check, 60_000);
    await expectAuditClean(cloud);
    expect(await snapshot(old)).toEqual(oldAtStop);
    expect(await old.allocations(added.id)).toEqual({});
  });
});
