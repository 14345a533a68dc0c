// Holds (docs/holds.md): POST/GET /ext/holds, GET/PATCH/DELETE
// /ext/holds/{uuid}, GET /ext/holds/availability. Logic in ../../holds/.
import type { z } from 'zod';
import { badQuery, queryParams } from '../../../http/validate.js';
import { RouteTable, zodQuery } from '../../../http/route-table.js';
import type { AppContext } from '../../../http/env.js';
import type { SetAsideConstraint } from '../../../placement/capacity.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import {
  AvailabilityResponse,
  availabilityTimes,
  HoldListResponse,
  HoldResponse,
  HoldsTimelineResponse,
  listHoldsQuery,
  patchHoldSchema,
  postHoldRequestSchema,
} from '../schemas.js';
import { createHold, deleteHold, findHolds, getHold, type HoldDeps, patchHold, presentHold } from '../service.js';
import { pickHeld } from '../pick.js';
import { findAvailability } from '../availability.js';
import { holdsTimeline } from '../timeline.js';
import { gangQuery } from '../../gangs/http/routes.js';
import { adminJson } from '../../http/admin-only.js';

/** The holds' service as a request of the app reaches it, admitting by `declaration`. */
export const holdDepsOf = (c: AppContext, declaration: SetAsideConstraint): HoldDeps => {
  const { deps } = c.var;
  return { store: deps.store, declaration, nowMs: () => deps.clock().getTime(), newId: deps.newId };
};

const HOLD = { name: 'Hold', schema: HoldResponse };
const HOLD_LIST = { name: 'HoldList', schema: HoldListResponse };

function parsedQuery<S extends z.ZodType>(c: AppContext, schema: S): z.infer<S> {
  const query = schema.safeParse(c.req.query());
  if (!query.success) throw badQuery(`Invalid query string parameters: ${query.error.issues[0]!.message}`);
  return query.data;
}

/** The holds' routes, holds admitted by `d` (the holds' own declaration; a test declares another). */
export function holdRoutesOf(d: SetAsideConstraint): RouteTable {
  const holdRoutes = new RouteTable('extensions', placementHttp);
  const holdDeps = (c: AppContext) => holdDepsOf(c, d);

  holdRoutes.resource('/holds', {
    GET: adminJson({
      summary: 'Extension: holds, by project and by an instant their window covers, soonest start first',
      query: () => zodQuery(listHoldsQuery),
      answer: { description: 'Holds', ...HOLD_LIST },
      fresh: true,
      run: async (c) => ({ holds: (await findHolds(holdDeps(c), parsedQuery(c, listHoldsQuery))).map(presentHold) }),
    }),
    POST: adminJson({
      summary: 'Extension: hold capacity for a project over a window (409 placement.ext.hold_unsatisfiable when it does not fit)',
      body: { name: 'PostHold', schema: postHoldRequestSchema },
      answer: { status: 201, description: 'The hold', ...HOLD },
      run: async (c, { query, allocations, ...body }) => {
        // A query: placement picks the providers now, as a gang search would, and pins them.
        const held =
          allocations ?? (await pickHeld(c.var.deps.store, query!, c.var.mv, c.var.deps.candidates.options({ randomize: false })));
        return presentHold(await createHold(holdDeps(c), { ...body, allocations: held }));
      },
    }),
  });

  holdRoutes.resource('/holds/availability', {
    GET: adminJson({
      summary:
        'Extension: the earliest start at which an allocation-candidates query (with count: a gang) fits for `duration` seconds, beside allocations that end and holds',
      query: (mv) => [...zodQuery(availabilityTimes), ...gangQuery(mv).map((p) => ({ ...p, required: false }))],
      answer: { description: 'The earliest start and what fits then, or null', name: 'HoldAvailability', schema: AvailabilityResponse },
      fresh: true,
      run: (c) => {
        const { duration, after, ...query } = queryParams(c);
        const times = availabilityTimes.safeParse({ duration: duration?.[0], after: after?.[0] });
        if (!times.success || (duration?.length ?? 0) > 1 || (after?.length ?? 0) > 1)
          throw badQuery(`Invalid query string parameters: ${times.error?.issues[0]?.message ?? 'duration and after may be given once'}`);
        const { deps } = c.var;
        const nowMs = deps.clock().getTime();
        const afterMs = times.data.after === undefined ? nowMs : Date.parse(times.data.after);
        return findAvailability(deps.store, d, deps.candidates, c.var.mv, query, {
          durationMs: times.data.duration * 1000,
          afterMs,
          nowMs,
        });
      },
    }),
  });

  holdRoutes.resource('/holds/timeline', {
    GET: adminJson({
      summary:
        "Extension: holds not over, per aggregate and provider, with each window and what is held and drawn (the dashboard's time line)",
      answer: { description: 'The time line', name: 'HoldsTimeline', schema: HoldsTimelineResponse },
      run: (c) => {
        const { deps } = c.var;
        // no-store, as this route has always answered (fresh would say no-cache).
        c.header('cache-control', 'no-store');
        return holdsTimeline(deps.store.nearby, d, deps.clock().getTime());
      },
    }),
  });

  holdRoutes.resource('/holds/:uuid', {
    GET: adminJson({
      summary: 'Extension: a hold',
      answer: { description: 'The hold', ...HOLD },
      fresh: true,
      run: async (c) => presentHold(await getHold(holdDeps(c), consumerOfPath(c.req.param('uuid')))),
    }),
    PATCH: adminJson({
      summary: 'Extension: edit a hold at the generation read (its window, amounts, flags); admitted again as a new one',
      body: { name: 'PatchHold', schema: patchHoldSchema },
      answer: { description: 'The hold', ...HOLD },
      run: async (c, body) => presentHold(await patchHold(holdDeps(c), consumerOfPath(c.req.param('uuid')), body)),
    }),
    DELETE: adminJson({
      summary: 'Extension: remove a hold (claims drawn from it stay, as ordinary claims)',
      answer: { status: 204, description: 'Removed' },
      run: (c) => deleteHold(holdDeps(c), consumerOfPath(c.req.param('uuid'))),
    }),
  });
  return holdRoutes;
}
