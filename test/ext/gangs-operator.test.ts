// What docs/gangs.md tells an operator, as they meet it: racks built with the documented
// aggregate calls become domains; a claim without `domain` is not held to one (members in two
// racks are claimed, as documented); and each refusal says what is wrong: a domain no host is
// in, a provider that does not exist, and, of a stale consumer generation, only the stale member.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim } from './helpers.js';
import { claimGang, gangCandidates, hostsOf } from './gangs-helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

/** docs/gangs.md "Building racks": each host's root provider put in its rack's aggregate (PUT .../aggregates at 1.19). */
async function putInRack(host: string, rack: string): Promise<void> {
  const got = await t.call('GET', `/resource_providers/${host}/aggregates`, { version: '1.19' });
  const { aggregates, resource_provider_generation } = (await got.json()) as { aggregates: string[]; resource_provider_generation: number };
  const res = await t.call('PUT', `/resource_providers/${host}/aggregates`, {
    version: '1.19',
    body: { aggregates: [...aggregates, rack], resource_provider_generation },
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function twoRacks(): Promise<{ racks: string[]; hosts: string[][] }> {
  const racks = [crypto.randomUUID(), crypto.randomUUID()].sort();
  const hosts: string[][] = [[], []];
  for (const [i, rack] of racks.entries()) {
    for (let h = 0; h < 2; h += 1) {
      const host = await provider(t, { inventory: { VCPU: { total: 4 } } });
      await putInRack(host, rack);
      hosts[i]!.push(host);
    }
  }
  return { racks, hosts };
}

const members = (allocations: Record<string, number>[], hosts: string[], consumers = hosts.map(() => crypto.randomUUID())) =>
  Object.fromEntries(
    consumers.map((consumer, i) => [
      consumer,
      {
        allocations: { [hosts[i]!]: { resources: allocations[i]! } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    ]),
  );

describe('racks and domains as docs/gangs.md builds them', () => {
  it('hosts put in an aggregate per rack are found as gangs inside each rack', async () => {
    const { racks, hosts } = await twoRacks();
    const body = await gangCandidates(t, 'count=2&resources=VCPU:1');
    expect(body.gangs.map((g) => g.domain).sort()).toEqual(racks);
    for (const gang of body.gangs) expect(new Set(hostsOf(gang))).toEqual(new Set(hosts[racks.indexOf(gang.domain!)]));
  });

  it('claims a gang without `domain` across racks (the claim checks no domain), and refuses it with one', async () => {
    const { racks, hosts } = await twoRacks();
    const across = [hosts[0]![0]!, hosts[1]![0]!];
    const withDomain = await t.call('POST', '/ext/gangs', {
      body: { domain: racks[0], members: members([{ VCPU: 1 }, { VCPU: 1 }], across) },
    });
    expect(withDomain.status).toBe(400);
    expect((await errorOf(withDomain)).detail).toMatch(/is not on a host of domain/);
    const without = await t.call('POST', '/ext/gangs', { body: { members: members([{ VCPU: 1 }, { VCPU: 1 }], across) } });
    expect(without.status).toBe(204);
  });
});

describe('refusals that say what is wrong', () => {
  it('an aggregate no host is in: the domain named as such, not a member "not on a host of" it', async () => {
    const { hosts } = await twoRacks();
    const unknown = crypto.randomUUID();
    const res = await t.call('POST', '/ext/gangs', { body: { domain: unknown, members: members([{ VCPU: 1 }, { VCPU: 1 }], hosts[0]!) } });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain(
      `Gang not claimed (nothing written): domain ${unknown} is not an aggregate any host is in (no root provider is a member of it)`,
    );
  });

  it("a provider that does not exist: placement's own words for it, naming the member", async () => {
    const { racks, hosts } = await twoRacks();
    const ghost = crypto.randomUUID();
    const consumers = [crypto.randomUUID(), crypto.randomUUID()];
    const res = await t.call('POST', '/ext/gangs', {
      body: { domain: racks[0], members: members([{ VCPU: 1 }, { VCPU: 1 }], [hosts[0]![0]!, ghost], consumers) },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain(
      `Gang not claimed (nothing written): member ${consumers[1]}: Allocation for resource provider '${ghost}' that does not exist.`,
    );
  });

  it('a stale consumer generation: the 409 names the stale member only', async () => {
    await twoRacks();
    const gang = (await gangCandidates(t, 'count=2&resources=VCPU:1')).gangs[0]!;
    const [fresh, stale] = [crypto.randomUUID(), crypto.randomUUID()];
    // `stale` exists already (generation 1): the gang's generation null for it is stale, for `fresh` right.
    expect((await claim(t, gang.allocation_requests[1]!.allocations, stale)).status).toBe(204);
    const res = await claimGang(t, gang, {}, [fresh, stale]);
    expect(res.status).toBe(409);
    const error = await errorOf(res);
    expect(error.code).toBe('placement.concurrent_update');
    expect(error.detail).toContain(
      `Gang not claimed (nothing written): member ${stale}: consumer generation conflict - expected 1 but got null`,
    );
    expect(error.detail).not.toContain(fresh);
  });
});
