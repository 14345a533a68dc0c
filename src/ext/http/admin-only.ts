// Every /ext route but the counters' (which follow the inventory policies, as
// the agent writes them) requires EXT_RULE, checked before its handler runs.
import { type JsonOperation, json, type Route } from '../../http/route-table.js';
import { authorize } from '../../placement/http/middleware.js';
import { EXT_RULE } from '../policy.js';

/** `route` for admins only (EXT_RULE): the policy is checked first, as the handler's first line would. */
export function adminOnly<P extends string>(route: Route<P>): Route<P> {
  const { handler } = route;
  return {
    ...route,
    handler: async (c, next) => {
      authorize(c, EXT_RULE);
      return handler(c, next);
    },
  };
}

/** A JSON operation (json()) for admins only. */
export const adminJson = <P extends string, B = undefined>(op: JsonOperation<P, B>): Route<P> => adminOnly(json(op));
