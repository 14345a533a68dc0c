// The outbox: rows written in the same write batch as a state change and
// delivered afterwards. A consumer claims a row (attempts+1, next attempt
// pushed by a lease) before working on it, so concurrent or re-delivered
// messages for the same row do the work once.
import type { ResultSet } from '@libsql/client';
import { and, asc, desc, eq, lt, lte } from 'drizzle-orm';
import type { z } from 'zod';
import type { DataStore, Db } from '../db/client.js';
import { rowOf } from '../db/rows.js';
import { outbox } from '../db/schema/cyborg.js';
import { commitGuarded, stmt, type WriteStatement } from '../db/write-batch.js';
import type { JobMessage, JobTopic, PAYLOADS } from './messages.js';
import { OUTBOX } from '../db/columns.js';

export type OutboxRow = typeof outbox.$inferSelect;
export type OutboxState = 'pending' | 'done' | 'dead';

/** A new outbox row, as a statement of the write batch that makes the state change it carries. */
export interface NewOutboxRow {
  statement: WriteStatement;
  /** The queue message for the row, from that statement's result. */
  message(result: ResultSet): JobMessage;
}

export function newOutboxRow<T extends JobTopic>(topic: T, payload: z.infer<(typeof PAYLOADS)[T]>, nowMs: number): NewOutboxRow {
  return {
    statement: stmt(
      `INSERT INTO cyborg_outbox (${OUTBOX.topic}, ${OUTBOX.payload}, ${OUTBOX.nextAttemptAt}, ${OUTBOX.createdAt}) VALUES (?, ?, ?, ?) RETURNING ${OUTBOX.id}`,
      [topic, JSON.stringify(payload), nowMs, new Date(nowMs).toISOString()],
    ),
    message: (result) => ({ type: topic, outboxId: Number(result.rows[0]!.id) }) as JobMessage,
  };
}

/**
 * Takes the row for one attempt (attempts+1, the next attempt pushed back by
 * the lease) in one statement, a compare-and-swap: undefined when the row is
 * finished, not due, or another attempt holds it. One round trip.
 */
export async function claimOutbox(store: DataStore, id: number, nowMs: number, leaseMs: number): Promise<OutboxRow | undefined> {
  const [claimed] = await commitGuarded(store, [
    stmt(
      `UPDATE cyborg_outbox SET ${OUTBOX.attempts} = ${OUTBOX.attempts} + 1, ${OUTBOX.nextAttemptAt} = ?
        WHERE ${OUTBOX.id} = ? AND ${OUTBOX.state} = 'pending' AND ${OUTBOX.nextAttemptAt} <= ? RETURNING *`,
      [nowMs + leaseMs, id, nowMs],
    ),
  ]);
  const row = claimed!.rows[0];
  return row ? rowOf(outbox, row) : undefined;
}

/** The statement that records an outcome: done (delivered) or dead (dead letter). */
export function finishOutboxStatement(id: number, nowMs: number, state: 'done' | 'dead', lastError?: string): WriteStatement {
  return stmt(`UPDATE cyborg_outbox SET ${OUTBOX.state} = ?, ${OUTBOX.lastError} = ?, ${OUTBOX.updatedAt} = ? WHERE ${OUTBOX.id} = ?`, [
    state,
    lastError ?? null,
    new Date(nowMs).toISOString(),
    id,
  ]);
}

/** One round trip. */
export async function finishOutbox(store: DataStore, id: number, nowMs: number, state: 'done' | 'dead', lastError?: string): Promise<void> {
  await commitGuarded(store, [finishOutboxStatement(id, nowMs, state, lastError)]);
}

/** One round trip: the row waits for its next attempt. */
export async function retryOutboxAt(store: DataStore, id: number, nextAttemptAt: number, lastError: string, nowMs: number): Promise<void> {
  await commitGuarded(store, [
    stmt(`UPDATE cyborg_outbox SET ${OUTBOX.nextAttemptAt} = ?, ${OUTBOX.lastError} = ?, ${OUTBOX.updatedAt} = ? WHERE ${OUTBOX.id} = ?`, [
      nextAttemptAt,
      lastError,
      new Date(nowMs).toISOString(),
      id,
    ]),
  ]);
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

/** Delivered rows older than the cutoff go; dead letters stay until an operator looks. One round trip. */
export async function purgeDoneOutbox(store: DataStore, cutoffIso: string): Promise<number> {
  const [gone] = await commitGuarded(store, [
    stmt(`DELETE FROM cyborg_outbox WHERE ${OUTBOX.state} = 'done' AND ${OUTBOX.updatedAt} < ?`, [cutoffIso]),
  ]);
  return gone!.rowsAffected;
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
