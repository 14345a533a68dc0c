// Two databases served by one process, each by an app of its own: each
// preemption search answers with its own database's victims, even where both
// databases claim the same identity (copied from one template: the same epoch
// token) and went through writes of the same shape (the same allocation ids,
// providers, classes and units, so the same usage signatures), where only the
// consumers differ. The allocations the search keeps in memory between
// requests are the app's (ext/preemption/cloud.ts), never another app's.
import { expect, it } from 'vitest';
import { EPOCH } from '../../src/db/columns.js';
import { appAllocationIndexes } from '../../src/ext/preemption/cloud.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { preemptionHelpers } from './helpers.js';

interface Cloud {
  t: TestApp;
  hosts: string[];
  /** The one preemptible consumer, and the host it fills. */
  victim: string;
  victimHost: string;
}

/** Two full hosts of 8 VCPU: one filled by a consumer of priority 1, the other by one without a priority (never a victim). */
async function cloud(victimOnFirstHost: boolean): Promise<Cloud> {
  const t = await makeTestApp();
  const { victimOn } = preemptionHelpers(() => t);
  const hosts = [await provider(t, { inventory: { VCPU: { total: 8 } } }), await provider(t, { inventory: { VCPU: { total: 8 } } })];
  // Written in the same order in both databases: allocation ids, providers and units match, only the consumers differ.
  const first = await victimOn(hosts[0]!, 8, victimOnFirstHost ? 1 : null);
  const second = await victimOn(hosts[1]!, 8, victimOnFirstHost ? null : 1);
  return victimOnFirstHost ? { t, hosts, victim: first, victimHost: hosts[0]! } : { t, hosts, victim: second, victimHost: hosts[1]! };
}

/** The requests a preemptor of priority 10 is offered for 8 VCPU: host and victims of each. */
async function offered(c: Cloud): Promise<{ host: string; victims: string[] }[]> {
  const res = await c.t.call('GET', '/ext/preemption_candidates?resources=VCPU:8&ext_priority=10');
  expect(res.status, await res.clone().text()).toBe(200);
  const body = (await res.json()) as {
    allocation_requests: { allocations: Record<string, unknown>; victims: { consumer_uuid: string }[] }[];
  };
  return body.allocation_requests.map((r) => ({ host: Object.keys(r.allocations)[0]!, victims: r.victims.map((v) => v.consumer_uuid) }));
}

it("each app's preemption search reads its own database's allocations, even where two databases claim the same identity and usage", async () => {
  const first = await cloud(true);
  const second = await cloud(false);
  try {
    expect(appAllocationIndexes(first.t.deps.extensions)).not.toBe(appAllocationIndexes(second.t.deps.extensions));
    // A copied database keeps the epoch token of its template: make the two say the same, so the index's check that it
    // reads the database it was built from cannot tell them apart.
    for (const { t } of [first, second]) await t.deps.store.client.execute(`UPDATE placement_epoch SET ${EPOCH.token} = 'copied'`);
    for (const c of [first, second, first, second]) expect(await offered(c)).toEqual([{ host: c.victimHost, victims: [c.victim] }]);
  } finally {
    first.t.close();
    second.t.close();
  }
});
