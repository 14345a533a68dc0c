// Holds as the candidates engine sees them (docs/holds.md): the parameters
// ext_until (backfill: the claim ends then) and ext_hold (drawing from a
// hold), and a read hook whose one statement joins the request's read batch
// (no round trip of its own; on a cloud without holds it reads nothing) and
// whose capacity rule offers a choice only where the claim it leads to would
// be admitted (model.ts refuseClaim): held capacity is offered to a request
// that ends before the window, or draws from the hold, and to no other.
import type { InStatement, ResultSet } from '@libsql/client';
import { ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, HOLD_DRAW, INV, LEASE, RC } from '../../db/columns.js';
import { inList } from '../../db/write-batch.js';
import { capacitySql } from '../../placement/capacity.js';
import { invalidQuery } from '../../placement/candidates/errors.js';
import { type CandidateParam, type CandidateReadHook, type CapacityRule, extParam, type Piece } from '../../placement/candidates/hooks.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { type Allocation, type Claim, drawnEndMs, type EndAction, FOREVER, type Hold, type Key, refuseClaim, type World } from './model.js';

/** ext_until as given: a time, or seconds from the request's now. */
export type Until = { atMs: number } | { inSeconds: number };

export const untilParam: CandidateParam<Until> = {
  name: 'ext_until',
  description:
    'extension: the claim ends then (RFC 3339 time, or whole seconds from now): capacity held only after it is offered (docs/holds.md)',
  parse(values) {
    if (values.length !== 1) throw invalidQuery('ext_until may be given once');
    const raw = values[0]!.trim();
    if (/^[0-9]{1,9}$/.test(raw)) return { inSeconds: Number(raw) };
    const ms = /^\d{4}-\d\d-\d\dT/.test(raw) ? Date.parse(raw) : Number.NaN;
    if (!Number.isFinite(ms)) throw invalidQuery(`ext_until must be an RFC 3339 time or whole seconds, not '${raw.slice(0, 64)}'`);
    return { atMs: ms };
  },
};

export const holdParam: CandidateParam<string> = {
  name: 'ext_hold',
  description: 'extension: draw from this hold (its providers and amounts only, inside its window; docs/holds.md)',
  parse(values) {
    if (values.length !== 1) throw invalidQuery('ext_hold may be given once');
    const uuid = values[0]!.trim().toLowerCase();
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(uuid)) throw invalidQuery(`ext_hold must be a hold's uuid`);
    return uuid;
  },
};

const untilMsOf = (until: Until | undefined, nowMs: number): number =>
  until === undefined ? FOREVER : 'atMs' in until ? until.atMs : nowMs + until.inSeconds * 1000;

/** What the statement read: the World on held (provider id, class id) pairs, at the instant it was read. */
export interface HeldState {
  world: World;
}

const pairKey = (providerId: number, classId: number): Key => `${providerId} ${classId}`;

/**
 * One statement, three kinds of rows: every hold's amounts of the asked
 * classes ('h'), the allocations on those held pairs with their ends and
 * draws ('a'), and those pairs' capacities ('c').
 */
function heldStatement(classNames: readonly string[]): InStatement {
  const classes = `(SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} IN (${inList(classNames)}))`;
  const held = (alias: string, provider: string, resourceClass: string) =>
    `EXISTS (SELECT 1 FROM ext_hold_amounts x WHERE x.${HOLD_AMOUNT.resourceProviderId} = ${alias}.${provider} AND x.${HOLD_AMOUNT.resourceClassId} = ${alias}.${resourceClass})`;
  return {
    sql: `SELECT 'h' AS kind, h.${HOLD.uuid} AS id, h.${HOLD.projectId} AS project, h.${HOLD.startMs} AS s, h.${HOLD.endMs} AS e, h.${HOLD.endAction} AS action,
        ha.${HOLD_AMOUNT.resourceProviderId} AS rp, ha.${HOLD_AMOUNT.resourceClassId} AS rc, ha.${HOLD_AMOUNT.amount} AS n
      FROM ext_hold_amounts ha JOIN ext_holds h ON h.${HOLD.uuid} = ha.${HOLD_AMOUNT.holdUuid} WHERE ha.${HOLD_AMOUNT.resourceClassId} IN ${classes}
    UNION ALL
    SELECT 'a', a.${ALLOC.consumerId}, CASE WHEN d.${HOLD_DRAW.consumerGeneration} = c.${CONSUMER.generation} THEN d.${HOLD_DRAW.holdUuid} END,
        CASE WHEN l.${LEASE.consumerGeneration} = c.${CONSUMER.generation} THEN l.${LEASE.expiresAtMs} END, NULL, NULL,
        a.${ALLOC.resourceProviderId}, a.${ALLOC.resourceClassId}, a.${ALLOC.used}
      FROM allocations a JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId}
      LEFT JOIN ext_leases l ON l.${LEASE.consumerUuid} = a.${ALLOC.consumerId} LEFT JOIN ext_hold_draws d ON d.${HOLD_DRAW.consumerUuid} = a.${ALLOC.consumerId}
      WHERE a.${ALLOC.resourceClassId} IN ${classes} AND ${held('a', ALLOC.resourceProviderId, ALLOC.resourceClassId)}
    UNION ALL
    SELECT 'c', NULL, NULL, NULL, NULL, NULL, i.${INV.resourceProviderId}, i.${INV.resourceClassId}, ${capacitySql('i')}
      FROM inventories i WHERE i.${INV.resourceClassId} IN ${classes} AND ${held('i', INV.resourceProviderId, INV.resourceClassId)}`,
    args: [...classNames, ...classNames, ...classNames],
  };
}

function stateOf(result: ResultSet | undefined, nowMs: number): HeldState | null {
  if (!result || result.rows.length === 0) return null;
  const holds = new Map<string, Hold & { amounts: Map<Key, number> }>();
  const rawAllocations: { consumer: string; key: Key; amount: number; leased: number; holdId: string | null }[] = [];
  const capacity = new Map<Key, number>();
  for (const r of result.rows) {
    const key = pairKey(Number(r.rp), Number(r.rc));
    if (r.kind === 'h') {
      if (Number(r.e) <= nowMs) continue;
      const id = String(r.id);
      let h = holds.get(id);
      if (!h) {
        h = {
          id,
          project: String(r.project),
          startMs: Number(r.s),
          endMs: Number(r.e),
          endAction: String(r.action) as EndAction,
          amounts: new Map(),
        };
        holds.set(id, h);
      }
      h.amounts.set(key, Number(r.n));
    } else if (r.kind === 'a') {
      rawAllocations.push({
        consumer: String(r.id),
        key,
        amount: Number(r.n),
        leased: r.s === null ? FOREVER : Number(r.s),
        holdId: r.project === null ? null : String(r.project),
      });
    } else capacity.set(key, Number(r.n));
  }
  if (holds.size === 0) return null;
  const allocations: Allocation[] = rawAllocations.map((a) => {
    const from = a.holdId === null ? undefined : holds.get(a.holdId);
    return {
      consumer: a.consumer,
      project: '',
      key: a.key,
      amount: a.amount,
      endsAtMs: from ? drawnEndMs(from, a.leased) : a.leased,
      holdId: a.holdId,
    };
  });
  return { world: { nowMs, capacity, allocations, holds: [...holds.values()] } };
}

/**
 * The most a claim on `key` may add there (the largest amount refuseClaim
 * admits, found by bisection: admission only gets harder as the amount grows).
 */
function allowanceOf(world: World, key: Key, untilMs: number, hold: Hold | undefined): number {
  const admits = (amount: number) =>
    refuseClaim(world, {
      consumer: '',
      project: hold?.project ?? '',
      amounts: new Map([[key, amount]]),
      untilMs,
      holdId: hold?.id ?? null,
    } satisfies Claim) === null;
  let low = 0;
  let high = Math.max(0, world.capacity.get(key) ?? 0);
  if (admits(high)) return high;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (admits(mid)) low = mid;
    else high = mid;
  }
  return low;
}

/** The rule for one request: pieces on held pairs within their allowance; with ext_hold, only on what the hold holds. */
function ruleFor(state: HeldState, request: CandidateRequest): CapacityRule | null {
  const { world } = state;
  const untilMs = untilMsOf(extParam(request, untilParam), world.nowMs);
  const holdId = extParam(request, holdParam);
  const hold = holdId === undefined ? undefined : world.holds.find((h) => h.id === holdId);
  const held = new Set(world.holds.flatMap((h) => [...h.amounts.keys()]));
  const allowances = new Map<Key, number>();
  const allowance = (key: Key) => {
    let a = allowances.get(key);
    if (a === undefined) {
      a = allowanceOf(world, key, untilMs, hold);
      allowances.set(key, a);
    }
    return a;
  };
  const within = (pieces: readonly Piece[], taken?: Parameters<CapacityRule['fits']>[1]) => {
    const asked = new Map<Key, number>();
    for (const p of pieces) {
      const key = pairKey(p.providerId, p.classId);
      if (holdId !== undefined && !hold?.amounts.has(key)) return false;
      if (held.has(key)) asked.set(key, taken ? 0 : (asked.get(key) ?? 0) + p.amount);
    }
    if (taken) {
      for (const key of asked.keys()) {
        const [providerId, classId] = key.split(' ').map(Number);
        taken.forEachOn(providerId!, (c, amount) => {
          if (c === classId) asked.set(key, (asked.get(key) ?? 0) + amount);
        });
      }
    }
    for (const [key, amount] of asked) if (amount > allowance(key)) return false;
    return true;
  };
  return { fits: within };
}

/** The read hook; `now` is the engine's clock (the request's instant). */
export function heldCapacityHook(now: () => number = Date.now): CandidateReadHook<HeldState | null> {
  return {
    name: 'holds',
    statement: heldStatement,
    read: (result) => stateOf(result, now()),
    capacityRule: (state, request) => {
      if (state) return ruleFor(state, request);
      // No hold: only a request that draws from one is constrained (it has nothing to draw from).
      return extParam(request, holdParam) === undefined ? null : { fits: () => false };
    },
  };
}
