// Direct-to-database setup for allocation tests: a provider with inventory,
// without depending on the provider/inventory endpoints under test elsewhere.
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Deps } from '../../src/deps.js';
import { allocations, inventories, resourceProviders } from '../../src/db/schema/index.js';
import { resourceClassIdsByName } from '../../src/placement/repo/lookups.js';

export interface SeedInventory {
  total: number;
  reserved?: number;
  minUnit?: number;
  maxUnit?: number;
  stepSize?: number;
  allocationRatio?: number;
}

export async function seedProvider(
  deps: Deps,
  inventory: Record<string, SeedInventory>,
  opts: { uuid?: string; name?: string; parentUuid?: string } = {},
): Promise<{ id: number; uuid: string }> {
  const uuid = opts.uuid ?? randomUUID();
  return deps.store.writeTx(async (tx) => {
    let parentId: number | null = null;
    let rootId: number | null = null;
    if (opts.parentUuid) {
      const parent = (await tx.select().from(resourceProviders).where(eq(resourceProviders.uuid, opts.parentUuid)))[0]!;
      parentId = parent.id;
      rootId = parent.rootProviderId ?? parent.id;
    }
    const [row] = await tx
      .insert(resourceProviders)
      .values({ uuid, name: opts.name ?? `rp-${uuid}`, parentProviderId: parentId, rootProviderId: rootId })
      .returning();
    if (rootId === null) await tx.update(resourceProviders).set({ rootProviderId: row!.id }).where(eq(resourceProviders.id, row!.id));
    const classIds = await resourceClassIdsByName(tx, Object.keys(inventory));
    for (const [rc, inv] of Object.entries(inventory)) {
      await tx.insert(inventories).values({
        resourceProviderId: row!.id,
        resourceClassId: classIds.get(rc)!,
        total: inv.total,
        reserved: inv.reserved ?? 0,
        minUnit: inv.minUnit ?? 1,
        maxUnit: inv.maxUnit ?? inv.total,
        stepSize: inv.stepSize ?? 1,
        allocationRatio: inv.allocationRatio ?? 1,
      });
    }
    return { id: row!.id, uuid };
  });
}

/** Sum of `used` per resource class on a provider, straight from the table. */
export async function usageOf(deps: Deps, providerId: number): Promise<Record<string, number>> {
  const rows = await deps.store.db.select().from(allocations).where(eq(allocations.resourceProviderId, providerId));
  const names = new Map((await deps.store.db.query.resourceClasses.findMany()).map((r) => [r.id, r.name]));
  const usage: Record<string, number> = {};
  for (const r of rows) {
    const name = names.get(r.resourceClassId)!;
    usage[name] = (usage[name] ?? 0) + r.used;
  }
  return usage;
}

export async function providerGeneration(deps: Deps, providerId: number): Promise<number> {
  const rows = await deps.store.db
    .select({ g: resourceProviders.generation })
    .from(resourceProviders)
    .where(eq(resourceProviders.id, providerId));
  return rows[0]!.g;
}

/** Every placement table's rows in a stable order: a failed write must leave this exactly as it was. */
export async function dumpPlacement(deps: Deps): Promise<Record<string, unknown[]>> {
  const q = async (sql: string) => (await deps.store.client.execute(sql)).rows.map((r) => ({ ...r }));
  return {
    providers: await q('SELECT * FROM resource_providers ORDER BY id'),
    inventories: await q('SELECT * FROM inventories ORDER BY id'),
    allocations: await q('SELECT * FROM allocations ORDER BY id'),
    consumers: await q('SELECT * FROM consumers ORDER BY id'),
    projects: await q('SELECT * FROM projects ORDER BY id'),
    users: await q('SELECT * FROM users ORDER BY id'),
    consumerTypes: await q('SELECT * FROM consumer_types ORDER BY id'),
    resourceClasses: await q('SELECT * FROM resource_classes ORDER BY id'),
    traits: await q('SELECT * FROM traits ORDER BY id'),
    providerTraits: await q('SELECT * FROM resource_provider_traits ORDER BY resource_provider_id, trait_id'),
    providerAggregates: await q('SELECT * FROM resource_provider_aggregates ORDER BY resource_provider_id, aggregate_id'),
  };
}
