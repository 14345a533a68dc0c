// Data access for the audit (GET /diagnostics/audit): read-only queries that
// find what placement and the accelerator tables should never hold, plus the
// two repairs judged safe. Every list is keyset-paged on a stable key (uuid or
// id) so a large cloud is read in bounded pages.
import { and, asc, count, eq, gt, inArray, isNotNull, lte, notExists, sql } from 'drizzle-orm';
import type { InStatement, InValue } from '@libsql/client';
import type { Db } from '../db/client.js';
import { acceleratorRequests, outbox } from '../db/schema/cyborg.js';
import { allocations, consumers } from '../db/schema/placement.js';
import { capacitySql } from '../placement/capacity.js';
import { OWNER_FIELDS, withOwners } from '../placement/repo/consumers.js';
import { ArqState } from '../cyborg/arq-state.js';
import type { InventoryUsage } from './dashboard-repo.js';
import { ALLOC, INV, RC, RP } from '../db/columns.js';

export interface Page<T> {
  items: T[];
  /** Pass as `marker` for the next page; null on the last page. */
  nextMarker: string | null;
}

function pageOf<T>(rows: T[], limit: number, keyOf: (row: T) => string): Page<T> {
  const items = rows.slice(0, limit);
  return { items, nextMarker: rows.length > limit && items.length ? keyOf(items[items.length - 1]!) : null };
}

/** A class whose usage exceeds its capacity: the same figures the dashboard shows per class. */
export type OverCapacityClass = InventoryUsage;

export interface ConsumerOnProvider {
  consumerUuid: string;
  resources: Record<string, number>;
}

export interface OverCapacityProvider {
  uuid: string;
  name: string;
  rootProviderUuid: string;
  resources: OverCapacityClass[];
  consumers: ConsumerOnProvider[];
}

// (provider, class) pairs whose allocations sum above the inventory's
// capacity: possible after an inventory update lowered total, raised reserved
// or lowered the ratio (placement allows that and only warns).
const OVER_CAPACITY = sql.raw(`
  over AS (
    SELECT i.${INV.resourceProviderId} AS provider_id, i.${INV.resourceClassId} AS class_id, i.${INV.total}, i.${INV.reserved},
           i.${INV.allocationRatio}, ${capacitySql('i')} AS capacity, u.used
    FROM inventories i
    JOIN (SELECT ${ALLOC.resourceProviderId}, ${ALLOC.resourceClassId}, SUM(${ALLOC.used}) AS used FROM allocations
          GROUP BY ${ALLOC.resourceProviderId}, ${ALLOC.resourceClassId}) u
      ON u.resource_provider_id = i.${INV.resourceProviderId} AND u.resource_class_id = i.${INV.resourceClassId}
    WHERE u.used > ${capacitySql('i')}
  )`);

export async function countOverCapacityProviders(db: Db): Promise<number> {
  const [row] = await db.all<{ n: number }>(sql`WITH ${OVER_CAPACITY} SELECT COUNT(DISTINCT provider_id) AS n FROM over`);
  return Number(row?.n ?? 0);
}

export async function overCapacityProviders(db: Db, marker: string | null, limit: number): Promise<Page<OverCapacityProvider>> {
  const rows = await db.all<{
    provider_id: number;
    uuid: string;
    name: string;
    root_uuid: string;
    rc: string;
    total: number;
    reserved: number;
    allocation_ratio: number;
    capacity: number;
    used: number;
  }>(sql`WITH ${OVER_CAPACITY},
    page AS (
      SELECT DISTINCT rp.${sql.raw(RP.id)}, rp.${sql.raw(RP.uuid)} FROM over JOIN resource_providers rp ON rp.${sql.raw(RP.id)} = over.provider_id
      WHERE ${marker === null ? sql`1` : sql`rp.uuid > ${marker}`}
      ORDER BY rp.${sql.raw(RP.uuid)} LIMIT ${limit + 1}
    )
    SELECT rp.${sql.raw(RP.id)} AS provider_id, rp.${sql.raw(RP.uuid)}, rp.${sql.raw(RP.name)}, root.${sql.raw(RP.uuid)} AS root_uuid, rc.${sql.raw(RC.name)} AS rc,
           over.total, over.reserved, over.allocation_ratio, over.capacity, over.used
    FROM page
    JOIN over ON over.provider_id = page.id
    JOIN resource_providers rp ON rp.${sql.raw(RP.id)} = page.id
    JOIN resource_providers root ON root.${sql.raw(RP.id)} = COALESCE(rp.${sql.raw(RP.rootProviderId)}, rp.${sql.raw(RP.id)})
    JOIN resource_classes rc ON rc.${sql.raw(RC.id)} = over.class_id
    ORDER BY rp.${sql.raw(RP.uuid)}, rc.${sql.raw(RC.name)}`);
  const byId = new Map<number, OverCapacityProvider>();
  for (const r of rows) {
    let provider = byId.get(r.provider_id);
    if (!provider) {
      provider = { uuid: r.uuid, name: r.name, rootProviderUuid: r.root_uuid, resources: [], consumers: [] };
      byId.set(r.provider_id, provider);
    }
    provider.resources.push({
      resourceClass: r.rc,
      total: r.total,
      reserved: r.reserved,
      allocationRatio: r.allocation_ratio,
      capacity: Number(r.capacity),
      used: Number(r.used),
    });
  }
  const page = pageOf([...byId.entries()], limit, ([, p]) => p.uuid);
  const ids = page.items.map(([id]) => id);
  if (ids.length) {
    const held = await db.all<{ provider_id: number; consumer_id: string; rc: string; used: number }>(sql`
      SELECT a.${sql.raw(ALLOC.resourceProviderId)} AS provider_id, a.${sql.raw(ALLOC.consumerId)}, rc.${sql.raw(RC.name)} AS rc, SUM(a.${sql.raw(ALLOC.used)}) AS used
      FROM allocations a JOIN resource_classes rc ON rc.${sql.raw(RC.id)} = a.${sql.raw(ALLOC.resourceClassId)}
      WHERE a.${sql.raw(ALLOC.resourceProviderId)} IN (${sql.join(
        ids.map((id) => sql`${id}`),
        sql`, `,
      )})
      GROUP BY a.${sql.raw(ALLOC.resourceProviderId)}, a.${sql.raw(ALLOC.consumerId)}, rc.${sql.raw(RC.name)}
      ORDER BY a.${sql.raw(ALLOC.consumerId)}, rc.${sql.raw(RC.name)}`);
    for (const h of held) {
      const provider = byId.get(h.provider_id)!;
      let consumer = provider.consumers.find((c) => c.consumerUuid === h.consumer_id);
      if (!consumer) {
        consumer = { consumerUuid: h.consumer_id, resources: {} };
        provider.consumers.push(consumer);
      }
      consumer.resources[h.rc] = Number(h.used);
    }
  }
  return { items: page.items.map(([, p]) => p), nextMarker: page.nextMarker };
}

export interface EmptyConsumer {
  uuid: string;
  projectId: string;
  userId: string;
  consumerType: string | null;
  generation: number;
  createdAt: string;
  updatedAt: string | null;
}

const holdsNoAllocation = (db: Db) =>
  notExists(db.select({ one: sql`1` }).from(allocations).where(eq(allocations.consumerId, consumers.uuid)));

export async function countEmptyConsumers(db: Db): Promise<number> {
  const [row] = await db.select({ n: count() }).from(consumers).where(holdsNoAllocation(db));
  return row?.n ?? 0;
}

/** Consumers left with no allocation (placement deletes those; a crash or an old bug can leave one). */
export async function emptyConsumers(db: Db, marker: string | null, limit: number): Promise<Page<EmptyConsumer>> {
  const rows = await withOwners(
    db
      .select({
        uuid: consumers.uuid,
        ...OWNER_FIELDS,
        generation: consumers.generation,
        createdAt: consumers.createdAt,
        updatedAt: consumers.updatedAt,
      })
      .from(consumers)
      .$dynamic(),
  )
    .where(and(holdsNoAllocation(db), marker === null ? undefined : gt(consumers.uuid, marker)))
    .orderBy(asc(consumers.uuid))
    .limit(limit + 1);
  return pageOf(rows, limit, (r) => r.uuid);
}

/** The statement deleting those of `uuids` that still hold no allocation, returning their uuids (for a write batch). */
export function deleteEmptyConsumersStatement(db: Db, uuids: string[]): InStatement {
  return asStatement(
    db
      .delete(consumers)
      .where(and(inArray(consumers.uuid, uuids), holdsNoAllocation(db)))
      .returning({ uuid: consumers.uuid })
      .toSQL(),
  );
}

/** A drizzle query as a libSQL statement, to run in a batch. */
function asStatement(query: { sql: string; params: unknown[] }): InStatement {
  return { sql: query.sql, args: query.params as InValue[] };
}

export async function findEmptyConsumers(db: Db, uuids: string[]): Promise<string[]> {
  if (!uuids.length) return [];
  const rows = await db
    .select({ uuid: consumers.uuid })
    .from(consumers)
    .where(and(inArray(consumers.uuid, uuids), holdsNoAllocation(db)));
  return rows.map((r) => r.uuid).sort();
}

export interface ArqFinding {
  uuid: string;
  state: string;
  hostname: string | null;
  deviceRpUuid: string | null;
  instanceUuid: string | null;
  deviceProfileName: string;
  bindStartedAt: string | null;
  updatedAt: string | null;
}

const arqColumns = {
  uuid: acceleratorRequests.uuid,
  state: acceleratorRequests.state,
  hostname: acceleratorRequests.hostname,
  deviceRpUuid: acceleratorRequests.deviceRpUuid,
  instanceUuid: acceleratorRequests.instanceUuid,
  deviceProfileName: acceleratorRequests.deviceProfileName,
  bindStartedAt: acceleratorRequests.bindStartedAt,
  updatedAt: acceleratorRequests.updatedAt,
};

const stuckBind = (cutoffIso: string) =>
  and(eq(acceleratorRequests.state, ArqState.BIND_STARTED), lte(acceleratorRequests.bindStartedAt, cutoffIso));

export async function countStuckArqs(db: Db, cutoffIso: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(acceleratorRequests).where(stuckBind(cutoffIso));
  return row?.n ?? 0;
}

/** ARQs in BindStarted since before `cutoffIso` (the binding-timeout sweep has not failed them yet). */
export async function stuckArqs(db: Db, cutoffIso: string, marker: string | null, limit: number): Promise<Page<ArqFinding>> {
  const rows = await db
    .select(arqColumns)
    .from(acceleratorRequests)
    .where(and(stuckBind(cutoffIso), marker === null ? undefined : gt(acceleratorRequests.uuid, marker)))
    .orderBy(asc(acceleratorRequests.uuid))
    .limit(limit + 1);
  return pageOf(rows, limit, (r) => r.uuid);
}

const boundWithoutAllocation = (db: Db) =>
  and(
    eq(acceleratorRequests.state, ArqState.BOUND),
    isNotNull(acceleratorRequests.instanceUuid),
    notExists(db.select({ one: sql`1` }).from(allocations).where(eq(allocations.consumerId, acceleratorRequests.instanceUuid))),
  );

export async function countBoundArqsWithoutAllocation(db: Db): Promise<number> {
  const [row] = await db.select({ n: count() }).from(acceleratorRequests).where(boundWithoutAllocation(db));
  return row?.n ?? 0;
}

/** Bound ARQs whose instance holds no allocation at all in placement (deleted or migrated away). */
export async function boundArqsWithoutAllocation(db: Db, marker: string | null, limit: number): Promise<Page<ArqFinding>> {
  const rows = await db
    .select(arqColumns)
    .from(acceleratorRequests)
    .where(and(boundWithoutAllocation(db), marker === null ? undefined : gt(acceleratorRequests.uuid, marker)))
    .orderBy(asc(acceleratorRequests.uuid))
    .limit(limit + 1);
  return pageOf(rows, limit, (r) => r.uuid);
}

export interface DeadLetter {
  id: number;
  topic: string;
  payload: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  updatedAt: string | null;
}

const deadLetterColumns = {
  id: outbox.id,
  topic: outbox.topic,
  payload: outbox.payload,
  attempts: outbox.attempts,
  lastError: outbox.lastError,
  createdAt: outbox.createdAt,
  updatedAt: outbox.updatedAt,
};

export async function countDeadLetters(db: Db): Promise<number> {
  const [row] = await db.select({ n: count() }).from(outbox).where(eq(outbox.state, 'dead'));
  return row?.n ?? 0;
}

export async function deadLetters(db: Db, marker: number | null, limit: number): Promise<Page<DeadLetter>> {
  const rows = await db
    .select(deadLetterColumns)
    .from(outbox)
    .where(and(eq(outbox.state, 'dead'), marker === null ? undefined : gt(outbox.id, marker)))
    .orderBy(asc(outbox.id))
    .limit(limit + 1);
  return pageOf(rows, limit, (r) => String(r.id));
}

export async function findDeadLetters(db: Db, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const rows = await db
    .select({ id: outbox.id })
    .from(outbox)
    .where(and(inArray(outbox.id, ids), eq(outbox.state, 'dead')));
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/**
 * The statement putting dead letters back to pending with a fresh attempt
 * budget, due now, returning the ids and topics reset (for a write batch);
 * the drain (or the caller, after commit) delivers them.
 */
export function requeueDeadLettersStatement(db: Db, ids: number[], nowMs: number): InStatement {
  return asStatement(
    db
      .update(outbox)
      .set({ state: 'pending', attempts: 0, nextAttemptAt: nowMs, updatedAt: new Date(nowMs).toISOString() })
      .where(and(inArray(outbox.id, ids), eq(outbox.state, 'dead')))
      .returning({ id: outbox.id, topic: outbox.topic })
      .toSQL(),
  );
}
