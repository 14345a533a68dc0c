// Blazar's instance reservations still work beside holds (docs/holds.md):
// the calls of openstack/blazar's BlazarPlacementClient
// (blazar/utils/openstack/placement.py, microversion 1.29), in the order of
// an instance reservation's life, answer as Blazar expects (a 2xx where it
// checks `if resp`), and Nova's claim on the reservation class lands on the
// host's "blazar_<host>" child, with a hold on the same host's VCPU beside it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { PROJECT, USER } from './helpers.js';

const BLAZAR_MICROVERSION = '1.29';
const HOUR = 3600_000;

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

/** A Blazar call: its microversion, accept: application/json, as its keystoneauth adapter sends. */
const blazar = (method: string, path: string, body?: unknown) =>
  t.call(method, path, { version: BLAZAR_MICROVERSION, body, headers: { accept: 'application/json' } });

describe("Blazar's instance-reservation calls, beside a hold", () => {
  it('create the reservation class and provider, put its inventory at the start, claim on it, and tear it down', async () => {
    const hostName = 'compute-1';
    const made = await t.call('POST', '/resource_providers', { body: { name: hostName } });
    expect(made.status).toBe(200);
    const host = ((await made.json()) as { uuid: string }).uuid;
    expect(
      (
        await t.call('PUT', `/resource_providers/${host}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 16384 } } },
        })
      ).status,
    ).toBe(200);
    // A hold on the same host, in a window after the reservation's (the project is known through a consumer).
    const seed = await provider(t, { inventory: { VCPU: { total: 1 } } });
    const seedClaim = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [seed]: { resources: { VCPU: 1 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(seedClaim.status).toBe(204);
    const start = Date.now() + 2 * HOUR;
    const held = await t.call('POST', '/ext/holds', {
      body: {
        project_id: PROJECT,
        start: new Date(start).toISOString(),
        end: new Date(start + HOUR).toISOString(),
        allocations: { [host]: { resources: { VCPU: 4 } } },
      },
    });
    expect(held.status).toBe(201);

    // Reservation created: create_reservation_class.
    const reservation = crypto.randomUUID();
    const rc = `CUSTOM_RESERVATION_${reservation.toUpperCase().replaceAll('-', '_')}`;
    expect((await blazar('POST', '/resource_classes', { name: rc })).status).toBe(201);

    // Lease start: update_reservation_inventory (get the child by name, else create it under the host; then get and put its inventory).
    const byName = await blazar('GET', `/resource_providers?name=blazar_${hostName}`);
    expect(byName.status).toBe(200);
    expect(((await byName.json()) as { resource_providers: unknown[] }).resource_providers).toEqual([]);
    const hostRp = (await (await blazar('GET', `/resource_providers?name=${hostName}`)).json()) as {
      resource_providers: { uuid: string }[];
    };
    expect(hostRp.resource_providers[0]!.uuid).toBe(host);
    const child = await blazar('POST', '/resource_providers', { name: `blazar_${hostName}`, parent_provider_uuid: host });
    expect(child.status).toBe(200);
    const childUuid = ((await child.json()) as { uuid: string }).uuid;
    const current = (await (await blazar('GET', `/resource_providers/${childUuid}/inventories`)).json()) as {
      inventories: Record<string, unknown>;
      resource_provider_generation: number;
    };
    const put = await blazar('PUT', `/resource_providers/${childUuid}/inventories`, {
      inventories: {
        ...current.inventories,
        [rc]: { allocation_ratio: 1.0, max_unit: 1, min_unit: 1, reserved: 0, step_size: 1, total: 2 },
      },
      resource_provider_generation: current.resource_provider_generation,
    });
    expect(put.status).toBe(200);

    // Nova schedules a reserved flavor: the reservation class plus the host's own resources, one tree.
    const found = await t.call('GET', `/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024,${rc}:1`, { version: '1.29' });
    expect(found.status).toBe(200);
    const candidates = (await found.json()) as {
      allocation_requests: { allocations: Record<string, { resources: Record<string, number> }> }[];
    };
    expect(candidates.allocation_requests.length).toBe(1);
    const allocations = candidates.allocation_requests[0]!.allocations;
    expect(allocations[childUuid]!.resources).toEqual({ [rc]: 1 });
    const instance = crypto.randomUUID();
    const claimed = await t.call('PUT', `/allocations/${instance}`, {
      version: '1.29',
      body: { allocations, project_id: PROJECT, user_id: USER, consumer_generation: null },
    });
    expect(claimed.status).toBe(204);

    // Lease end: the instance goes, then delete_reservation_inventory, delete_reservation_class, delete_reservation_provider.
    expect((await t.call('DELETE', `/allocations/${instance}`)).status).toBe(204);
    expect((await blazar('DELETE', `/resource_providers/${childUuid}/inventories/${rc}`)).status).toBe(204);
    expect((await blazar('DELETE', `/resource_classes/${rc}`)).status).toBe(204);
    const again = (await (await blazar('GET', `/resource_providers?name=blazar_${hostName}`)).json()) as {
      resource_providers: { uuid: string }[];
    };
    expect((await blazar('DELETE', `/resource_providers/${again.resource_providers[0]!.uuid}`)).status).toBe(204);
    // The hold is untouched.
    const holds = (await (await t.call('GET', `/ext/holds?project_id=${PROJECT}`)).json()) as { holds: unknown[] };
    expect(holds.holds.length).toBe(1);
  });
});
