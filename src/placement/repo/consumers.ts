// Consumers and the project, user and consumer-type records they point at.
// Everything here runs inside the caller's write transaction; generation
// changes are compare-and-swap so a concurrent writer can never be lost.
import { DomainError, ErrorCode } from '../../errors.js';
import { and, eq, inArray, notExists, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { allocations, consumers, consumerTypes, projects, users } from '../../db/schema/index.js';

/**
 * Project and user recorded for allocations written before 1.8, when the
 * body carried neither: upstream's "incomplete consumer" placeholders
 * ([placement] incomplete_consumer_project_id / _user_id defaults).
 */
export const INCOMPLETE_CONSUMER_PROJECT_ID = '00000000-0000-0000-0000-000000000000';
export const INCOMPLETE_CONSUMER_USER_ID = '00000000-0000-0000-0000-000000000000';

/** The consumer type shown for consumers written before 1.38. */
export const UNKNOWN_CONSUMER_TYPE = 'unknown';

export type ConsumerRow = typeof consumers.$inferSelect;

export interface ConsumerView {
  id: number;
  uuid: string;
  generation: number;
  projectId: string;
  userId: string;
  consumerType: string;
}

// Get-or-create in one statement each (a no-op update makes RETURNING see
// an existing row): every statement is a network hop when the database is remote.
async function ensureProject(db: Db, externalId: string, now: string): Promise<number> {
  const [row] = await db.insert(projects).values({ externalId, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: projects.externalId, set: { externalId } }).returning({ id: projects.id });
  return row!.id;
}

async function ensureUser(db: Db, externalId: string, now: string): Promise<number> {
  const [row] = await db.insert(users).values({ externalId, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: users.externalId, set: { externalId } }).returning({ id: users.id });
  return row!.id;
}

async function ensureConsumerType(db: Db, name: string, now: string): Promise<number> {
  const [row] = await db.insert(consumerTypes).values({ name, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: consumerTypes.name, set: { name } }).returning({ id: consumerTypes.id });
  return row!.id;
}

export async function findConsumer(db: Db, uuid: string): Promise<ConsumerRow | undefined> {
  const rows = await db.select().from(consumers).where(eq(consumers.uuid, uuid)).limit(1);
  return rows[0];
}

/** Consumers with their project, user and type names, keyed by uuid. */
export async function consumerViews(db: Db, uuids: string[]): Promise<Map<string, ConsumerView>> {
  if (uuids.length === 0) return new Map();
  const rows = await db
    .select({
      id: consumers.id,
      uuid: consumers.uuid,
      generation: consumers.generation,
      projectId: projects.externalId,
      userId: users.externalId,
      consumerType: consumerTypes.name,
    })
    .from(consumers)
    .innerJoin(projects, eq(projects.id, consumers.projectId))
    .innerJoin(users, eq(users.id, consumers.userId))
    .leftJoin(consumerTypes, eq(consumerTypes.id, consumers.consumerTypeId))
    .where(inArray(consumers.uuid, uuids));
  return new Map(rows.map((r) => [r.uuid, { ...r, consumerType: r.consumerType ?? UNKNOWN_CONSUMER_TYPE }]));
}

export interface ConsumerClaimIdentity {
  uuid: string;
  /** undefined before 1.8: the incomplete-consumer placeholders are used. */
  projectId?: string;
  userId?: string;
  /** Only compared when the microversion requires it (1.28+); null = "I expect no consumer". */
  generation?: number | null;
  /** Only applied from 1.38. */
  consumerType?: string;
}

export interface EnsureOptions {
  requireGeneration: boolean;
  now: string;
}

export function consumerGenerationConflict(expected: number | null, got: number | null | undefined): DomainError {
  const show = (g: number | null | undefined) => (g === null || g === undefined ? 'null' : String(g));
  return new DomainError('conflict', `consumer generation conflict - expected ${show(expected)} but got ${show(got)}`, ErrorCode.CONCURRENT_UPDATE);
}

/**
 * The consumer row for `claim`, created when missing. From 1.28 the caller's
 * generation must match (null for a new consumer), else 409
 * concurrent_update. Project, user and (1.38+) type are brought up to date
 * without bumping the generation: the allocation write bumps it once.
 */
export async function ensureConsumer(db: Db, claim: ConsumerClaimIdentity, opts: EnsureOptions): Promise<ConsumerRow> {
  const projectId = await ensureProject(db, claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID, opts.now);
  const userId = await ensureUser(db, claim.userId ?? INCOMPLETE_CONSUMER_USER_ID, opts.now);
  const typeId = claim.consumerType !== undefined ? await ensureConsumerType(db, claim.consumerType, opts.now) : undefined;
  const existing = await findConsumer(db, claim.uuid);
  if (existing) {
    if (opts.requireGeneration && existing.generation !== claim.generation) {
      throw consumerGenerationConflict(existing.generation, claim.generation);
    }
    const changes: Partial<ConsumerRow> = {};
    if (existing.projectId !== projectId) changes.projectId = projectId;
    if (existing.userId !== userId) changes.userId = userId;
    if (typeId !== undefined && existing.consumerTypeId !== typeId) changes.consumerTypeId = typeId;
    if (Object.keys(changes).length === 0) return existing;
    await db.update(consumers).set({ ...changes, updatedAt: opts.now }).where(eq(consumers.id, existing.id));
    return { ...existing, ...changes, updatedAt: opts.now };
  }
  if (opts.requireGeneration && claim.generation !== null) {
    throw consumerGenerationConflict(null, claim.generation);
  }
  const inserted = await db
    .insert(consumers)
    .values({ uuid: claim.uuid, projectId, userId, generation: 0, consumerTypeId: typeId ?? null, createdAt: opts.now, updatedAt: opts.now })
    .returning();
  return inserted[0]!;
}

/** Compare-and-swap on the consumer generation; 409 concurrent_update when it moved. */
export async function bumpConsumerGeneration(db: Db, consumer: ConsumerRow, now: string): Promise<number> {
  const updated = await db
    .update(consumers)
    .set({ generation: sql`${consumers.generation} + 1`, updatedAt: now })
    .where(and(eq(consumers.id, consumer.id), eq(consumers.generation, consumer.generation)))
    .returning({ generation: consumers.generation });
  if (updated.length !== 1) {
    throw new DomainError('conflict', `Inventory and/or allocations changed while attempting to allocate: consumer generation conflict for ${consumer.uuid}`, ErrorCode.CONCURRENT_UPDATE);
  }
  return updated[0]!.generation;
}

/** Deletes those of `uuids` that hold no allocations any more (placement keeps no empty consumers). */
export async function deleteConsumersWithoutAllocations(db: Db, uuids: string[]): Promise<void> {
  if (uuids.length === 0) return;
  await db.delete(consumers).where(and(
    inArray(consumers.uuid, uuids),
    notExists(db.select({ one: sql`1` }).from(allocations).where(eq(allocations.consumerId, consumers.uuid))),
  ));
}
