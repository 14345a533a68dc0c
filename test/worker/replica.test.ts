// Worker mode reads near its location: the same store the Worker entry opens
// (openWorkerStore), inside workerd, on a real sqld primary (behind a counting
// proxy) and a real sqld replica of it.
import { describe, expect, inject, it } from 'vitest';
import { instanceClaim, usedIn } from '../helpers/claims.js';
import { replicaIsolate } from './replica-isolate.js';

const hops = async () => ((await (await fetch(inject('replicaPrimaryHopsUrl'))).json()) as { hops: number }).hops;
const resetHops = () => fetch(inject('replicaPrimaryHopsUrl'), { method: 'DELETE' });

describe('Worker: reads from a replica near the isolate', () => {
  it('answers candidates from the replica once it has caught up, and always includes its own writes', async () => {
    const { store, call } = await replicaIsolate({ PLACEMENT_DB_READ_URL: inject('replicaUrl') });
    const rp = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `rp-${rp}`, uuid: rp })).status).toBe(200);
    const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
    expect((await call('PUT', `/resource_providers/${rp}/inventories`, inventory)).status).toBe(200);
    const query = `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`;
    // Own writes first: each claim shows in the very next answer.
    for (let used = 1; used <= 5; used += 1) {
      const claim = await call('PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(rp, { VCPU: 1 }));
      expect(claim.status).toBe(204);
      expect(usedIn(await (await call('GET', query)).json(), rp, 'VCPU')).toBe(used);
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
