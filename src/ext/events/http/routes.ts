// The events stream (docs/events.md): GET /ext/events, a long poll. Logic in ../events.ts.
import { RouteTable, zodQuery } from '../../../http/route-table.js';
import { badQuery } from '../../../http/validate.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { adminJson } from '../../http/admin-only.js';
import { waitForEvents } from '../events.js';
import { EventPageResponse, eventsQuery } from '../schemas.js';

/** How often a waiting request reads the stream again (it sees every writer's events: other processes, sweeps, triggers). */
export const EVENT_POLL_MS = 250;

export const eventRoutes = new RouteTable('extensions', placementHttp);

eventRoutes.resource('/events', {
  GET: adminJson({
    summary:
      'Extension: events after a sequence, oldest first (preemptions, their victims released, nominations drawn or lapsed); waits up to `wait` seconds for one',
    query: () => zodQuery(eventsQuery),
    answer: { description: 'Events', name: 'EventPage', schema: EventPageResponse },
    fresh: true,
    run: async (c) => {
      const query = eventsQuery.safeParse(c.req.query());
      if (!query.success) throw badQuery(`Invalid query string parameters: ${query.error.issues[0]!.message}`);
      const { after, kind, wait, limit } = query.data;
      // The primary, not a replica: a reader that acted on an event must find what it reported.
      return waitForEvents(
        c.var.deps.store,
        { after, kinds: kind, limit },
        { waitMs: wait * 1000, pollMs: EVENT_POLL_MS, signal: c.req.raw.signal },
      );
    },
  }),
});
