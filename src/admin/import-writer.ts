// Writes a snapshot read from another Placement (admin/placement-reader.ts)
// into this service's database, all or nothing: one write transaction on the
// embedded file or on the libSQL server, committed only when every row is in.
// Uuids and generations are written as read, so the clients' cached provider
// and consumer generations stay valid; database ids are this service's own.
// Standard resource classes and traits are this service's (synced at every
// start); only the custom ones are created.
import type { Client, InStatement, InValue, Transaction } from '@libsql/client';
import { MIN_CUSTOM_RESOURCE_CLASS_ID } from '../placement/repo/resource-classes.js';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../placement/standard-names.generated.js';
import { AdminError, type Snapshot } from './placement-reader.js';
import { AGG, ALLOC, CONSUMER, CONSUMER_TYPE, EPOCH, INV, PROJECT, RC, RP, RP_AGG, RP_TRAIT, TRAIT, USER } from '../db/columns.js';

export interface ImportCounts {
  resourceClasses: number;
  traits: number;
  providers: number;
  inventories: number;
  aggregates: number;
  providerTraits: number;
  consumers: number;
  allocations: number;
}

export interface WriteOptions {
  /** Wipe whatever the target holds first (in the same transaction). */
  replace?: boolean;
  onProgress?: (done: number, total: number) => void;
}

/** Tables that hold data (not schema bookkeeping, not the standard names), in the order --replace empties them. */
const DATA_TABLES = [
  'allocations',
  'consumers',
  'projects',
  'users',
  'consumer_types',
  'inventories',
  'resource_provider_traits',
  'resource_provider_aggregates',
  'placement_aggregates',
  'resource_providers',
  'attach_handles',
  'attributes',
  'deployables',
  'devices',
  'accelerator_requests',
  'device_profiles',
  'cyborg_outbox',
] as const;

const LEFTOVER_TABLES = new Set(['projects', 'users', 'consumer_types']);

/** Rows per multi-row INSERT: well under SQLite's 32,766 bound parameters. */
const ROWS_PER_INSERT = 400;
/** Statements sent per round trip inside the transaction. */
const STATEMENTS_PER_BATCH = 25;

const STANDARD_CLASS_SET = new Set<string>(STANDARD_RESOURCE_CLASSES);
const STANDARD_TRAIT_SET = new Set<string>(STANDARD_TRAITS);

/** What the target holds besides the standard names, as "N providers, ..." (empty when nothing). */
export async function describeTargetData(client: Client | Transaction): Promise<string> {
  const counts = await client.batch([
    ...DATA_TABLES.map((t) => `SELECT '${t}' AS name, count(*) AS n FROM ${t}`),
    {
      sql: `SELECT ? AS name, count(*) AS n FROM resource_classes WHERE ${RC.id} >= ?`,
      args: ['custom resource_classes', MIN_CUSTOM_RESOURCE_CLASS_ID],
    },
    `SELECT 'traits' AS name, ${TRAIT.name} AS n FROM traits`,
  ]);
  const traitRows = counts.pop()!.rows;
  const customTraits = traitRows.filter((r) => !STANDARD_TRAIT_SET.has(String(r.n))).length;
  // Projects, users and consumer types outlive their consumers: left over, they are not data.
  const parts = counts.map((rs) => rs.rows[0]!).filter((r) => Number(r.n) > 0 && !LEFTOVER_TABLES.has(String(r.name)));
  const described = parts.map((r) => `${Number(r.n)} ${String(r.name)}`);
  if (customTraits > 0) described.push(`${customTraits} custom traits`);
  return described.join(', ');
}

/** Checks a snapshot can be written here (before anything is opened for writing). */
export function checkSnapshot(snapshot: Snapshot): void {
  const unknown = snapshot.resourceClasses.filter((rc) => !rc.startsWith('CUSTOM_') && !STANDARD_CLASS_SET.has(rc));
  if (unknown.length > 0) {
    throw new AdminError(`the source has standard resource classes this service does not know (upgrade it first): ${unknown.join(', ')}`);
  }
  const providers = new Set(snapshot.providers.map((p) => p.uuid));
  for (const p of snapshot.providers) {
    for (const [role, uuid] of [
      ['parent', p.parentUuid],
      ['root', p.rootUuid],
    ] as const) {
      if (uuid !== null && !providers.has(uuid)) {
        throw new AdminError(`provider ${p.uuid} names ${role} ${uuid}, which the source did not list; stop its writers and run again`);
      }
    }
  }
}

/** One multi-row INSERT per ROWS_PER_INSERT rows. */
function inserts(head: string, columns: number, rows: InValue[][]): InStatement[] {
  const out: InStatement[] = [];
  const tuple = `(${Array.from({ length: columns }, () => '?').join(', ')})`;
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT);
    out.push({ sql: `${head} VALUES ${chunk.map(() => tuple).join(', ')}`, args: chunk.flat() });
  }
  return out;
}

/**
 * Writes the snapshot in one transaction. Refuses (AdminError, nothing
 * written) a target that already holds data unless `replace`.
 */
export async function writeSnapshot(client: Client, snapshot: Snapshot, options: WriteOptions = {}): Promise<ImportCounts> {
  checkSnapshot(snapshot);
  const tx = await client.transaction('write');
  try {
    const held = await describeTargetData(tx);
    if (held && !options.replace) throw new AdminError(`the target already holds data (${held}); run with --replace to wipe it first`);
    {
      // Also on a target without data: it may keep leftovers (projects, users, consumer types).
      const standardTraits = [...STANDARD_TRAIT_SET];
      await tx.batch([
        ...DATA_TABLES.map((t) => `DELETE FROM ${t}`),
        { sql: `DELETE FROM resource_classes WHERE ${RC.id} >= ?`, args: [MIN_CUSTOM_RESOURCE_CLASS_ID] },
        { sql: `DELETE FROM traits WHERE ${TRAIT.name} NOT IN (${standardTraits.map(() => '?').join(', ')})`, args: standardTraits },
      ]);
    }

    // Names first: everything else refers to them by id.
    const customClasses = snapshot.resourceClasses.filter((rc) => rc.startsWith('CUSTOM_'));
    const newTraits = snapshot.traits.filter((t) => !STANDARD_TRAIT_SET.has(t));
    await runAll(tx, [
      ...inserts(
        `INSERT INTO resource_classes (${RC.id}, ${RC.name})`,
        2,
        customClasses.map((name, i) => [MIN_CUSTOM_RESOURCE_CLASS_ID + i, name]),
      ),
      ...inserts(
        `INSERT OR IGNORE INTO traits (${TRAIT.name})`,
        1,
        newTraits.map((name) => [name]),
      ),
    ]);
    const [classRows, traitRows] = await tx.batch([
      `SELECT ${RC.id}, ${RC.name} FROM resource_classes`,
      `SELECT ${TRAIT.id}, ${TRAIT.name} FROM traits`,
    ]);
    const classId = new Map(classRows!.rows.map((r) => [String(r.name), Number(r.id)]));
    const traitId = new Map(traitRows!.rows.map((r) => [String(r.name), Number(r.id)]));
    const idOf = (map: Map<string, number>, kind: string, name: string): number => {
      const id = map.get(name);
      if (id === undefined)
        throw new AdminError(`the source uses the ${kind} ${name} but does not list it; stop its writers and run again`);
      return id;
    };

    // Providers get ids 1..N, so parents and roots are known without reading back.
    const providerId = new Map(snapshot.providers.map((p, i) => [p.uuid, i + 1]));
    const aggregateId = new Map<string, number>();
    for (const p of snapshot.providers) for (const a of p.aggregates) if (!aggregateId.has(a)) aggregateId.set(a, aggregateId.size + 1);
    const projectId = new Map<string, number>();
    const userId = new Map<string, number>();
    const typeId = new Map<string, number>();
    const numberOf = (map: Map<string, number>, key: string) => {
      if (!map.has(key)) map.set(key, map.size + 1);
      return map.get(key)!;
    };
    const consumerRows = snapshot.consumers.map((c) => [
      c.uuid,
      numberOf(projectId, c.projectId),
      numberOf(userId, c.userId),
      c.generation,
      c.consumerType === null ? null : numberOf(typeId, c.consumerType),
    ]);

    const statements: InStatement[] = [
      ...inserts(
        `INSERT INTO resource_providers (${RP.id}, ${RP.uuid}, ${RP.name}, ${RP.generation}, ${RP.parentProviderId}, ${RP.rootProviderId})`,
        6,
        snapshot.providers.map((p) => [
          providerId.get(p.uuid)!,
          p.uuid,
          p.name,
          p.generation,
          p.parentUuid === null ? null : providerId.get(p.parentUuid)!,
          providerId.get(p.rootUuid)!,
        ]),
      ),
      ...inserts(
        `INSERT INTO inventories (${INV.resourceProviderId}, ${INV.resourceClassId}, ${INV.total}, ${INV.reserved}, ${INV.minUnit}, ${INV.maxUnit}, ${INV.stepSize}, ${INV.allocationRatio})`,
        8,
        snapshot.providers.flatMap((p) =>
          Object.entries(p.inventories).map(([rc, inv]) => [
            providerId.get(p.uuid)!,
            idOf(classId, 'resource class', rc),
            inv.total,
            inv.reserved,
            inv.min_unit,
            inv.max_unit,
            inv.step_size,
            inv.allocation_ratio,
          ]),
        ),
      ),
      ...inserts(
        `INSERT INTO resource_provider_traits (${RP_TRAIT.resourceProviderId}, ${RP_TRAIT.traitId})`,
        2,
        snapshot.providers.flatMap((p) => p.traits.map((t) => [providerId.get(p.uuid)!, idOf(traitId, 'trait', t)])),
      ),
      ...inserts(
        `INSERT INTO placement_aggregates (${AGG.id}, ${AGG.uuid})`,
        2,
        [...aggregateId].map(([uuid, id]) => [id, uuid]),
      ),
      ...inserts(
        `INSERT INTO resource_provider_aggregates (${RP_AGG.resourceProviderId}, ${RP_AGG.aggregateId})`,
        2,
        snapshot.providers.flatMap((p) => p.aggregates.map((a) => [providerId.get(p.uuid)!, aggregateId.get(a)!])),
      ),
      ...inserts(
        `INSERT INTO projects (${PROJECT.id}, ${PROJECT.externalId})`,
        2,
        [...projectId].map(([external, id]) => [id, external]),
      ),
      ...inserts(
        `INSERT INTO users (${USER.id}, ${USER.externalId})`,
        2,
        [...userId].map(([external, id]) => [id, external]),
      ),
      ...inserts(
        `INSERT INTO consumer_types (${CONSUMER_TYPE.id}, ${CONSUMER_TYPE.name})`,
        2,
        [...typeId].map(([name, id]) => [id, name]),
      ),
      ...inserts(
        `INSERT INTO consumers (${CONSUMER.uuid}, ${CONSUMER.projectId}, ${CONSUMER.userId}, ${CONSUMER.generation}, ${CONSUMER.consumerTypeId})`,
        5,
        consumerRows,
      ),
      ...inserts(
        `INSERT INTO allocations (${ALLOC.resourceProviderId}, ${ALLOC.consumerId}, ${ALLOC.resourceClassId}, ${ALLOC.used})`,
        4,
        snapshot.consumers.flatMap((c) =>
          Object.entries(c.allocations).flatMap(([rp, resources]) =>
            Object.entries(resources).map(([rc, used]) => [providerId.get(rp)!, c.uuid, idOf(classId, 'resource class', rc), used]),
          ),
        ),
      ),
      // A service already running on this database reads every tree again.
      `UPDATE placement_epoch SET ${EPOCH.token} = lower(hex(randomblob(8)))`,
    ];
    await runAll(tx, statements, options.onProgress);
    await tx.commit();
  } finally {
    tx.close();
  }
  return countsOf(snapshot);
}

async function runAll(tx: Transaction, statements: InStatement[], onProgress?: (done: number, total: number) => void): Promise<void> {
  for (let i = 0; i < statements.length; i += STATEMENTS_PER_BATCH) {
    await tx.batch(statements.slice(i, i + STATEMENTS_PER_BATCH));
    onProgress?.(Math.min(i + STATEMENTS_PER_BATCH, statements.length), statements.length);
  }
}

export function countsOf(snapshot: Snapshot): ImportCounts {
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    resourceClasses: snapshot.resourceClasses.filter((rc) => rc.startsWith('CUSTOM_')).length,
    traits: snapshot.traits.filter((t) => !STANDARD_TRAIT_SET.has(t)).length,
    providers: snapshot.providers.length,
    inventories: sum(snapshot.providers.map((p) => Object.keys(p.inventories).length)),
    aggregates: new Set(snapshot.providers.flatMap((p) => p.aggregates)).size,
    providerTraits: sum(snapshot.providers.map((p) => p.traits.length)),
    consumers: snapshot.consumers.length,
    allocations: sum(snapshot.consumers.flatMap((c) => Object.values(c.allocations).map((r) => Object.keys(r).length))),
  };
}
