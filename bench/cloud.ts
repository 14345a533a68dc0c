// A bench cloud as data (provider trees), loaded into a Placement API over
// HTTP the way placeload and the perfload gabbit do (one provider at a time:
// POST, then PUT inventories, aggregates, traits), removed again afterwards,
// or written straight into a local database file for the 100,000-provider
// scenario (directLoad; test/bench/direct-load.test.ts checks it writes
// exactly what the HTTP loader writes).
import type { Client, InStatement } from '@libsql/client';
import { type PlacementClient, pool } from './client.js';
import { PERFLOAD_VERSION } from './upstream.js';

export interface ProviderSpec {
  uuid: string;
  name: string;
  parent?: string;
  inventories?: Record<string, Record<string, number>>;
  traits?: string[];
  aggregates?: string[];
}

/** Trees of providers, each listed parent first; trees load in parallel. */
export type Cloud = ProviderSpec[][];

const STANDARD_PREFIX = 'CUSTOM_';

function customNames(cloud: Cloud): { classes: string[]; traits: string[] } {
  const classes = new Set<string>();
  const traits = new Set<string>();
  for (const tree of cloud) {
    for (const p of tree) {
      for (const rc of Object.keys(p.inventories ?? {})) if (rc.startsWith(STANDARD_PREFIX)) classes.add(rc);
      for (const t of p.traits ?? []) if (t.startsWith(STANDARD_PREFIX)) traits.add(t);
    }
  }
  return { classes: [...classes], traits: [...traits] };
}

/**
 * Creates one provider and its inventory, aggregates and traits (each PUT
 * bumps the generation), in placeload's and the nested gabbit's order, at
 * `placement latest` as they send it.
 */
async function loadProvider(api: PlacementClient, p: ProviderSpec): Promise<void> {
  const version = PERFLOAD_VERSION;
  await api.request('POST', '/resource_providers', {
    body: { name: p.name, uuid: p.uuid, ...(p.parent ? { parent_provider_uuid: p.parent } : {}) },
    version,
  });
  let generation = 0;
  if (p.inventories && Object.keys(p.inventories).length) {
    await api.request('PUT', `/resource_providers/${p.uuid}/inventories`, {
      body: { resource_provider_generation: generation++, inventories: p.inventories },
      version,
    });
  }
  if (p.aggregates?.length) {
    await api.request('PUT', `/resource_providers/${p.uuid}/aggregates`, {
      body: { resource_provider_generation: generation++, aggregates: p.aggregates },
      version,
    });
  }
  if (p.traits?.length) {
    await api.request('PUT', `/resource_providers/${p.uuid}/traits`, {
      body: { resource_provider_generation: generation++, traits: p.traits },
      version,
    });
  }
}

/** Loads the cloud, `width` trees at a time; the first `preheat` trees finish before the others start. */
export async function httpLoad(api: PlacementClient, cloud: Cloud, width: number, preheat = 0): Promise<void> {
  const { classes, traits } = customNames(cloud);
  for (const rc of classes) await api.request('PUT', `/resource_classes/${rc}`, { version: '1.7' });
  for (const t of traits) await api.request('PUT', `/traits/${t}`);
  const loadTrees = (trees: Cloud) =>
    pool(trees.length, width, async (i) => {
      for (const p of trees[i]!) await loadProvider(api, p);
    });
  if (preheat > 0) await loadTrees(cloud.slice(0, preheat));
  await loadTrees(cloud.slice(preheat));
}

/** Deletes what httpLoad made (children first) and the given consumers' allocations. */
export async function httpUnload(api: PlacementClient, cloud: Cloud, consumers: string[], width: number): Promise<void> {
  await pool(consumers.length, width, (i) => api.request('DELETE', `/allocations/${consumers[i]}`, { okStatuses: [204, 404] }));
  await pool(cloud.length, width, async (i) => {
    for (const p of [...cloud[i]!].reverse()) await api.request('DELETE', `/resource_providers/${p.uuid}`, { okStatuses: [204, 404] });
  });
}

const MAX_INT = 2147483647;
const INVENTORY_FIELDS = ['total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'allocation_ratio'] as const;
const INVENTORY_DEFAULTS: Record<(typeof INVENTORY_FIELDS)[number], number> = {
  total: 0,
  reserved: 0,
  min_unit: 1,
  max_unit: MAX_INT,
  step_size: 1,
  allocation_ratio: 1.0,
};

/**
 * Writes the cloud straight into a migrated, synced database file: the rows
 * httpLoad would make through the API (the generation counts the PUTs), in
 * one transaction of multi-row INSERTs. Standard resource classes only.
 */
export async function directLoad(client: Client, cloud: Cloud): Promise<void> {
  const { classes, traits } = customNames(cloud);
  if (classes.length) throw new Error('directLoad: custom resource classes are not supported');
  const now = new Date().toISOString();
  // Custom traits as PUT /traits/{name} makes them (the nested gabbit's CUSTOM_FOO).
  for (const t of traits)
    await client.execute({ sql: 'INSERT INTO traits (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING', args: [t, now] });
  const ids = async (table: string) =>
    new Map((await client.execute(`SELECT name, id FROM ${table}`)).rows.map((r) => [String(r.name), Number(r.id)]));
  const classIds = await ids('resource_classes');
  const traitIds = await ids('traits');
  const providers = cloud.flat();
  const chunk = 400;
  const tx = await client.transaction('write');
  try {
    const aggregates = [...new Set(providers.flatMap((p) => p.aggregates ?? []))];
    for (const agg of aggregates)
      await tx.execute({
        sql: 'INSERT INTO placement_aggregates (uuid, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING',
        args: [agg, now],
      });
    const aggIds = new Map((await tx.execute('SELECT uuid, id FROM placement_aggregates')).rows.map((r) => [String(r.uuid), Number(r.id)]));
    const providerIds = new Map<string, number>();
    for (let start = 0; start < providers.length; start += chunk) {
      const slice = providers.slice(start, start + chunk);
      const generation = (p: ProviderSpec) =>
        (Object.keys(p.inventories ?? {}).length ? 1 : 0) + (p.aggregates?.length ? 1 : 0) + (p.traits?.length ? 1 : 0);
      const rows = await tx.execute({
        sql: `INSERT INTO resource_providers (uuid, name, generation, created_at, updated_at) VALUES ${slice.map(() => '(?, ?, ?, ?, ?)').join(', ')} RETURNING id, uuid`,
        args: slice.flatMap((p) => [p.uuid, p.name, generation(p), now, now]),
      });
      for (const r of rows.rows) providerIds.set(String(r.uuid), Number(r.id));
      const inserts: InStatement[] = [];
      const inventoryRows = slice.flatMap((p) =>
        Object.entries(p.inventories ?? {}).map(([rc, inv]) => [
          providerIds.get(p.uuid)!,
          classIds.get(rc)!,
          ...INVENTORY_FIELDS.map((f) => inv[f] ?? (f === 'max_unit' ? MAX_INT : INVENTORY_DEFAULTS[f])),
          now,
        ]),
      );
      if (inventoryRows.length) {
        inserts.push({
          sql: `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, created_at) VALUES ${inventoryRows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
          args: inventoryRows.flat(),
        });
      }
      const traitRows = slice.flatMap((p) => (p.traits ?? []).map((t) => [providerIds.get(p.uuid)!, traitIds.get(t)!, now]));
      if (traitRows.length) {
        inserts.push({
          sql: `INSERT INTO resource_provider_traits (resource_provider_id, trait_id, created_at) VALUES ${traitRows.map(() => '(?, ?, ?)').join(', ')}`,
          args: traitRows.flat(),
        });
      }
      const aggRows = slice.flatMap((p) => (p.aggregates ?? []).map((a) => [providerIds.get(p.uuid)!, aggIds.get(a)!, now]));
      if (aggRows.length) {
        inserts.push({
          sql: `INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id, created_at) VALUES ${aggRows.map(() => '(?, ?, ?)').join(', ')}`,
          args: aggRows.flat(),
        });
      }
      for (const s of inserts) await tx.execute(s);
    }
    // root_provider_id: a root's own id, a child's parent's root (parents come first).
    const ours = [...providerIds.values()];
    await tx.execute({
      sql: `UPDATE resource_providers SET root_provider_id = id WHERE id BETWEEN ? AND ?`,
      // A loop, not Math.min(...ours): spreading 200,000 ids overflows the call stack.
      args: [ours.reduce((a, b) => Math.min(a, b)), ours.reduce((a, b) => Math.max(a, b))],
    });
    for (const p of providers.filter((q) => q.parent)) {
      await tx.execute({
        sql: 'UPDATE resource_providers SET parent_provider_id = ?, root_provider_id = (SELECT root_provider_id FROM resource_providers WHERE id = ?) WHERE id = ?',
        args: [providerIds.get(p.parent!)!, providerIds.get(p.parent!)!, providerIds.get(p.uuid)!],
      });
    }
    await tx.commit();
  } finally {
    tx.close();
  }
}

/** Prepares a temporary database (migrations, standard names) and optionally writes the cloud into it. */
export async function prepareDb(dbFile: string, cloud: Cloud | null, consumers = 0): Promise<void> {
  const { loadConfig } = await import('../src/config.js');
  const { openStore } = await import('../src/entry/node-service.js');
  const store = await openStore(loadConfig({ PLACEMENT_DB_URL: `file:${dbFile}` }));
  try {
    if (cloud) await directLoad(store.client, cloud);
    if (consumers) await loadConsumers(store.client, consumers);
  } finally {
    store.close();
  }
}

/**
 * `count` consumers of one project and user, each 5 DISK_GB + 128 MEMORY_MB (the placeload inventory's min_units) on
 * provider (i mod providers), leaving room for the measured request: one statement per table.
 */
export async function loadConsumers(client: Client, count: number): Promise<void> {
  const tx = await client.transaction('write');
  try {
    await tx.execute("INSERT INTO projects (external_id) VALUES ('bench-project')");
    await tx.execute("INSERT INTO users (external_id) VALUES ('bench-user')");
    await tx.execute({
      sql: `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
            INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type_id)
            SELECT printf('c0000000-0000-4000-8000-%012d', i), (SELECT id FROM projects), (SELECT id FROM users), 1, NULL FROM n`,
      args: [count],
    });
    for (const [rc, used] of [
      ['DISK_GB', 5],
      ['MEMORY_MB', 128],
    ] as const)
      await tx.execute({
        sql: `WITH p AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS k FROM resource_providers),
                   pc AS (SELECT count(*) AS n FROM resource_providers)
              INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
              SELECT p.id, c.uuid, (SELECT id FROM resource_classes WHERE name = ?), ?
              FROM consumers c JOIN p ON p.k = (c.id - 1) % (SELECT n FROM pc)`,
        args: [rc, used],
      });
    await tx.commit();
  } finally {
    tx.close();
  }
}
