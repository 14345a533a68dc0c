// Holds as the candidates engine sees them (docs/holds.md): the parameters
// ext_until (backfill: the claim ends then) and ext_hold (drawing from a
// hold), and a read hook whose one statement joins the request's read batch
// (no round trip of its own; on a cloud without holds it reads nothing) and
// whose capacity rule offers a choice only where the claim it leads to would
// be admitted (model.ts refuseClaim): held capacity is offered to a request
// that ends before the window, or draws from the hold, and to no other.
import type { InStatement, ResultSet } from '@libsql/client';
import { ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, HOLD_DRAW, HOLD_EPOCH, LEASE } from '../../db/columns.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { invalidQuery } from '../../placement/candidates/errors.js';
import { type CandidateParam, type CandidateReadHook, type CapacityRule, extParam } from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { heldCapacitySql } from './declaration.js';
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

/** What the statement read, by held (provider id, class id) pair: a World of that pair alone (the rule is per pair). */
export interface HeldState {
  pairs: Map<number, World>;
  /** A stock request's allowance per pair (no ext_until, no ext_hold), and until when it stands (the pair's next change). */
  stock: Map<number, { allowance: number; untilMs: number; sinceMs: number }>;
}

/** The next instant after `nowMs` at which the pair's rule changes: a hold's start or end, an allocation's end. */
function nextChangeMs(world: World, nowMs: number): number {
  let next = FOREVER;
  for (const h of world.holds) for (const t of [h.startMs, h.endMs]) if (t > nowMs && t < next) next = t;
  for (const a of world.allocations) if (a.endsAtMs >= nowMs && a.endsAtMs + 1 < next) next = a.endsAtMs + 1;
  return next;
}

/** A (provider id, class id) pair as one number (class ids stay far below a million). */
const pairOf = (providerId: number, classId: number): number => providerId * 1_000_000 + classId;
const pairKey = (providerId: number, classId: number): Key => `${providerId} ${classId}`;

/**
 * One statement: the database's holds epoch ('v', with whether it differs
 * from the epoch the hook last kept), and only when it differs, every stored
 * hold, one row per amount as `d` counts it with the pair's capacity as `d` bounds it ('h'), then the
 * allocations on held pairs with their ends and draws ('a'). So while
 * nothing a hold's rule reads has changed, it reads one row.
 */
function heldStatement(d: SetAsideConstraint): (kept: { database: string; epoch: number } | null) => InStatement {
  const moved = `NOT EXISTS (SELECT 1 FROM ext_holds_epoch WHERE ${HOLD_EPOCH.epoch} = ? AND ${HOLD_EPOCH.database} = ?)`;
  // The text is the declaration's, so it is written once per hook; each request binds only the epoch it kept.
  const sql = `SELECT 'v' AS kind, ${HOLD_EPOCH.epoch} AS id, ${HOLD_EPOCH.database} AS project, ${moved} AS s, NULL AS e, NULL AS action, NULL AS rp, NULL AS rc, NULL AS n, NULL AS cap
      FROM ext_holds_epoch
    UNION ALL
    SELECT 'h', h.${HOLD.uuid}, h.${HOLD.projectId}, h.${HOLD.startMs}, h.${HOLD.endMs}, h.${HOLD.endAction},
        ha.${HOLD_AMOUNT.resourceProviderId}, ha.${HOLD_AMOUNT.resourceClassId}, ${d.setAside.amount('ha')},
        ${heldCapacitySql(d, 'ha', HOLD_AMOUNT.resourceProviderId, HOLD_AMOUNT.resourceClassId)}
      FROM ext_hold_amounts ha JOIN ext_holds h ON h.${HOLD.uuid} = ha.${HOLD_AMOUNT.holdUuid} WHERE ${moved}
    UNION ALL
    SELECT 'a', a.${ALLOC.consumerId}, CASE WHEN d.${HOLD_DRAW.consumerGeneration} = c.${CONSUMER.generation} THEN d.${HOLD_DRAW.holdUuid} END,
        CASE WHEN l.${LEASE.consumerGeneration} = c.${CONSUMER.generation} THEN l.${LEASE.expiresAtMs} END, NULL, NULL,
        a.${ALLOC.resourceProviderId}, a.${ALLOC.resourceClassId}, a.${ALLOC.used}, NULL
      FROM (SELECT DISTINCT ${HOLD_AMOUNT.resourceProviderId} AS rp, ${HOLD_AMOUNT.resourceClassId} AS rc FROM ext_hold_amounts WHERE ${moved}) hp
      JOIN allocations a ON a.${ALLOC.resourceProviderId} = hp.rp AND a.${ALLOC.resourceClassId} = hp.rc
      JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId}
      LEFT JOIN ext_leases l ON l.${LEASE.consumerUuid} = a.${ALLOC.consumerId} LEFT JOIN ext_hold_draws d ON d.${HOLD_DRAW.consumerUuid} = a.${ALLOC.consumerId}`;
  return (kept) => {
    const keptArgs = [kept?.epoch ?? -1, kept?.database ?? ''];
    return { sql, args: [...keptArgs, ...keptArgs, ...keptArgs] };
  };
}

/** The state of the 'h' and 'a' rows; null without holds. */
function stateOf(rows: ResultSet['rows']): HeldState | null {
  const pairs = new Map<number, World & { holds: Hold[]; allocations: Allocation[]; capacity: Map<Key, number> }>();
  const holdsById = new Map<string, Hold>();
  for (const r of rows) {
    if (r.kind === 'v') continue;
    const providerId = Number(r.rp);
    const classId = Number(r.rc);
    const pair = pairOf(providerId, classId);
    const key = pairKey(providerId, classId);
    let world = pairs.get(pair);
    if (!world) {
      world = { nowMs: 0, capacity: new Map(), allocations: [], holds: [] };
      pairs.set(pair, world);
    }
    if (r.kind === 'h') {
      const hold: Hold = {
        id: String(r.id),
        project: String(r.project),
        startMs: Number(r.s),
        endMs: Number(r.e),
        endAction: String(r.action) as EndAction,
        amounts: new Map([[key, Number(r.n)]]),
      };
      holdsById.set(hold.id, hold);
      world.holds.push(hold);
      world.capacity.set(key, r.cap === null ? 0 : Number(r.cap));
    } else {
      const holdId = r.project === null ? null : String(r.project);
      const leased = r.s === null ? FOREVER : Number(r.s);
      const from = holdId === null ? undefined : holdsById.get(holdId);
      world.allocations.push({
        consumer: String(r.id),
        project: '',
        key,
        amount: Number(r.n),
        endsAtMs: from ? drawnEndMs(from, leased) : leased,
        holdId,
      });
    }
  }
  return pairs.size > 0 ? { pairs, stock: new Map() } : null;
}

/** The state kept for an epoch was dropped before its read came back: offer nothing held, to anyone. */
const UNKNOWN: HeldState = { pairs: new Map(), stock: new Map() };

/**
 * The most a claim may add on the one pair of `world` (the largest amount
 * refuseClaim admits, by bisection: admission only gets harder as the amount grows).
 */
function allowanceOf(world: World, untilMs: number, holdId: string | undefined): number {
  const [key, capacity] = [...world.capacity][0]!;
  const hold = holdId === undefined ? undefined : world.holds.find((h) => h.id === holdId);
  const admits = (amount: number) =>
    refuseClaim(world, {
      consumer: '',
      project: hold?.project ?? '',
      amounts: new Map([[key, amount]]),
      untilMs,
      holdId: holdId ?? null,
    } satisfies Claim) === null;
  let low = 0;
  let high = Math.max(0, capacity);
  if (admits(high)) return high;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (admits(mid)) low = mid;
    else high = mid;
  }
  return low;
}

/** The rule for one request: pieces on held pairs within their allowance; with ext_hold, only on what the hold holds. */
function ruleFor(state: HeldState, request: CandidateRequest, nowMs: number): CapacityRule {
  if (state === UNKNOWN) return { fits: () => false };
  const untilMs = untilMsOf(extParam(request, untilParam), nowMs);
  const holdId = extParam(request, holdParam);
  const allowances = new Map<number, number>();
  const stock = untilMs === FOREVER && holdId === undefined;
  const allowance = (pair: number, world: World) => {
    let a = allowances.get(pair);
    if (a !== undefined) return a;
    // A stock request's allowance stands until the pair's next change: kept with the epoch's state.
    const known = stock ? state.stock.get(pair) : undefined;
    if (known && known.sinceMs <= nowMs && nowMs < known.untilMs) a = known.allowance;
    else {
      a = allowanceOf({ ...world, nowMs }, untilMs, holdId);
      if (stock) state.stock.set(pair, { allowance: a, sinceMs: nowMs, untilMs: nextChangeMs(world, nowMs) });
    }
    allowances.set(pair, a);
    return a;
  };
  const drawsFrom = (world: World | undefined) => world?.holds.some((h) => h.id === holdId) === true;
  return {
    // The allowance bounds what successive claims of this request add up to (admitting a then b is admitting a + b).
    room(providerId, classId) {
      const pair = pairOf(providerId, classId);
      const world = state.pairs.get(pair);
      return world === undefined ? undefined : allowance(pair, world);
    },
    fits(pieces, taken) {
      for (const p of pieces) {
        const pair = pairOf(p.providerId, p.classId);
        const world = state.pairs.get(pair);
        if (holdId !== undefined && !drawsFrom(world)) return false;
        if (world === undefined) continue;
        let amount = 0;
        if (taken) {
          taken.forEachOn(p.providerId, (classId, n) => {
            if (classId === p.classId) amount += n;
          });
        } else for (const q of pieces) if (q.providerId === p.providerId && q.classId === p.classId) amount += q.amount;
        if (amount > allowance(pair, world)) return false;
      }
      return true;
    },
  };
}

/** Epochs' states kept (requests overlap, and a database copied may keep the epoch's identity). */
const KEPT_STATES = 16;

/** The holds' read hook: the declaration it reads by (what a what-if lays its copy out with: ext/simulate). */
export interface HeldCapacityHook extends CandidateReadHook<HeldState | null> {
  readonly declaration: SetAsideConstraint;
}

/** The holds' hook among installed read hooks. */
export const isHeldCapacityHook = (hook: CandidateReadHook): hook is HeldCapacityHook => 'declaration' in hook;

/**
 * The read hook. Its rule judges at the request's instant on the app's clock
 * (the engine passes it), as the claim guard does; `now`, when given, replaces
 * it (a what-if judged at an instant of its own). It keeps the state of the
 * last epochs it read, so that a request reads the holds again only after
 * something they depend on changed: one hook per app (installed.ts), so an
 * app never reads a state another app kept. `d`: the holds' declaration (a test declares another).
 */
export function heldCapacityHook(d: SetAsideConstraint, now?: () => number): HeldCapacityHook {
  const kept = new Map<string, HeldState | null>();
  let last: { database: string; epoch: number } | null = null;
  const statement = heldStatement(d);
  return {
    name: 'holds',
    declaration: d,
    statement: () => statement(last),
    read: (result) => {
      const version = result?.rows[0];
      if (!result || !version || version.kind !== 'v') return null;
      const current = { database: String(version.project), epoch: Number(version.id) };
      const key = `${current.database}:${current.epoch}`;
      let state = kept.get(key);
      if (Number(version.s) === 1) {
        state = stateOf(result.rows);
        kept.delete(key);
        kept.set(key, state);
        if (kept.size > KEPT_STATES) kept.delete(kept.keys().next().value!);
      } else if (state === undefined) state = UNKNOWN;
      last = current;
      return state;
    },
    capacityRule: (state, request, nowMs) => {
      if (state) return ruleFor(state, request, now ? now() : nowMs);
      // No hold: only a request that draws from one is constrained (it has nothing to draw from).
      return extParam(request, holdParam) === undefined ? null : { fits: () => false };
    },
  };
}
