// The outbox: rows written in the same transaction as a state change and
// delivered afterwards. A consumer claims a row (attempts+1, next attempt
// pushed by a lease) before working on it, so concurrent or re-delivered
// messages for the same row do the work once.
import { and, asc, desc, eq, lt, lte } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { outbox } from '../../../../src/db/schema/cyborg.js';
import type { JobMessage, JobTopic, PAYLOADS } from '../../../../src/jobs/messages.js';
import type { z } from 'zod';

export type OutboxRow = typeof outbox.$inferSelect;
export type OutboxState = 'pending' | 'done' | 'dead';

export async function addOutbox<T extends JobTopic>(
  db: Db,
  topic: T,
  payload: z.infer<(typeof PAYLOADS)[T]>,
  nowMs: number,
): Promise<JobMessage> {
  const [row] = await db
    .insert(outbox)
    .values({
      topic,
      payload: JSON.stringify(payload),
      nextAttemptAt: nowMs,
      createdAt: new Date(nowMs).toISOString(),
    })
    .returning({ id: outbox.id });
  return { type: topic, outboxId: row!.id } as JobMessage;
}

/** Takes the row for one attempt; undefined when it is finished or another attempt holds it. */
export async function claimOutbox(db: Db, id: number, nowMs: number, leaseMs: number): Promise<OutboxRow | undefined> {
  const current = await db.select().from(outbox).where(eq(outbox.id, id)).get();
  if (!current || current.state !== 'pending' || current.nextAttemptAt > nowMs) return undefined;
  const [claimed] = await db
    .update(outbox)
    .set({ attempts: current.attempts + 1, nextAttemptAt: nowMs + leaseMs })
    .where(and(eq(outbox.id, id), eq(outbox.state, 'pending'), eq(outbox.attempts, current.attempts)))
    .returning();
  return claimed;
}

export async function finishOutbox(db: Db, id: number, nowMs: number, state: 'done' | 'dead', lastError?: string): Promise<void> {
  await db
    .update(outbox)
    .set({ state, lastError: lastError ?? null, updatedAt: new Date(nowMs).toISOString() })
    .where(eq(outbox.id, id));
}

export async function retryOutboxAt(db: Db, id: number, nextAttemptAt: number, lastError: string, nowMs: number): Promise<void> {
  await db
    .update(outbox)
    .set({ nextAttemptAt, lastError, updatedAt: new Date(nowMs).toISOString() })
    .where(eq(outbox.id, id));
}

export async function dueOutbox(db: Db, nowMs: number, limit: number): Promise<OutboxRow[]> {
  return db
    .select()
    .from(outbox)
    .where(and(eq(outbox.state, 'pending'), lte(outbox.nextAttemptAt, nowMs)))
    .orderBy(asc(outbox.nextAttemptAt), asc(outbox.id))
    .limit(limit);
}

export async function listOutbox(db: Db, filter: { state?: OutboxState; topic?: JobTopic }, limit = 1000): Promise<OutboxRow[]> {
  const conds = [];
  if (filter.state) conds.push(eq(outbox.state, filter.state));
  if (filter.topic) conds.push(eq(outbox.topic, filter.topic));
  return db
    .select()
    .from(outbox)
    .where(conds.length ? and(...conds) : undefined)
    .orderBy(desc(outbox.id))
    .limit(limit);
}

export const messageFor = (row: OutboxRow): JobMessage => ({ type: row.topic, outboxId: row.id }) as JobMessage;

/** Delivered rows older than the cutoff go; dead letters stay until an operator looks. */
export async function purgeDoneOutbox(db: Db, cutoffIso: string): Promise<number> {
  const gone = await db
    .delete(outbox)
    .where(and(eq(outbox.state, 'done'), lt(outbox.updatedAt, cutoffIso)))
    .returning({ id: outbox.id });
  return gone.length;
}

export async function hasDoneOutboxBefore(db: Db, cutoffIso: string): Promise<boolean> {
  const row = await db
    .select({ id: outbox.id })
    .from(outbox)
    .where(and(eq(outbox.state, 'done'), lt(outbox.updatedAt, cutoffIso)))
    .limit(1)
    .get();
  return row !== undefined;
}
