// Allocation leases (KEP-5007's binding conditions on the Placement side):
// /ext/leases/{consumer_uuid}. A lease holds a consumer's current allocations
// until it is confirmed (DELETE) or renewed (PUT); the sweep removes the
// allocations of a lease that expired unconfirmed, exactly as
// DELETE /allocations/{consumer} would, unless the consumer was written after
// the lease was set (its generation moved): then only the lease goes. The
// lease row and the sweep are the allocation ends other extensions write too
// (../allocation-ends.ts); this extension is their API, audit and panel.
import type { InStatement, ResultSet } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { LEASE, SWEEP_STAT } from '../../db/columns.js';
import { strOrNull } from '../../db/rows.js';
import { commitGuarded, stmt, type WriteStatement } from '../../db/write-batch.js';
import { LEASE_COLUMNS, leaseStatement } from '../allocation-ends.js';

export interface LeaseView {
  consumer_uuid: string;
  seconds: number;
  expires_at: string;
  /** The consumer's generation when the lease was set or renewed: a write after it keeps the allocations. */
  consumer_generation: number;
  created_at: string;
  updated_at: string;
}

const leaseOf = (r: Record<string, unknown>): LeaseView => ({
  consumer_uuid: String(r[LEASE.consumerUuid]),
  seconds: Number(r[LEASE.seconds]),
  expires_at: new Date(Number(r[LEASE.expiresAtMs])).toISOString(),
  consumer_generation: Number(r[LEASE.consumerGeneration]),
  created_at: String(r[LEASE.createdAt]),
  updated_at: String(r[LEASE.updatedAt]),
});

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
