// Builds providers over the API for candidate tests: inventory, traits and
// aggregates as given, each write with the generation it expects.
import { expect } from 'vitest';
import type { Random } from './random.js';
import type { TestApp } from './test-app.js';

export type InventorySpec = Record<
  string,
  {
    total: number;
    reserved?: number;
    allocation_ratio?: number;
    min_unit?: number;
    max_unit?: number;
    step_size?: number;
  }
>;

/**
 * An inventory of one to three of `classes`, random totals, reserved and ratios; with `units`, random
 * min_unit and max_unit too. Draws from `r` in the order written, so a seed replays the same clouds.
 */
export function randomInventory(r: Random, classes: readonly string[], { units = true, stepChance = 0.15 } = {}): InventorySpec {
  const spec: InventorySpec = {};
  for (const name of r.some(classes, 3)) {
    const total = r.pick([1, 2, 4, 8, 16]);
    spec[name] = {
      total,
      reserved: r.chance(0.2) ? r.int(0, Math.min(2, total)) : 0,
      allocation_ratio: r.pick([1, 1, 1.5, 2]),
      ...(units ? { min_unit: r.chance(0.15) ? 2 : 1, max_unit: r.chance(0.2) ? Math.max(2, Math.floor(total / 2)) : total * 2 } : {}),
      step_size: r.chance(stepChance) ? 2 : 1,
    };
  }
  return spec;
}

export interface ProviderSpec {
  parent?: string;
  inventory?: InventorySpec;
  traits?: string[];
  aggregates?: string[];
}

export async function provider(app: TestApp, opts: ProviderSpec = {}): Promise<string> {
  const uuid = crypto.randomUUID();
  const made = await app.call('POST', '/resource_providers', { body: { name: `rp-${uuid}`, uuid, parent_provider_uuid: opts.parent } });
  expect(made.status).toBe(200);
  let generation = 0;
  if (opts.inventory) {
    const res = await app.call('PUT', `/resource_providers/${uuid}/inventories`, {
      body: { resource_provider_generation: generation, inventories: opts.inventory },
    });
    expect(res.status).toBe(200);
    generation += 1;
  }
  if (opts.traits) {
    for (const name of opts.traits.filter((n) => n.startsWith('CUSTOM_'))) await app.call('PUT', `/traits/${name}`);
    const res = await app.call('PUT', `/resource_providers/${uuid}/traits`, {
      body: { resource_provider_generation: generation, traits: opts.traits },
    });
    expect(res.status).toBe(200);
    generation += 1;
  }
  if (opts.aggregates) {
    const res = await app.call('PUT', `/resource_providers/${uuid}/aggregates`, {
      body: { resource_provider_generation: generation, aggregates: opts.aggregates },
    });
    expect(res.status).toBe(200);
  }
  return uuid;
}
