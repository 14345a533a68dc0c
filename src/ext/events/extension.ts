// The events stream (docs/events.md): a table any extension appends to from
// its own write batch (through the contract: its `events` log, which
// Deps.extensions.eventStatements hands to any reporter; or a trigger of a
// migration), GET /ext/events to read it (a long poll), and the retention
// sweep. Preemption's events are its first (drizzle/0013_ext_events.sql).
import type { Deps } from '../../deps.js';
import type { Extension } from '../../extension.js';
import { eventStatement, sweepOldEvents } from './events.js';
import { eventRoutes } from './http/routes.js';
import { EVENTS_SETTINGS, eventsConfigOf } from './settings.js';

/** Removes events past the retention. Never throws: the other sweeps still run. */
async function sweepEvents(deps: Deps): Promise<number> {
  try {
    const hours = eventsConfigOf(deps.config).PLACEMENT_EXT_EVENTS_RETENTION_HOURS;
    return await sweepOldEvents(deps.store, deps.clock().getTime(), hours * 3_600_000);
  } catch (err) {
    deps.log.error('event sweep failed; the next sweep retries', { err: String(err) });
    return 0;
  }
}

export const events: Extension = {
  name: 'events',
  settings: { shape: EVENTS_SETTINGS },
  jobs: { handlers: {}, sweeps: [sweepEvents] },
  routes: [eventRoutes],
  events: { statement: eventStatement },
};
