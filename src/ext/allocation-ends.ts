// When allocations end: a row of ext_leases (a lease) says a consumer's
// allocations end at a time unless the lease is confirmed (the row goes) or
// the consumer is written again (its generation moves); the sweep ends them
// then, exactly as DELETE /allocations/{consumer} would. A part several
// extensions write, each in its own batch: leases (its routes set, renew and
// confirm one on any consumer), gangs (a gang's lease_seconds), holds (a
// claim's ext_until) and preemption (its victims' grace). Each installs the
// sweep (the job runner runs a sweep installed twice once), so none requires
// another to have its ends kept, and each can be removed alone.
//
// Every write is one batch whose statements carry their own conditions, as of
// the write (no read to go stale): a lease is set from the consumer's row as
// it is then; the sweep releases a lease only while it is still the lease it
// read (same expiry: not renewed, not confirmed) and the consumer is still at
// the lease's generation (not rewritten). A failed ARQ bind of a leased
// consumer releases it at once, by trigger (drizzle/0006_ext_taints_leases.sql).
import type { Deps } from '../deps.js';
import type { DataStore } from '../db/client.js';
import { ALLOC, CONSUMER, LEASE, SWEEP_STAT } from '../db/columns.js';
import { commitGuarded, stmt, type WriteStatement } from '../db/write-batch.js';

/** Longest lease: 7 days (a lease is for the gap between claim and build, not for parking capacity). */
export const MAX_LEASE_SECONDS = 7 * 24 * 3600;

/** The columns of a lease, in the order leaseStatement writes them. */
export const LEASE_COLUMNS = [
  LEASE.consumerUuid,
  LEASE.consumerGeneration,
  LEASE.seconds,
  LEASE.expiresAtMs,
  LEASE.createdAt,
  LEASE.updatedAt,
].join(', ');

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

// The sweep, registered with the job runner by each extension that writes
// ends (src/jobs/registry.ts). It runs wherever the sweeps run, once per
// service: the Node primary's timer (or the single process), the Worker's
// scheduled handler; counted in /metrics (placement_lease_sweep_*_total)
// besides the leases' audit totals.

/** Releases expired leases; returns how many it released or dropped. Never throws: the other sweeps still run. */
export async function sweepLeases(deps: Deps): Promise<number> {
  try {
    const { released, dropped } = await sweepExpiredLeases(deps.store, deps.clock().getTime());
    if (released.length) deps.log.info('lease sweep released allocations', { consumers: released });
    if (dropped.length) deps.log.info('lease sweep dropped leases of rewritten consumers', { consumers: dropped });
    // Counted after the sweep's one write batch committed (all or nothing); zeros keep every series present.
    deps.metrics.leaseSweepRuns.inc(['ok']);
    deps.metrics.leaseSweepReleased.inc([], released.length);
    deps.metrics.leaseSweepDropped.inc([], dropped.length);
    return released.length + dropped.length;
  } catch (err) {
    deps.log.error('lease sweep failed; the next sweep retries', { err: String(err) });
    deps.metrics.leaseSweepRuns.inc(['failed']);
    return 0;
  }
}
