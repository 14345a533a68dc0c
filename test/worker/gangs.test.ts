// Gangs inside workerd against sqld: GET /ext/gang_candidates finds three
// hosts of one rack aggregate, POST /ext/gangs claims them in one batch, and
// a second claim of the same gang is refused whole (nothing partial written),
// and why-no-host then names the rack and what each host lacks.
// The database is shared with the other worker files: a CUSTOM class and an
// aggregate of its own keep other files' providers out.
import { describe, expect, it } from 'vitest';
import { adminCall, uniqueSuffix as suffix } from './admin-call.js';

const call = adminCall;

interface Gangs {
  gangs: { domain: string; allocation_requests: { allocations: Record<string, { resources: Record<string, number> }> }[] }[];
}

describe('gangs in workerd', { timeout: 120_000 }, () => {
  it('finds a gang inside one rack and claims it all or none', async () => {
    const rc = `CUSTOM_GANG_${suffix()}`;
    expect((await call('PUT', `/resource_classes/${rc}`)).status).toBeLessThan(300);
    const rack = crypto.randomUUID();
    const hosts: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const uuid = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `gang-${uuid}`, uuid })).status).toBe(200);
      const inv = await call('PUT', `/resource_providers/${uuid}/inventories`, {
        resource_provider_generation: 0,
        inventories: { [rc]: { total: 4 } },
      });
      expect(inv.status).toBe(200);
      const agg = await call('PUT', `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: 1, aggregates: [rack] });
      expect(agg.status).toBe(200);
      hosts.push(uuid);
    }
    const query = `/ext/gang_candidates?count=3&resources=${rc}:3&ext_domain_member_of=in:${rack}`;
    const found = (await (await call('GET', query)).json()) as Gangs;
    expect(found.gangs).toHaveLength(1);
    const gang = found.gangs[0]!;
    expect(gang.domain).toBe(rack);
    expect(gang.allocation_requests.map((r) => Object.keys(r.allocations)[0]).sort()).toEqual([...hosts].sort());
    const members = (consumers: string[]) =>
      Object.fromEntries(
        gang.allocation_requests.map((r, i) => [
          consumers[i]!,
          { allocations: r.allocations, project_id: 'p', user_id: 'u', consumer_generation: null, consumer_type: 'INSTANCE' },
        ]),
      );
    const first = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    expect((await call('POST', '/ext/gangs', { domain: rack, members: members(first) })).status).toBe(204);
    const second = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const refused = await call('POST', '/ext/gangs', { domain: rack, members: members(second) });
    expect(refused.status).toBe(409);
    for (const consumer of second) {
      const allocs = (await (await call('GET', `/allocations/${consumer}`)).json()) as { allocations: object };
      expect(allocs.allocations).toEqual({});
    }
    expect(((await (await call('GET', query)).json()) as Gangs).gangs).toEqual([]);
    // Why no gang now: the rack is the best domain, 3 hosts short, each host's free 1 of 4 named.
    const why = await call('GET', `/diagnostics/allocation_candidates?count=3&resources=${rc}:3&ext_domain_member_of=in:${rack}`);
    expect(why.status).toBe(200);
    const { gang: verdict } = (await why.json()) as {
      gang: {
        domains_that_fit: number;
        best_domain: { domain: string; hosts_short: number; hosts_that_do_not_fit: { failed_at: { reason: string } }[] };
      };
    };
    expect(verdict.domains_that_fit).toBe(0);
    expect(verdict.best_domain).toMatchObject({ domain: rack, hosts_short: 3 });
    expect(verdict.best_domain.hosts_that_do_not_fit.map((v) => v.failed_at.reason).sort()).toEqual(
      [...hosts].sort().map((h) => `${rc}: needs 3, free 1 on ${h}`),
    );
  });
});
