// The Nova + Cyborg boot flow (as test/cyborg/nova-sequence.test.ts drives
// it: Nova's calls with its headers, a real HTTP server playing Nova) with a
// MIG profile device profile (docs/extensions-gpu.md): a stock Nova asks for
// resources_<group>=CUSTOM_MIG_3G_40GB:1, claims the first candidate, and
// Cyborg binds the ARQ to that GPU; once no GPU has the slices for the
// profile, the scheduler gets no candidate and the claim is refused.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bindBody, HOST, makeCyborgApp, startFakeNova, type CyborgTestApp } from '../cyborg/helpers.js';
import { h100DeviceReport, MIG_3G_PROFILE, migGpu } from './mig-h100.js';

const USER = { 'x-auth-token': 'u1:p1', 'x-roles': 'member,reader' };
const NOVA = { ...USER, 'x-service-token': 'nova', 'x-service-roles': 'service' };
/** nova-scheduler's report client: its own service token, placement 1.36 (Nova's current). */
const SCHEDULER = { 'x-auth-token': 'nova', 'x-roles': 'service' };

type Answer = {
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }>; mappings: Record<string, string[]> }[];
};

describe('Nova + Cyborg with a MIG profile device profile', () => {
  let t: CyborgTestApp;
  let nova: Awaited<ReturnType<typeof startFakeNova>>;
  let root: string;
  let gpus: string[];

  beforeEach(async () => {
    nova = await startFakeNova();
    t = await makeCyborgApp({ NOVA_URL: nova.url });
    root = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: HOST, uuid: root } })).status).toBe(200);
    expect(
      (
        await t.call('PUT', `/resource_providers/${root}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 64 }, MEMORY_MB: { total: 262144 } } },
        })
      ).status,
    ).toBe(200);
    gpus = [await migGpu(t, root), await migGpu(t, root)];
    const devices = h100DeviceReport(HOST, gpus, { bitstream_id: null });
    expect((await t.acc('PUT', `/hosts/${HOST}/devices`, { body: { devices } })).status).toBeLessThan(300);
    expect((await t.acc('POST', '/device_profiles', { body: MIG_3G_PROFILE })).status).toBe(201);
  });
  afterEach(async () => {
    t.close();
    await nova.close();
  });

  /** One boot as Nova does it: profile by name, candidates, claim of the first, ARQ create, bind, event. Returns the GPU used, or null (NoValidHost). */
  async function boot(instance: string): Promise<string | null> {
    const listed = (await (
      await t.acc('GET', '/device_profiles?name=mig-3g', { headers: { ...USER, 'openstack-api-version': '' } })
    ).json()) as {
      device_profiles: { groups: Record<string, string>[] }[];
    };
    // Nova turns each profile group into a granular request group with its own suffix.
    const group = listed.device_profiles[0]!.groups[0]!;
    const resources = Object.entries(group)
      .filter(([k]) => k.startsWith('resources:'))
      .map(([k, v]) => `${k.slice('resources:'.length)}:${v}`)
      .join(',');
    const query = `resources=VCPU:2,MEMORY_MB:4096&resources_mig-3g0=${resources}&group_policy=none&limit=1000`;
    const found = await t.call('GET', `/allocation_candidates?${query}`, { version: '1.36', headers: SCHEDULER });
    expect(found.status).toBe(200);
    const answer = (await found.json()) as Answer;
    if (!answer.allocation_requests.length) return null;
    const chosen = answer.allocation_requests[0]!;
    const claim = await t.call('PUT', `/allocations/${instance}`, {
      version: '1.36',
      headers: SCHEDULER,
      body: { allocations: chosen.allocations, project_id: crypto.randomUUID(), user_id: crypto.randomUUID(), consumer_generation: null },
    });
    expect(claim.status).toBe(204);
    const rp = chosen.mappings['_mig-3g0']![0]!;
    const created = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'mig-3g' }, headers: NOVA });
    expect(created.status).toBe(201);
    const { arqs } = (await created.json()) as { arqs: { uuid: string }[] };
    const patch = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, instance, rp), headers: NOVA });
    expect(patch.status).toBe(202);
    await t.jobs.queue.idle();
    const shown = (await (await t.acc('GET', `/accelerator_requests?instance=${instance}`, { headers: NOVA })).json()) as {
      arqs: { state: string; device_rp_uuid: string }[];
    };
    expect(shown.arqs[0]).toMatchObject({ state: 'Bound', device_rp_uuid: rp });
    return rp;
  }

  it('binds each 3g.40gb to a GPU where it fits, two per GPU, and the fifth boot finds no host', async () => {
    const used: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const rp = await boot(crypto.randomUUID());
      expect(rp).not.toBeNull();
      used.push(rp!);
    }
    expect(used.filter((rp) => rp === gpus[0]).length).toBe(2);
    expect(used.filter((rp) => rp === gpus[1]).length).toBe(2);
    expect(await boot(crypto.randomUUID())).toBeNull();
    expect(nova.calls.filter((c) => c.events[0]!.name === 'accelerator-request-bound')).toHaveLength(4);
  });

  it('a GPU whose slices another profile took is skipped: the instance lands on the one where the profile still fits', async () => {
    // A 4g.40gb and a 1g.10gb on the first GPU (each inventory still has room).
    const other = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      version: '1.36',
      headers: SCHEDULER,
      body: {
        allocations: { [gpus[0]!]: { resources: { CUSTOM_MIG_4G_40GB: 1, CUSTOM_MIG_1G_10GB: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
      },
    });
    expect(other.status).toBe(204);
    // Now the first GPU has 2 compute slices and 3 memory slices left: no 3g.40gb there.
    expect(await boot(crypto.randomUUID())).toBe(gpus[1]);
    expect(await boot(crypto.randomUUID())).toBe(gpus[1]);
    expect(await boot(crypto.randomUUID())).toBeNull();
  });
});
