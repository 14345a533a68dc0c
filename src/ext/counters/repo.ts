// GET and PUT /ext/resource_providers/{uuid}/counters in Placement's write
// model (placement/writes/kernel.ts): one read batch, the decision here, one
// write batch guarded by the provider generation's compare-and-swap. Every
// write that adds usage on a provider moves its generation, so the swap also
// proves the usage the decision saw is still the usage at the write.
import type { DataStore } from '../../db/client.js';
import { commitGuarded, stmt, type WriteStatement } from '../../db/write-batch.js';
import { invalid } from '../../errors.js';
import { GenerationPlan, PROVIDER_ID_BY_UUID, placementWrite } from '../../placement/writes/kernel.js';
import { InventoryInUse, ProviderGenerationMismatch, ProviderNotFound } from '../../placement/writes/refusals.js';
import { keyTableOf, loadsOf, type ProviderKeys } from '../../placement/capacity.js';
import { ALLOC, COUNTER, COUNTER_USE, INV, RC, RP } from '../../db/columns.js';

export interface CountersDocument {
  resource_provider_generation: number;
  /** counter name -> total. */
  counters: Record<string, number>;
  /** resource class -> counter name -> units one unit of the class consumes. */
  consumption: Record<string, Record<string, number>>;
}

export interface CountersView extends CountersDocument {
  /** counter name -> units the provider's current usage consumes. */
  load: Record<string, number>;
}

interface ProviderRead {
  id: number;
  generation: number;
  counters: ProviderKeys | undefined;
  /** class name -> [class id, usage] for every inventory of the provider. */
  inventory: Map<string, [number, number]>;
}

async function readProvider(store: DataStore, uuid: string): Promise<ProviderRead> {
  const byUuid = PROVIDER_ID_BY_UUID;
  const [providers, inventories, totals, consumption] = await store.readBatch([
    { sql: `SELECT ${RP.id}, ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [uuid] },
    {
      sql: `SELECT rc.${RC.id}, rc.${RC.name}, COALESCE((SELECT SUM(a.${ALLOC.used}) FROM allocations a
          WHERE a.${ALLOC.resourceProviderId} = i.${INV.resourceProviderId} AND a.${ALLOC.resourceClassId} = i.${INV.resourceClassId}), 0) AS used
        FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId} WHERE i.${INV.resourceProviderId} = ${byUuid} ORDER BY rc.${RC.id}`,
      args: [uuid],
    },
    {
      sql: `SELECT ${COUNTER.name}, ${COUNTER.total} FROM ext_provider_counters WHERE ${COUNTER.resourceProviderId} = ${byUuid} ORDER BY ${COUNTER.name}`,
      args: [uuid],
    },
    {
      sql: `SELECT ${COUNTER_USE.resourceClassId}, ${COUNTER_USE.counter}, ${COUNTER_USE.amount} FROM ext_counter_consumption WHERE ${COUNTER_USE.resourceProviderId} = ${byUuid}`,
      args: [uuid],
    },
  ]);
  const row = providers!.rows[0];
  if (!row) throw new ProviderNotFound(uuid);
  const id = Number(row[RP.id]);
  const table = keyTableOf(
    totals!.rows.map((r) => ({ providerId: id, name: String(r[COUNTER.name]), bound: Number(r[COUNTER.total]) })),
    consumption!.rows.map((r) => ({
      providerId: id,
      classId: Number(r[COUNTER_USE.resourceClassId]),
      key: String(r[COUNTER_USE.counter]),
      weight: Number(r[COUNTER_USE.amount]),
    })),
  );
  return {
    id,
    generation: Number(row[RP.generation]),
    counters: table.get(id),
    inventory: new Map(inventories!.rows.map((r) => [String(r[RC.name]), [Number(r[RC.id]), Number(r.used)]])),
  };
}

function viewOf(read: ProviderRead): CountersView {
  const nameOf = new Map([...read.inventory].map(([name, [id]]) => [id, name]));
  const usedOf = new Map([...read.inventory.values()]);
  const counters: Record<string, number> = {};
  const consumption: Record<string, Record<string, number>> = {};
  const load: Record<string, number> = {};
  const c = read.counters;
  if (c) {
    const loads = loadsOf(c, (classId) => usedOf.get(classId) ?? 0);
    c.names.forEach((name, i) => {
      counters[name] = c.bounds[i]!;
      load[name] = loads[i]!;
    });
    for (const [classId, perCounter] of [...c.weights].sort((a, b) => a[0] - b[0])) {
      const entry: Record<string, number> = {};
      perCounter.forEach((amount, i) => {
        if (amount > 0) entry[c.names[i]!] = amount;
      });
      consumption[nameOf.get(classId) ?? String(classId)] = entry;
    }
  }
  return { resource_provider_generation: read.generation, counters, consumption, load };
}

export async function getCounters(store: DataStore, uuid: string): Promise<CountersView> {
  return viewOf(await readProvider(store, uuid));
}

/**
 * Replaces the provider's counters and consumption (empty objects remove
 * them) and returns the new view. 404 unknown provider; 409
 * concurrent_update on a stale generation; 400 when a class named has no
 * inventory on the provider or a counter named in consumption is not
 * declared; 409 when current usage would already exceed a counter.
 */
export async function putCounters(store: DataStore, uuid: string, doc: CountersDocument, now: string): Promise<CountersView> {
  return placementWrite(async () => {
    const read = await readProvider(store, uuid);
    if (read.generation !== doc.resource_provider_generation) {
      throw new ProviderGenerationMismatch(uuid, read.generation, doc.resource_provider_generation);
    }
    const classes = Object.keys(doc.consumption);
    const noInventory = classes.filter((name) => !read.inventory.has(name));
    if (noInventory.length) {
      throw invalid(
        `No inventory of class(es) ${noInventory.join(', ')} on resource provider ${uuid}: counters can only be consumed by inventory the provider has.`,
      );
    }
    const names = Object.keys(doc.counters).sort();
    for (const [rc, perCounter] of Object.entries(doc.consumption)) {
      const unknown = Object.keys(perCounter).filter((name) => !(name in doc.counters));
      if (unknown.length) throw invalid(`Consumption of ${rc} names undeclared counter(s): ${unknown.join(', ')}.`);
    }
    const table = keyTableOf(
      names.map((name) => ({ providerId: read.id, name, bound: doc.counters[name]! })),
      classes.flatMap((rc) =>
        Object.entries(doc.consumption[rc]!).map(([counter, amount]) => ({
          providerId: read.id,
          classId: read.inventory.get(rc)![0],
          key: counter,
          weight: amount,
        })),
      ),
    );
    const counters = table.get(read.id);
    if (counters) {
      const usedOf = new Map([...read.inventory.values()]);
      const loads = loadsOf(counters, (classId) => usedOf.get(classId) ?? 0);
      const over = names.filter((_, i) => loads[i]! > counters.bounds[i]!);
      if (over.length) {
        // As upstream refuses to remove inventory still allocated (409 inventory.inuse).
        throw new InventoryInUse(
          `Counter(s) ${over.map((name) => `${name} (${loads[names.indexOf(name)]} in use)`).join(', ')} of resource provider ${uuid} would be exceeded by its current allocations.`,
        );
      }
    }
    const statements: WriteStatement[] = [
      stmt(`DELETE FROM ext_provider_counters WHERE ${COUNTER.resourceProviderId} = ?`, [read.id]),
      stmt(`DELETE FROM ext_counter_consumption WHERE ${COUNTER_USE.resourceProviderId} = ?`, [read.id]),
    ];
    if (names.length) {
      statements.push(
        stmt(
          `INSERT INTO ext_provider_counters (${COUNTER.resourceProviderId}, ${COUNTER.name}, ${COUNTER.total}) VALUES ${names.map(() => '(?, ?, ?)').join(', ')}`,
          names.flatMap((name) => [read.id, name, doc.counters[name]!]),
        ),
      );
    }
    const rows = classes.flatMap((rc) =>
      Object.entries(doc.consumption[rc]!).map(([counter, amount]) => [read.inventory.get(rc)![0], counter, amount] as const),
    );
    if (rows.length) {
      statements.push(
        stmt(
          `INSERT INTO ext_counter_consumption (${COUNTER_USE.resourceProviderId}, ${COUNTER_USE.resourceClassId}, ${COUNTER_USE.counter}, ${COUNTER_USE.amount}) VALUES ${rows.map(() => '(?, ?, ?, ?)').join(', ')}`,
          rows.flatMap(([classId, counter, amount]) => [read.id, classId, counter, amount]),
        ),
      );
    }
    const gens = new GenerationPlan();
    gens.bump({ id: read.id, generation: read.generation });
    await commitGuarded(store, [...statements, ...gens.statements(now)]);
    return viewOf({ ...read, generation: read.generation + 1, counters });
  });
}
