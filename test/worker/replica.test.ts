// Worker mode reads near its location: the same store the Worker entry opens
// (openWorkerStore), inside workerd, on a real sqld primary (behind a counting
// proxy) and a real sqld replica of it.
import { describe, expect, inject, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { prepareDatabase } from '../../src/entry/prepare-database.js';
import { openWorkerStore } from '../../src/entry/worker.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const hops = async () => ((await (await fetch(inject('replicaPrimaryHopsUrl'))).json()) as { hops: number }).hops;
const resetHops = () => fetch(inject('replicaPrimaryHopsUrl'), { method: 'DELETE' });

describe('Worker: reads from a replica near the isolate', () => {
  it('answers candidates from the replica once it has caught up, and always includes its own writes', async () => {
    const config = loadConfig({
      PLACEMENT_DB_URL: inject('replicaPrimaryUrl'),
      PLACEMENT_DB_READ_URL: inject('replicaUrl'),
      PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
    });
    const store = openWorkerStore(config, silent);
    await prepareDatabase(store.client);
    const app = createApp(makeDeps(store, config, silent));
    const call = (method: string, path: string, body?: unknown) =>
      app.request(path, {
        method,
        headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const rp = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `rp-${rp}`, uuid: rp })).status).toBe(200);
    const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
    expect((await call('PUT', `/resource_providers/${rp}/inventories`, inventory)).status).toBe(200);
    const query = `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`;
    // Own writes first: each claim shows in the very next answer.
    for (let used = 1; used <= 5; used += 1) {
      const claim = await call('PUT', `/allocations/${crypto.randomUUID()}`, {
        allocations: { [rp]: { resources: { VCPU: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      });
      expect(claim.status).toBe(204);
      const answer = (await (await call('GET', query)).json()) as {
        provider_summaries: Record<string, { resources: { VCPU: { used: number } } }>;
      };
      expect(answer.provider_summaries[rp]?.resources.VCPU.used).toBe(used);
    }
    // Once the replica has caught up, a candidates request makes no round trip to the primary.
    const counts = store.replica!.counts;
    // Bounded by the clock, not by a count of polls: how long the replica takes to catch up depends on the machine's load.
    let fromReplica = false;
    const deadline = Date.now() + 20_000;
    while (!fromReplica && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      await resetHops();
      const before = counts.replica;
      expect((await call('GET', query)).status).toBe(200);
      fromReplica = counts.replica > before && (await hops()) === 0;
    }
    expect(fromReplica, 'a candidates request answered by the replica with no round trip to the primary, within 20 s').toBe(true);
    store.close();
  });
});
