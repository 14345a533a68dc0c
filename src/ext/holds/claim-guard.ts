// Holds on the write side (docs/holds.md), through the write kernel's hooks
// (placement/writes/kernel.ts), so every claim path (PUT /allocations/{c},
// POST /allocations, POST /reshaper) is checked in its own write batch with no
// round trip of its own:
//  - the one-batch claim: the declaration's condition as of the write
//    (declaration.ts), that every held (provider, class) the claimed consumers
//    now use has room for all its allocations and what every hold on it still
//    sets aside beyond its claims' draws, at once (more than the rule asks);
//    where one has not, or the claim draws from a hold, the ordinary path
//    decides with the model;
//  - the ordinary path: the snapshot reads the holds on the claimed
//    providers, the allocations on what they hold (with their ends and draws)
//    and the capacities; the model decides (model.ts refuseClaim); a grant
//    adds a check to the write batch that the holds there are still those
//    read (a hold admitted meanwhile makes the claim decide again), while the
//    providers' generations protect the allocations read, and a hold's own
//    write checks them (a claim admitted meanwhile makes the hold decide again).
//    So a claim and a hold, or two claims, never both pass on stale reads.
// The parameters: `ext_until` (a time, or seconds from now) writes a lease
// expiring then in the claim's batch, so the claim's end is enforced, not
// trusted; `ext_hold` records the claim as drawn from the hold (in the same
// batch, with a condition that it only uses what the hold holds).
import type { InValue } from '@libsql/client';
import { ALLOC, CONSUMER, HOLD_AMOUNT, HOLD_DRAW } from '../../db/columns.js';
import { type SetAsideConstraint, setAsideHoldsSql } from '../../placement/capacity.js';
import { guard, stmt, type WriteStatement } from '../../db/write-batch.js';
import { conflict, invalid } from '../../errors.js';
import type { ConsumerClaim } from '../../placement/repo/allocations.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID } from '../../placement/repo/consumers.js';
import type { ClaimGuard, ClaimParams, ClaimView, WriteExtension } from '../../placement/writes/kernel.js';
import { leaseStatement } from '../allocation-ends.js';
import { allocationsOf, type Claim, type ClaimRefusal, FOREVER, type Key, keyOf, refuseClaim, splitKey, type World } from './model.js';
import { holdsEndGuard } from './end-guard.js';
import { sameHoldsGuard, worldOf, worldStatements } from './repo.js';

export const CAPACITY_HELD = 'placement.ext.capacity_held';
export const HOLD_DRAW_REFUSED = 'placement.ext.hold_draw_refused';

/** Longest a claim may declare it lasts with ext_until: a year (beyond that it is not backfill). */
const MAX_UNTIL_MS = 366 * 24 * 3600_000;

/** ext_until: an RFC 3339 time, or whole seconds from now; after now, within a year. */
export function parseUntil(raw: string, nowMs: number): number {
  const ms = /^[0-9]+$/.test(raw) ? nowMs + Number(raw) * 1000 : /^\d{4}-\d\d-\d\dT/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms))
    throw invalid(`Invalid query string parameters: ext_until must be an RFC 3339 time or whole seconds, not '${raw}'`);
  if (ms <= nowMs) throw invalid(`Invalid query string parameters: ext_until ${new Date(ms).toISOString()} is not after now`);
  if (ms - nowMs > MAX_UNTIL_MS) throw invalid('Invalid query string parameters: ext_until is more than a year away');
  return ms;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function parseHoldParam(raw: string): string {
  const uuid = raw.toLowerCase();
  if (!UUID.test(uuid)) throw invalid(`Invalid query string parameters: ext_hold must be a hold's uuid, not '${raw}'`);
  return uuid;
}

/** A claim's terms from the request's parameters. */
function termsOf(params: ReadonlyMap<string, string>, nowMs: number): { untilMs: number; holdId: string | null } {
  const until = params.get('ext_until');
  const hold = params.get('ext_hold');
  return { untilMs: until === undefined ? FOREVER : parseUntil(until, nowMs), holdId: hold === undefined ? null : parseHoldParam(hold) };
}

const hasAllocations = (claim: ConsumerClaim) => Object.keys(claim.allocations).length > 0;

/** What a claim with ext_until / ext_hold writes in its own batch, after its allocations. */
export const holdClaimParams: ClaimParams = {
  names: ['ext_until', 'ext_hold'],
  alongside: (params, claims, nowMs) => {
    const { untilMs, holdId } = termsOf(params, nowMs);
    const statements: WriteStatement[] = [];
    for (const claim of claims) {
      if (!hasAllocations(claim)) continue;
      if (untilMs !== FOREVER) statements.push(leaseStatement(claim.uuid, Math.ceil((untilMs - nowMs) / 1000), nowMs, untilMs));
      if (holdId !== null) statements.push(...drawStatements(claim.uuid, holdId));
    }
    return statements;
  },
  // A draw is granted by the model alone (the hold's project, window and amount).
  asSent: (params) => !params.has('ext_hold'),
};

/** Records the consumer, as written, as drawn from the hold, only where every allocation of it is on what the hold holds. */
function drawStatements(consumer: string, holdId: string): WriteStatement[] {
  const args: InValue[] = [consumer, holdId];
  return [
    guard(
      `NOT EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.consumerId} = ? AND NOT EXISTS (SELECT 1 FROM ext_hold_amounts ha
        WHERE ha.${HOLD_AMOUNT.holdUuid} = ? AND ha.${HOLD_AMOUNT.resourceProviderId} = a.${ALLOC.resourceProviderId} AND ha.${HOLD_AMOUNT.resourceClassId} = a.${ALLOC.resourceClassId}))`,
      args,
    ),
    stmt(
      `INSERT INTO ext_hold_draws (${HOLD_DRAW.consumerUuid}, ${HOLD_DRAW.holdUuid}, ${HOLD_DRAW.consumerGeneration})
        SELECT c.${CONSUMER.uuid}, ?, c.${CONSUMER.generation} FROM consumers c WHERE c.${CONSUMER.uuid} = ?
        ON CONFLICT (${HOLD_DRAW.consumerUuid}) DO UPDATE SET ${HOLD_DRAW.holdUuid} = excluded.${HOLD_DRAW.holdUuid}, ${HOLD_DRAW.consumerGeneration} = excluded.${HOLD_DRAW.consumerGeneration}`,
      [holdId, consumer],
      { mustChange: true },
    ),
  ];
}

function refusalError(refusal: ClaimRefusal): Error {
  const when = (ms: number) => new Date(ms).toISOString();
  switch (refusal.reason) {
    case 'held': {
      const { provider, resourceClass } = splitKey(refusal.violation.key);
      return conflict(
        `Unable to create allocation for '${resourceClass}' on resource provider '${provider}'. The capacity is held from ${when(refusal.violation.atMs)} ` +
          `(${refusal.violation.load} held and allocated of ${refusal.violation.capacity}); a claim that ends before then may use it (ext_until).`,
        CAPACITY_HELD,
      );
    }
    case 'unknown_hold':
      return conflict(`Hold ${refusal.holdId} holds nothing on these resource providers`, HOLD_DRAW_REFUSED);
    case 'not_hold_project':
      return conflict(`Hold ${refusal.holdId} is not held for project '${refusal.project}'`, HOLD_DRAW_REFUSED);
    case 'outside_window':
      return conflict(`Hold ${refusal.holdId} is not in its window now`, HOLD_DRAW_REFUSED);
    case 'not_held': {
      const { provider, resourceClass } = splitKey(refusal.key);
      return conflict(`Hold ${refusal.holdId} holds no '${resourceClass}' on resource provider '${provider}'`, HOLD_DRAW_REFUSED);
    }
    case 'hold_exhausted': {
      const { provider, resourceClass } = splitKey(refusal.key);
      return conflict(
        `Hold ${refusal.holdId} has ${refusal.amount - refusal.drawn} of ${refusal.amount} '${resourceClass}' left on resource provider '${provider}', not ${refusal.asked}`,
        HOLD_DRAW_REFUSED,
      );
    }
  }
}

/** The model's claims of a view, one per consumer, in body order. */
function claimsOf(view: ClaimView, terms: { untilMs: number; holdId: string | null }): Claim[] {
  return view.claims.map((c) => {
    const amounts = new Map<Key, number>();
    for (const [provider, resources] of Object.entries(c.allocations)) {
      for (const [resourceClass, amount] of Object.entries(resources)) {
        const k = keyOf(provider, resourceClass);
        amounts.set(k, (amounts.get(k) ?? 0) + amount);
      }
    }
    return { consumer: c.uuid, project: c.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID, amounts, ...terms };
  });
}

/**
 * The guard of the holds declared by `d`. Its snapshot reads every stored
 * hold on the claimed providers (the decision leaves out those over by the
 * claim's time), and only held (provider, class) pairs' allocations and
 * capacities: a cloud without holds reads three empty results. The one-batch
 * claim's condition is the declaration's (setAsideHoldsSql): every row, whatever
 * its window and its claims' ends, a bound above the rule's load at any
 * instant, so a claim it grants the model would grant; where it does not, the
 * ordinary path decides.
 */
export function holdsClaimGuard(d: SetAsideConstraint): ClaimGuard {
  return {
    name: d.name,
    snapshotStatements: (providerUuids) => worldStatements(d, providerUuids, 0, true).slice(0, 3),
    decider: (results) => (view) => {
      const nowMs = Date.parse(view.now);
      const read = worldOf(results, nowMs);
      const providers = [...new Set(view.entries.map((e) => e.provider.uuid))];
      const check = { checks: [sameHoldsGuard(providers, 0, read.holds)] };
      const terms = termsOf(view.params, nowMs);
      if (read.world.holds.length === 0 && terms.holdId === null) return check;
      let world: World = read.world;
      for (const claim of claimsOf(view, terms)) {
        const refusal = refuseClaim(world, claim);
        if (refusal) return { error: refusalError(refusal) };
        world = {
          ...world,
          allocations: [...world.allocations.filter((a) => a.consumer !== claim.consumer), ...allocationsOf(claim, world.holds)],
        };
      }
      return check;
    },
    holdsSql: (consumers) => setAsideHoldsSql(d, consumers),
  };
}

/** What holds add to the write kernel, for the holds declared by `d`. */
export const holdsWrites = (d: SetAsideConstraint): WriteExtension => ({
  claimGuards: [holdsClaimGuard(d)],
  claimParams: holdClaimParams,
  endGuards: [holdsEndGuard(d)],
});
