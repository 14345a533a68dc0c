// Allocation leases (KEP-5007's binding conditions on the Placement side):
// /ext/leases/{consumer_uuid}. A lease holds a consumer's current allocations
// until it is confirmed (DELETE) or renewed (PUT); the sweep removes the
// allocations of a lease that expired unconfirmed, exactly as
// DELETE /allocations/{consumer} would, unless the consumer was written after
// the lease was set (its generation moved): then only the lease goes.
//
// Every write is one batch whose statements carry their own conditions, as of
// the write (no read to go stale): a lease is set from the consumer's row as
// it is then; the sweep releases a lease only while it is still the lease it
// read (same expiry: not renewed, not confirmed) and the consumer is still at
// the lease's generation (not rewritten). A failed ARQ bind of a leased
// consumer releases it at once, by trigger (drizzle/0006_ext_taints_leases.sql).
import type { InStatement, ResultSet } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { commitGuarded, stmt, type WriteStatement } from '../../db/write-batch.js';
import { ALLOC, CONSUMER, LEASE, SWEEP_STAT } from '../../db/columns.js';
import { strOrNull } from '../../db/rows.js';

export interface LeaseView {
  consumer_uuid: string;
  seconds: number;
  expires_at: string;
  /** The consumer's generation when the lease was set or renewed: a write after it keeps the allocations. */
  consumer_generation: number;
  created_at: string;
  updated_at: string;
}

const LEASE_COLUMNS = [
  LEASE.consumerUuid,
  LEASE.consumerGeneration,
  LEASE.seconds,
  LEASE.expiresAtMs,
  LEASE.createdAt,
  LEASE.updatedAt,
].join(', ');
const leaseOf = (r: Record<string, unknown>): LeaseView => ({
  consumer_uuid: String(r[LEASE.consumerUuid]),
  seconds: Number(r[LEASE.seconds]),
  expires_at: new Date(Number(r[LEASE.expiresAtMs])).toISOString(),
  consumer_generation: Number(r[LEASE.consumerGeneration]),
  created_at: String(r[LEASE.createdAt]),
  updated_at: String(r[LEASE.updatedAt]),
});

/**
 * The statement that puts or renews the lease of `consumerUuid`: it expires
 * `seconds` after `nowMs` and covers the consumer as it is as of the write;
 * nothing when the consumer holds no allocations then. Written alone
 * (putLease) or inside a claim's own batch (a gang's lease, POST /ext/gangs),
 * where it sees the claim's writes before it. `expiresAtMs`: an exact expiry
 * instead (a claim's ext_until, docs/holds.md).
 */
export function leaseStatement(
  consumerUuid: string,
  seconds: number,
  nowMs: number,
  expiresAtMs = leaseExpiryMs(seconds, nowMs),
): WriteStatement {
  const now = new Date(nowMs).toISOString();
  return stmt(
    `INSERT INTO ext_leases (${LEASE_COLUMNS}) SELECT c.${CONSUMER.uuid}, c.${CONSUMER.generation}, ?, ?, ?, ? FROM consumers c WHERE c.${CONSUMER.uuid} = ?
        AND EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.consumerId} = c.${CONSUMER.uuid})
        ON CONFLICT (${LEASE.consumerUuid}) DO UPDATE SET ${LEASE.consumerGeneration} = excluded.${LEASE.consumerGeneration},
          ${LEASE.seconds} = excluded.${LEASE.seconds}, ${LEASE.expiresAtMs} = excluded.${LEASE.expiresAtMs}, ${LEASE.updatedAt} = excluded.${LEASE.updatedAt}`,
    [seconds, expiresAtMs, now, now, consumerUuid],
  );
}

/** When a lease set at `nowMs` for `seconds` expires. */
export const leaseExpiryMs = (seconds: number, nowMs: number): number => nowMs + seconds * 1000;

/**
 * Puts or renews the lease (one write batch): it expires `seconds` from now
 * and covers the consumer as it is now. Null when the consumer holds no
 * allocations (placement keeps no consumer without them). `checks` (what the
 * end guards granted it on) go first in its batch.
 */
export async function putLease(
  store: DataStore,
  consumerUuid: string,
  seconds: number,
  nowMs: number,
  checks: readonly WriteStatement[] = [],
): Promise<LeaseView | null> {
  const results = await commitGuarded(store, [
    ...checks,
    leaseStatement(consumerUuid, seconds, nowMs),
    stmt(`SELECT ${LEASE_COLUMNS} FROM ext_leases WHERE ${LEASE.consumerUuid} = ?`, [consumerUuid]),
  ]);
  const row = results[results.length - 1]!.rows[0];
  return row ? leaseOf(row) : null;
}

export async function getLease(store: DataStore, consumerUuid: string): Promise<LeaseView | null> {
  const [read] = await store.readBatch([
    { sql: `SELECT ${LEASE_COLUMNS} FROM ext_leases WHERE ${LEASE.consumerUuid} = ?`, args: [consumerUuid] },
  ]);
  const row = read!.rows[0];
  return row ? leaseOf(row) : null;
}

/**
 * Confirms the allocations: the lease goes, they stay. False when there was
 * no lease. `checks` (what the end guards granted it on) go first in its batch.
 */
export async function confirmLease(store: DataStore, consumerUuid: string, checks: readonly WriteStatement[] = []): Promise<boolean> {
  const results = await commitGuarded(store, [...checks, stmt(`DELETE FROM ext_leases WHERE ${LEASE.consumerUuid} = ?`, [consumerUuid])]);
  return results[results.length - 1]!.rowsAffected > 0;
}

export async function listLeases(store: DataStore, limit = 1000): Promise<LeaseView[]> {
  const [read] = await store.readBatch([
    { sql: `SELECT ${LEASE_COLUMNS} FROM ext_leases ORDER BY ${LEASE.expiresAtMs} LIMIT ?`, args: [limit] },
  ]);
  return read!.rows.map((r) => leaseOf(r));
}

export interface SweepOutcome {
  /** Consumers whose allocations were removed. */
  released: string[];
  /** Leases dropped alone: the consumer was written after the lease was set, or is gone. */
  dropped: string[];
}

/** Most expired leases one sweep handles (one write batch); the next sweep takes the rest. */
export const SWEEP_BATCH = 200;

/**
 * Releases the leases expired at `nowMs`: one read, then (only when some
 * expired) one write batch, all or nothing, in which each lease's statements
 * carry their own conditions as of the write, so a confirm, a renew or a
 * rewrite that lands between the read and the write wins.
 */
export async function sweepExpiredLeases(store: DataStore, nowMs: number): Promise<SweepOutcome> {
  const [expired] = await store.readBatch([
    {
      sql: `SELECT l.${LEASE.consumerUuid}, l.${LEASE.expiresAtMs}, l.${LEASE.consumerGeneration}, c.${CONSUMER.generation} AS current
        FROM ext_leases l LEFT JOIN consumers c ON c.${CONSUMER.uuid} = l.${LEASE.consumerUuid}
        WHERE l.${LEASE.expiresAtMs} <= ? ORDER BY l.${LEASE.expiresAtMs}, l.${LEASE.consumerUuid} LIMIT ?`,
      args: [nowMs, SWEEP_BATCH],
    },
  ]);
  const leases = expired!.rows.map((r) => ({ uuid: String(r[LEASE.consumerUuid]), expiresAtMs: Number(r[LEASE.expiresAtMs]) }));
  const now = new Date(nowMs).toISOString();
  const statements: WriteStatement[] = [
    stmt(
      `INSERT INTO ext_sweep_stats (${SWEEP_STAT.name}, ${SWEEP_STAT.runs}, ${SWEEP_STAT.lastRunAt}) VALUES ('leases', 1, ?)
        ON CONFLICT (${SWEEP_STAT.name}) DO UPDATE SET ${SWEEP_STAT.runs} = ${SWEEP_STAT.runs} + 1, ${SWEEP_STAT.lastRunAt} = excluded.${SWEEP_STAT.lastRunAt}`,
      [now],
    ),
  ];
  // Still the lease that was read (not renewed: same expiry; not confirmed: still there).
  const same = `SELECT 1 FROM ext_leases l WHERE l.${LEASE.consumerUuid} = ? AND l.${LEASE.expiresAtMs} = ?`;
  const current = `${same} AND l.${LEASE.consumerGeneration} = (SELECT ${CONSUMER.generation} FROM consumers WHERE ${CONSUMER.uuid} = l.${LEASE.consumerUuid})`;
  const moved = `${same} AND l.${LEASE.consumerGeneration} IS NOT (SELECT ${CONSUMER.generation} FROM consumers WHERE ${CONSUMER.uuid} = l.${LEASE.consumerUuid})`;
  for (const { uuid, expiresAtMs } of leases) {
    const lease = [uuid, expiresAtMs];
    statements.push(
      stmt(
        `UPDATE ext_sweep_stats SET ${SWEEP_STAT.released} = ${SWEEP_STAT.released} + EXISTS (${current}), ${SWEEP_STAT.dropped} = ${SWEEP_STAT.dropped} + EXISTS (${moved}) WHERE ${SWEEP_STAT.name} = 'leases'`,
        [...lease, ...lease],
      ),
      // As DELETE /allocations/{consumer}: the allocations, then the consumer (its lease goes with it, by trigger).
      stmt(`DELETE FROM allocations WHERE ${ALLOC.consumerId} = ? AND EXISTS (${current})`, [uuid, ...lease]),
      stmt(`DELETE FROM consumers WHERE ${CONSUMER.uuid} = ? AND EXISTS (${current}) RETURNING ${CONSUMER.uuid}`, [uuid, ...lease]),
      stmt(`DELETE FROM ext_leases WHERE ${LEASE.consumerUuid} = ? AND ${LEASE.expiresAtMs} = ? RETURNING ${LEASE.consumerUuid}`, lease),
    );
  }
  if (!leases.length) return { released: [], dropped: [] };
  const results = await commitGuarded(store, statements);
  const outcome: SweepOutcome = { released: [], dropped: [] };
  leases.forEach(({ uuid }, i) => {
    const [consumerDeleted, leaseDeleted] = [results[1 + i * 4 + 2]!, results[1 + i * 4 + 3]!];
    if (consumerDeleted.rows.length) outcome.released.push(uuid);
    else if (leaseDeleted.rows.length) outcome.dropped.push(uuid);
  });
  return outcome;
}

export interface LeaseStats {
  active: number;
  expired_unswept: number;
  sweeps: number;
  released: number;
  dropped: number;
  binding_failures: number;
  last_sweep_at: string | null;
}

/** What leaseStats reads, at `nowMs` (the audit joins them to its read batch). */
export const leaseStatsStatements = (nowMs: number): InStatement[] => [
  {
    sql: `SELECT count(*) AS active, COALESCE(SUM(${LEASE.expiresAtMs} <= ?), 0) AS expired FROM ext_leases`,
    args: [nowMs],
  },
  {
    sql: `SELECT ${SWEEP_STAT.runs}, ${SWEEP_STAT.released}, ${SWEEP_STAT.dropped}, ${SWEEP_STAT.bindingFailures}, ${SWEEP_STAT.lastRunAt} FROM ext_sweep_stats WHERE ${SWEEP_STAT.name} = 'leases'`,
    args: [],
  },
];

/** The sweep's counters and the leases held, from leaseStatsStatements' results. */
export function leaseStatsOf([counts, stats]: ResultSet[]): LeaseStats {
  const c = counts!.rows[0]!;
  const s = stats!.rows[0];
  return {
    active: Number(c.active),
    expired_unswept: Number(c.expired),
    sweeps: Number(s?.[SWEEP_STAT.runs] ?? 0),
    released: Number(s?.[SWEEP_STAT.released] ?? 0),
    dropped: Number(s?.[SWEEP_STAT.dropped] ?? 0),
    binding_failures: Number(s?.[SWEEP_STAT.bindingFailures] ?? 0),
    last_sweep_at: s === undefined ? null : strOrNull(s, SWEEP_STAT.lastRunAt),
  };
}

/** The sweep's counters and the leases now held. */
export async function leaseStats(store: DataStore, nowMs: number): Promise<LeaseStats> {
  return leaseStatsOf(await store.readBatch(leaseStatsStatements(nowMs)));
}
