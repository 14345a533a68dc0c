// The end of a hold (docs/holds.md): once its window is over, the sweep
// removes it, and with end_action=release the claims drawn from it (as
// DELETE /allocations/{consumer} would: the allocations, then the consumer).
// A consumer rewritten since it drew (its generation moved) is left alone:
// it is an ordinary claim now. One read, then (only when some hold is over)
// one write batch whose statements carry their own conditions as of the
// write, so an edit that moved the hold's end between the two wins.
import type { DataStore } from '../../db/client.js';
import { ALLOC, CONSUMER, HOLD, HOLD_DRAW } from '../../db/columns.js';
import { commitGuarded, stmt, type WriteStatement } from '../../db/write-batch.js';

/** Most holds one sweep ends (one write batch); the next sweep takes the rest. */
export const HOLD_SWEEP_BATCH = 100;

export interface HoldSweepOutcome {
  /** Holds removed, their window over. */
  ended: string[];
  /** Consumers whose drawn allocations were released. */
  released: string[];
}

export async function sweepEndedHolds(store: DataStore, nowMs: number): Promise<HoldSweepOutcome> {
  const [over] = await store.readBatch([
    {
      sql: `SELECT h.${HOLD.uuid} AS uuid, h.${HOLD.endAction} AS end_action,
          (SELECT json_group_array(d.${HOLD_DRAW.consumerUuid}) FROM ext_hold_draws d JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid}
            WHERE d.${HOLD_DRAW.holdUuid} = h.${HOLD.uuid} AND d.${HOLD_DRAW.consumerGeneration} = c.${CONSUMER.generation}) AS drawn
        FROM ext_holds h WHERE h.${HOLD.endMs} <= ? ORDER BY h.${HOLD.endMs}, h.${HOLD.uuid} LIMIT ?`,
      args: [nowMs, HOLD_SWEEP_BATCH],
    },
  ]);
  const holds = over!.rows.map((r) => ({
    uuid: String(r.uuid),
    release: String(r.end_action) === 'release',
    drawn: JSON.parse(String(r.drawn)) as string[],
  }));
  if (holds.length === 0) return { ended: [], released: [] };
  // Still over as of the write (an edit may have moved its end).
  const stillOver = `EXISTS (SELECT 1 FROM ext_holds WHERE ${HOLD.uuid} = ? AND ${HOLD.endMs} <= ?)`;
  // Still drawn from it, as written then.
  const drawn = `SELECT d.${HOLD_DRAW.consumerUuid} FROM ext_hold_draws d JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid}
    WHERE d.${HOLD_DRAW.holdUuid} = ? AND d.${HOLD_DRAW.consumerGeneration} = c.${CONSUMER.generation}`;
  const statements: WriteStatement[] = [];
  for (const hold of holds) {
    if (hold.release && hold.drawn.length > 0) {
      statements.push(
        stmt(`DELETE FROM allocations WHERE ${ALLOC.consumerId} IN (${drawn}) AND ${stillOver}`, [hold.uuid, hold.uuid, nowMs]),
        stmt(
          `DELETE FROM consumers WHERE ${CONSUMER.uuid} IN (${drawn}) AND ${stillOver}
            AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.consumerId} = consumers.${CONSUMER.uuid}) RETURNING ${CONSUMER.uuid}`,
          [hold.uuid, hold.uuid, nowMs],
        ),
      );
    }
    // Its amounts and draws go with it (trigger).
    statements.push(stmt(`DELETE FROM ext_holds WHERE ${HOLD.uuid} = ? AND ${HOLD.endMs} <= ? RETURNING ${HOLD.uuid}`, [hold.uuid, nowMs]));
  }
  const results = await commitGuarded(store, statements);
  const released: string[] = [];
  const ended: string[] = [];
  let at = 0;
  for (const hold of holds) {
    if (hold.release && hold.drawn.length > 0) {
      released.push(...results[at + 1]!.rows.map((r) => String(r[CONSUMER.uuid])));
      at += 2;
    }
    if (results[at]!.rows.length > 0) ended.push(hold.uuid);
    at += 1;
  }
  return { ended, released };
}
