// Holds' capacity rule, declared once (docs/holds.md): on each (provider,
// class) of placement's inventories, the allocations and what each hold sets
// aside beyond what its claims drew (ext_hold) stay within the capacity.
// model.ts states when (at every instant of every window from now on, each
// allocation while it lasts); this declaration states what: the keys, their
// bound, and the rows that set capacity aside. Derived from it by
// placement/capacity.ts: the one-batch claim's condition (claim-guard.ts: the
// rule at every instant at once, whatever the windows and ends, a bound above
// the model's load at any instant, so a claim it grants the model grants);
// and the capacity the model is given wherever it is read (repo.ts: the
// ordinary claim's decision, the routes' admissions and the audit;
// candidates.ts: the candidates' rule).
import { ALLOC, CONSUMER, HOLD_AMOUNT, HOLD_DRAW } from '../../db/columns.js';
import { INVENTORY_KEYS, type SetAsideConstraint } from '../../placement/capacity.js';

/**
 * What the claims drawn from the hold of amount row `ha` use of its (provider, class), as of the
 * statement: from the hold's draws to their consumers' allocations (CROSS JOIN keeps that order, and the
 * unary + keeps the pair's index out: not a walk of every allocation on the pair per draw).
 */
const drawnSql = (ha: string) => `(SELECT total(a.${ALLOC.used}) FROM ext_hold_draws d
    CROSS JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid} AND c.${CONSUMER.generation} = d.${HOLD_DRAW.consumerGeneration}
    CROSS JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
    WHERE d.${HOLD_DRAW.holdUuid} = ${ha}.${HOLD_AMOUNT.holdUuid}
      AND +a.${ALLOC.resourceProviderId} = ${ha}.${HOLD_AMOUNT.resourceProviderId} AND +a.${ALLOC.resourceClassId} = ${ha}.${HOLD_AMOUNT.resourceClassId})`;

export const HELD_CAPACITY: SetAsideConstraint = {
  name: 'holds',
  keys: INVENTORY_KEYS,
  setAside: {
    table: 'ext_hold_amounts',
    key: [HOLD_AMOUNT.resourceProviderId, HOLD_AMOUNT.resourceClassId],
    amount: (ha) => `${ha}.${HOLD_AMOUNT.amount}`,
    drawn: drawnSql,
  },
};

/** The capacity of the (provider id, class id) pair of `row`'s columns, as the declaration bounds it (NULL: no inventory). */
export const heldCapacitySql = (d: SetAsideConstraint, row: string, provider: string, resourceClass: string): string =>
  d.keys.bound([`${row}.${provider}`, `${row}.${resourceClass}`]);
