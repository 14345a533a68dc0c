// Builds providers over the API for candidate tests: inventory, traits and
// aggregates as given, each write with the generation it expects.
import { expect } from 'vitest';
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
