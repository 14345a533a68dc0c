// Preemption on a real Nova 26 (docs/preemption.md "A reaper for OpenStack"): a "spot" project
// of default priority 0 fills an aggregate (compute3, the other hosts disabled); a project of
// priority 100 asks /ext/preemption_candidates for its flavor, posts /ext/preemptions, and the
// agent's reaper (agent/src/reaper/, signed in through Keystone, Nova's endpoint from the
// catalog) deletes exactly the returned victims through Nova; once their allocations are gone it
// releases the nomination and the high-priority boot, through Nova unchanged, goes ACTIVE there.
// Nova's [scheduler] section is the cloud's as started (scripts/openstack-cloud.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { main } from '../../agent/src/main.js';
import { RACE_ROOM } from '../../scripts/openstack-cloud.js';
import { waitUntil } from '../helpers/wait.js';
import {
  eventually,
  expectNoProviderOverCapacity,
  expectPlacementMatchesServers,
  openstack,
  SdkSession,
  type Server,
} from './cloud-session.js';
import { type CloudContext, describeCloud, expectAuditClean } from './scenarios.js';

const STEP = { timeout: 600_000 };

describeCloud('edge', 'preemption on a real Nova: the reaper deletes the victims, the high-priority boot goes ACTIVE', (ctx) => {
  preemptionScenario(ctx);
});

interface Candidate {
  allocations: Record<string, { resources: Record<string, number> }>;
  victims: { consumer_uuid: string; project_id: string; priority: number }[];
  cost: { victims: number };
}

function preemptionScenario(ctx: () => CloudContext): void {
  const sessions: SdkSession[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'reaper-state-'));
  afterAll(() => {
    for (const s of sessions) s.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  /** placement-edge's /ext API as the cloud admin (Keystone token). */
  const ext = async <T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const { cloud } = ctx();
    const res = await fetch(`${cloud.placementUrl}${path}`, {
      method,
      headers: {
        'x-auth-token': await cloud.keystone.adminToken(),
        'openstack-api-version': 'placement latest',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };

  /** An SDK session as the admin user in `project` (its servers are that project's). */
  const sessionIn = async (project: string): Promise<{ sdk: SdkSession; projectId: string }> => {
    const { cloud } = ctx();
    const projectId = (await openstack(cloud, ['project', 'create', project, '-f', 'value', '-c', 'id'])).trim();
    await openstack(cloud, ['role', 'add', '--project', project, '--user', 'admin', 'admin']);
    const sdk = new SdkSession({ ...cloud.adminEnv, OS_PROJECT_NAME: project });
    sessions.push(sdk);
    return { sdk, projectId };
  };

  it(
    `fills an aggregate with ${RACE_ROOM} spot servers, asks for room for a high-priority flavor, and the reaper frees exactly the victims`,
    STEP,
    async () => {
      const { sdk, cloud, placement } = ctx();
      const schedulerBefore = sectionOf(readFileSync(cloud.novaConf, 'utf8'), 'scheduler');
      await sdk.setEnabled('compute1', false);
      await sdk.setEnabled('compute2', false);
      const compute3 = await placement.providerUuid('compute3');
      // A Nova host aggregate of compute3, which Nova mirrors into placement.
      const aggregate = await sdk.compute<{ id: number; uuid: string }>('create_aggregate', [], { name: 'spot-capacity' });
      await sdk.compute('add_host_to_aggregate', [aggregate.id, 'compute3']);
      await eventually(async () => {
        const { aggregates } = await placement.get<{ aggregates: string[] }>(`/resource_providers/${compute3}/aggregates`);
        expect(aggregates).toContain(aggregate.uuid);
        for (const host of ['compute1', 'compute2'])
          expect(await placement.traits(await placement.providerUuid(host))).toContain('COMPUTE_STATUS_DISABLED');
      }, 120_000);

      const spot = await sessionIn('spot');
      const gold = await sessionIn('gold');
      expect((await ext('PUT', `/ext/priorities/${spot.projectId}`, { priority: 0 })).status).toBe(200);
      expect((await ext('PUT', `/ext/priorities/${gold.projectId}`, { priority: 100 })).status).toBe(200);
      const tiny = (await sdk.compute<{ id: string }>('create_flavor', [], { name: 'spot.tiny', vcpus: 1, ram: 64, disk: 1 })).id;
      const pair = (await sdk.compute<{ id: string }>('create_flavor', [], { name: 'gold.pair', vcpus: 2, ram: 128, disk: 1 })).id;

      // The spot project fills compute3.
      const spotServers: string[] = [];
      for (let i = 0; i < RACE_ROOM; i++) {
        const s = await spot.sdk.compute<Server>('create_server', [], {
          name: `spot${i}`,
          flavorRef: tiny,
          imageRef: cloud.imageId,
          networks: 'none',
        });
        spotServers.push(s.id);
      }
      for (const id of spotServers) expect((await spot.sdk.waitActive(id)).compute_host).toBe('compute3');
      expect((await placement.usages(compute3)).VCPU).toBe(RACE_ROOM);
      // No room: a stock search finds none in the aggregate.
      const query = `resources=VCPU:2,MEMORY_MB:128,DISK_GB:1&member_of=${aggregate.uuid}`;
      expect((await placement.get<{ allocation_requests: unknown[] }>(`/allocation_candidates?${query}`)).allocation_requests).toEqual([]);

      // Where, and whom to evict.
      const found = await ext<{ allocation_requests: Candidate[] }>('GET', `/ext/preemption_candidates?${query}&ext_priority=100&limit=1`);
      expect(found.status).toBe(200);
      const [candidate] = found.body.allocation_requests;
      expect(Object.keys(candidate!.allocations)).toEqual([compute3]);
      const victims = candidate!.victims.map((v) => v.consumer_uuid);
      expect(victims).toHaveLength(2);
      for (const v of candidate!.victims) expect(v).toMatchObject({ project_id: spot.projectId, priority: 0 });
      for (const v of victims) expect(spotServers).toContain(v);
      const survivor = spotServers.find((id) => !victims.includes(id))!;

      // The reaper, as an operator runs it: the agent's command, signed in through Keystone.
      const lines: Record<string, unknown>[] = [];
      const warnings: string[] = [];
      const stop = new AbortController();
      const env = cloud.adminEnv;
      const reaper = main(['reaper'], {
        out: (text) => lines.push(JSON.parse(text) as Record<string, unknown>),
        err: (text) => warnings.push(text),
        env: {
          PLACEMENT_AGENT_AUTH_URL: env.OS_AUTH_URL,
          PLACEMENT_AGENT_USERNAME: env.OS_USERNAME,
          PLACEMENT_AGENT_PASSWORD: env.OS_PASSWORD,
          PLACEMENT_AGENT_PROJECT_NAME: env.OS_PROJECT_NAME,
          PLACEMENT_AGENT_REGION_NAME: env.OS_REGION_NAME,
          PLACEMENT_AGENT_REAPER_STATE_FILE: join(stateDir, 'state.json'),
          PLACEMENT_AGENT_REAPER_WAIT_SECONDS: '10',
        },
        signal: stop.signal,
      });
      const actions = (action: string) => lines.filter((l) => l.action === action);
      try {
        // The preemptor's consumer is a name the operator gives: Nova chooses the new server's uuid at
        // the boot, and the reaper releases the nomination to the project once the victims are gone.
        const made = await ext<{ id: string; hold_uuid: string }>('POST', '/ext/preemptions', {
          preemptor: { consumer_uuid: crypto.randomUUID(), project_id: gold.projectId, allocations: candidate!.allocations },
          victims,
          grace_seconds: 300,
        });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        await waitUntil(
          'the reaper releasing the nomination',
          () => actions('nomination_released').length === 1 || warnings.some((w) => w.startsWith('error')),
          300_000,
          500,
        );
        expect(warnings).toEqual([]);
        expect(
          actions('delete_server')
            .map((l) => [l.server, l.result, l.within_grace])
            .sort(),
        ).toEqual(victims.map((v) => [v, 'accepted', true]).sort());
        expect(
          actions('victim_released')
            .map((l) => l.server)
            .sort(),
        ).toEqual([...victims].sort());
        expect(actions('nomination_released')).toEqual([expect.objectContaining({ preemption: made.body.id, hold: made.body.hold_uuid })]);
      } finally {
        stop.abort();
        expect(await reaper).toBe(0);
      }
      for (const v of victims) await sdk.waitDeleted(v);
      expect((await spot.sdk.waitActive(survivor)).compute_host).toBe('compute3');

      // The high-priority boot, through Nova unchanged: ACTIVE on compute3, no NoValidHost.
      const boot = await gold.sdk.compute<Server>('create_server', [], {
        name: 'gold0',
        flavorRef: pair,
        imageRef: cloud.imageId,
        networks: 'none',
      });
      const booted = await gold.sdk.waitFor(boot.id, 'ACTIVE', 300);
      expect(booted.fault?.message ?? '').not.toMatch(/No valid host/);
      expect(booted.status).toBe('ACTIVE');
      expect(booted.compute_host).toBe('compute3');
      expect(await placement.usages(compute3)).toEqual({ VCPU: RACE_ROOM, MEMORY_MB: 64 + 128, DISK_GB: 2 });
      await expectPlacementMatchesServers(sdk, placement);
      await expectNoProviderOverCapacity(placement);
      await expectAuditClean(cloud);
      // Nova's scheduler is as the cloud started it: no filter, weigher or option added for this.
      expect(sectionOf(readFileSync(cloud.novaConf, 'utf8'), 'scheduler')).toEqual(schedulerBefore);
      expect(schedulerBefore).toEqual({ workers: '1', discover_hosts_in_cells_interval: '-1', max_attempts: '3' });

      for (const id of [survivor, boot.id]) await sdk.compute('delete_server', [id]);
      for (const id of [survivor, boot.id]) await sdk.waitDeleted(id);
    },
  );
}

/** One section of an ini file, as key -> value. */
function sectionOf(text: string, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  let inside = false;
  for (const line of text.split('\n')) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(line);
    if (header) {
      inside = header[1] === name;
      continue;
    }
    const pair = /^\s*([^#;=\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line);
    if (inside && pair) out[pair[1]!] = pair[2]!;
  }
  return out;
}
