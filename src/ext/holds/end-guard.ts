// Holds beside /ext/leases (docs/holds.md): renewing a consumer's lease, or
// confirming it (its allocations then last forever), changes when its
// allocations end, which the holds' rule reads. A backfill claim (ext_until)
// confirmed, or renewed past a window's start, would outlast what it was
// granted for: refused, naming the hold, where the rule would then break, and
// granted where it would not. The grant checks, first in the lease's own write
// batch, that the holds epoch is still the one read: any claim, hold, lease or
// inventory change on held capacity since moves it (drizzle/0010's triggers).
import { ALLOC, HOLD_AMOUNT, HOLD_EPOCH, RP } from '../../db/columns.js';
import { guard } from '../../db/write-batch.js';
import { conflict } from '../../errors.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import type { EndChangeGuard } from '../../placement/writes/kernel.js';
import { holdsAt, refuseEndChange, splitKey } from './model.js';
import { readWorld } from './repo.js';

export const LEASE_BREAKS_HOLD = 'placement.ext.capacity_held';

/** The end guard of the holds declared by `d`. */
export const holdsEndGuard = (d: SetAsideConstraint): EndChangeGuard => ({
  name: 'holds',
  decide: async (reader, change) => {
    const [providers, epoch, held] = await reader.readBatch([
      {
        sql: `SELECT DISTINCT p.${RP.uuid} AS uuid FROM allocations a JOIN resource_providers p ON p.${RP.id} = a.${ALLOC.resourceProviderId}
          WHERE a.${ALLOC.consumerId} = ?`,
        args: [change.consumer],
      },
      { sql: `SELECT ${HOLD_EPOCH.epoch} AS epoch FROM ext_holds_epoch`, args: [] },
      // Whether any hold is on the consumer's providers at all: most lease changes meet none, and need not read the providers' usage.
      {
        sql: `SELECT 1 FROM ext_hold_amounts WHERE ${HOLD_AMOUNT.resourceProviderId} IN
          (SELECT ${ALLOC.resourceProviderId} FROM allocations WHERE ${ALLOC.consumerId} = ?) LIMIT 1`,
        args: [change.consumer],
      },
    ]);
    const uuids = providers!.rows.map((r) => String(r.uuid));
    const read = Number(epoch!.rows[0]?.epoch ?? 0);
    // A hold written after this read moves the epoch, so the check below refuses the write and it is decided again.
    const unchanged = { checks: [guard(`(SELECT ${HOLD_EPOCH.epoch} FROM ext_holds_epoch) = ?`, [read])] };
    if (!uuids.length || held!.rows.length === 0) return unchanged;
    // Read after the epoch: a change between the two reads fails the check, never passes stale.
    const { world } = await readWorld(d, reader, uuids, change.nowMs);
    if (!world.holds.length) return unchanged;
    const v = refuseEndChange(world, change.consumer, change.endsAtMs);
    if (!v) return unchanged;
    const { provider, resourceClass } = splitKey(v.key);
    const names = holdsAt(world.holds, v.key, v.atMs).map((h) => h.id);
    const until = Number.isFinite(change.endsAtMs) ? `until ${new Date(change.endsAtMs).toISOString()}` : 'forever';
    return {
      error: conflict(
        `Consumer '${change.consumer}' may not keep its '${resourceClass}' on resource provider '${provider}' ${until}: ` +
          `hold ${names.join(', ')} holds it from ${new Date(v.atMs).toISOString()} (${v.load} held and allocated of ${v.capacity}).`,
        LEASE_BREAKS_HOLD,
      ),
    };
  },
});
