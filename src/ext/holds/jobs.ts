// The hold sweep, registered with the job runner by the holds extension: it
// runs wherever the sweeps run, once per service (the Node primary's timer or
// the single process, the Worker's scheduled handler).
import type { Deps } from '../../deps.js';
import { sweepEndedHolds } from './sweep.js';

/** Ends the holds whose window is over, releasing what was drawn from those with end_action=release. Never throws. */
export async function sweepHolds(deps: Deps): Promise<number> {
  try {
    const { ended, released } = await sweepEndedHolds(deps.store, deps.clock().getTime());
    if (ended.length) deps.log.info('hold sweep ended holds', { holds: ended, released });
    return ended.length;
  } catch (err) {
    deps.log.error('hold sweep failed; the next sweep retries', { err: String(err) });
    return 0;
  }
}
