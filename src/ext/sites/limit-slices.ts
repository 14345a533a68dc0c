// Per-project limit slices of edge sites (docs/sites.md), on the primary: a
// site's part of a project's limit of a class, taken out of the limit for
// everyone but the site. The rule is declared once (declaration.ts); from it,
// through placement/capacity.ts (capacity set aside): the claim guard
// (snapshot, decision, the check as of the write, the one-batch condition)
// and the PUT's admission. A site's own draw (ext_hold) moves usage from its
// slice to the ledger: the load stays; anyone else's claim finds the slice taken.
import type { InStatement, ResultSet } from '@libsql/client';
import { ALLOC, CONSUMER, HOLD, HOLD_DRAW, PROJECT, RC, SITE_LIMIT_SLICE as S } from '../../db/columns.js';
import { inList, stmt, type WriteStatement } from '../../db/write-batch.js';
import { conflict } from '../../errors.js';
import {
  raisesOverBound,
  type SetAsideConstraint,
  setAsideColumnsSql,
  setAsideHoldsSql,
  setAsideLoad,
  setAsideWithinBoundsCheck,
} from '../../placement/capacity.js';
import type { ConsumerClaim } from '../../placement/repo/allocations.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID } from '../../placement/repo/consumers.js';
import type { ClaimGuard, ClaimView, WriteExtension } from '../../placement/writes/kernel.js';
import { LIMIT_EXCEEDED } from '../limits/guard.js';
import { type Counting, countedSql, countsConsumer } from '../limits/sql.js';
import { siteOwnerSql } from './declaration.js';

/** One site's slice of (project, class) as read, with what the site has drawn of it. */
export interface SiteLimitSlice {
  site: string;
  /** The site's capacity hold (null: none yet). */
  hold: string | null;
  project: string;
  resourceClass: string;
  amount: number;
  drawn: number;
}

/** Per (project, class) with a slice somewhere: its limit (null: none), the ledger's usage, every site's slice. */
export interface SlicedKey {
  project: string;
  resourceClass: string;
  bound: number | null;
  used: number;
  slices: SiteLimitSlice[];
}

const keyOf = (project: string, rc: string) => `${project}\u0000${rc}`;

/** Every site's slices of `projects`' limits, with what each site drew, their limits and usage, in one statement. */
export function slicedKeysStatement(projects: readonly string[], d: SetAsideConstraint): InStatement {
  return {
    sql: `SELECT s.${S.site} AS site, h.${HOLD.uuid} AS hold, s.${S.project} AS project, s.${S.resourceClass} AS rc, ${setAsideColumnsSql(d, 's')}
      FROM ${d.setAside.table} s LEFT JOIN ext_holds h ON h.${HOLD.projectId} = ${siteOwnerSql(`s.${S.site}`)}
      WHERE s.${S.project} IN (${inList(projects)})`,
    args: [...projects],
  };
}

export function slicedKeysOf(result: ResultSet): Map<string, SlicedKey> {
  const keys = new Map<string, SlicedKey>();
  for (const r of result.rows) {
    const project = String(r.project);
    const resourceClass = String(r.rc);
    const k = keyOf(project, resourceClass);
    let key = keys.get(k);
    if (!key) {
      key = { project, resourceClass, bound: r.bound === null ? null : Number(r.bound), used: Number(r.used), slices: [] };
      keys.set(k, key);
    }
    key.slices.push({
      site: String(r.site),
      hold: r.hold === null ? null : String(r.hold),
      project,
      resourceClass,
      amount: Number(r.amount),
      drawn: Number(r.drawn),
    });
  }
  return keys;
}

/** The refusal of a write that would take a project's usage and the sites' slices of it over its limit. */
export function sliceHeldRefusal(key: SlicedKey, load: number): Error {
  const held = setAsideLoad(0, key.slices);
  return conflict(
    `Unable to create allocation for '${key.resourceClass}' for project '${key.project}': it would exceed the project's limit, ` +
      `${held} of which is held for edge sites (limit slices). (limit ${key.bound}, usage ${key.used}, held for sites ${held}, requested ${load - key.used - held})`,
    LIMIT_EXCEEDED,
  );
}

const projectOf = (claim: { projectId?: string | null }) => claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID;

/**
 * The claim guard: a claim whose (project, class) has limit slices is refused where it raises the
 * load over the limit, a draw from a site's hold (ext_hold) spending the site's slice first; a
 * grant that raises the load is checked again as of the write. No slice of a claimed project: one
 * empty read, and nothing to decide.
 */
export function siteLimitSlicesGuard(counting: Counting, d: SetAsideConstraint): ClaimGuard {
  const counts = (type: string | null) => countsConsumer(counting, type);
  return {
    name: d.name,
    snapshotStatements: (_providers, consumers, claims) => [
      slicedKeysStatement([...new Set(claims.map(projectOf))], d),
      // What the claimed consumers hold now, and the hold they are drawn from (as written).
      {
        sql: `SELECT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc, d.${HOLD_DRAW.holdUuid} AS hold, total(a.${ALLOC.used}) AS used
          FROM consumers c JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId}
          JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
          JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
          LEFT JOIN ext_hold_draws d ON d.${HOLD_DRAW.consumerUuid} = c.${CONSUMER.uuid} AND d.${HOLD_DRAW.consumerGeneration} = c.${CONSUMER.generation}
          WHERE c.${CONSUMER.uuid} IN (${inList(consumers)}) AND ${countedSql('c')}
          GROUP BY p.${PROJECT.externalId}, rc.${RC.name}, d.${HOLD_DRAW.holdUuid}`,
        args: [...consumers],
      },
    ],
    decider: ([slicedRows, heldRows]) => {
      const sliced = slicedKeysOf(slicedRows!);
      if (sliced.size === 0) return () => null;
      const held = new Map<string, { total: number; byHold: Map<string, number> }>();
      for (const r of heldRows!.rows) {
        const k = keyOf(String(r.project), String(r.rc));
        const h = held.get(k) ?? { total: 0, byHold: new Map<string, number>() };
        h.total += Number(r.used);
        if (r.hold !== null) h.byHold.set(String(r.hold), (h.byHold.get(String(r.hold)) ?? 0) + Number(r.used));
        held.set(k, h);
      }
      return (view: ClaimView) => {
        const drawFrom = view.params.get('ext_hold')?.toLowerCase() ?? null;
        const asked = new Map<string, number>();
        const byConsumer = new Map(view.claims.map((c): [string, ConsumerClaim] => [c.uuid, c]));
        for (const entry of view.entries) {
          const claim = byConsumer.get(entry.consumer)!;
          if (!counts(claim.consumerType ?? view.consumers.get(claim.uuid)?.type ?? null)) continue;
          const k = keyOf(projectOf(claim), entry.resourceClass);
          asked.set(k, (asked.get(k) ?? 0) + entry.amount);
        }
        // Consumers rewritten with no allocation of a class still leave what they held of it.
        for (const k of held.keys()) if (!asked.has(k)) asked.set(k, 0);
        const raised: [string, string][] = [];
        for (const [k, amount] of asked) {
          const key = sliced.get(k);
          if (!key || key.bound === null) continue;
          const h = held.get(k);
          const before = setAsideLoad(key.used, key.slices);
          const after = setAsideLoad(
            key.used - (h?.total ?? 0) + amount,
            key.slices.map((s) => ({
              amount: s.amount,
              // The claimed consumers' draws are rewritten: what they drew goes, what they draw now comes.
              drawn: s.drawn - (s.hold === null ? 0 : (h?.byHold.get(s.hold) ?? 0)) + (s.hold !== null && s.hold === drawFrom ? amount : 0),
            })),
          );
          if (raisesOverBound(before, after, key.bound)) return { error: sliceHeldRefusal(key, after) };
          if (after > before) raised.push([key.project, key.resourceClass]);
        }
        return raised.length > 0 ? { checks: [setAsideWithinBoundsCheck(d, raised)] } : null;
      };
    },
    // As of the write, no sliced (project, class) the claimed consumers use is over its limit (no slice: one probe).
    holdsSql: (consumers) => setAsideHoldsSql(d, consumers),
  };
}

export const siteLimitSlicesWrites = (counting: Counting, d: SetAsideConstraint): WriteExtension => ({
  claimGuards: [siteLimitSlicesGuard(counting, d)],
});

// ---- the PUT's side ----

/** A site's limit slices as asked: per project, per class, an amount. */
export type LimitSliceAmounts = ReadonlyMap<string, ReadonlyMap<string, number>>;

/** The statements that replace `site`'s limit slices with `slices`. */
export function limitSliceStatements(site: string, slices: LimitSliceAmounts): WriteStatement[] {
  const rows = [...slices].flatMap(([project, classes]) => [...classes].map(([rc, amount]) => [site, project, rc, amount] as const));
  return [
    stmt(`DELETE FROM ext_site_limit_slices WHERE ${S.site} = ?`, [site]),
    ...(rows.length > 0
      ? [
          stmt(
            `INSERT INTO ext_site_limit_slices (${S.site}, ${S.project}, ${S.resourceClass}, ${S.amount}) VALUES ${rows.map(() => '(?, ?, ?, ?)').join(', ')}`,
            rows.flat(),
          ),
        ]
      : []),
  ];
}

/** `site`'s limit slices as stored. */
export function siteLimitSlicesStatement(site: string): InStatement {
  return {
    sql: `SELECT ${S.project} AS project, ${S.resourceClass} AS rc, ${S.amount} AS amount FROM ext_site_limit_slices WHERE ${S.site} = ? ORDER BY ${S.project}, ${S.resourceClass}`,
    args: [site],
  };
}

export function limitSlicesOf(result: ResultSet): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const r of result.rows) {
    const classes = out.get(String(r.project)) ?? new Map<string, number>();
    classes.set(String(r.rc), Number(r.amount));
    out.set(String(r.project), classes);
  }
  return out;
}

/** The limits of (project, class) pairs, by name (null where none applies), and their usage. */
export function boundsStatement(keys: readonly (readonly [string, string])[], d: SetAsideConstraint): InStatement {
  const key = ["json_extract(j.value, '$[0]')", "json_extract(j.value, '$[1]')"];
  return {
    sql: `SELECT ${key[0]} AS project, ${key[1]} AS rc, ${d.keys.bound(key)} AS bound, ${d.keys.usage(key)} AS used FROM json_each(?) j`,
    args: [JSON.stringify(keys)],
  };
}

/**
 * The PUT's admission of `site`'s new limit slices beside every other site's: refused (limit
 * exceeded) where one raises a (project, class)'s load over its limit, a pair without a limit
 * refused as meaningless; granted with the check as of the write for every pair it raises.
 */
export function admitLimitSlices(
  site: string,
  slices: LimitSliceAmounts,
  sliced: ReadonlyMap<string, SlicedKey>,
  bounds: ResultSet,
  d: SetAsideConstraint,
): { refusal: Error | null; unlimited: [string, string] | null; checks: WriteStatement[] } {
  const raised: [string, string][] = [];
  const boundOf = new Map(bounds.rows.map((r) => [keyOf(String(r.project), String(r.rc)), r]));
  const touched = new Set<string>(
    [...sliced.values()].filter((k) => k.slices.some((s) => s.site === site)).map((k) => keyOf(k.project, k.resourceClass)),
  );
  for (const [project, classes] of slices) for (const rc of classes.keys()) touched.add(keyOf(project, rc));
  for (const k of touched) {
    const [project, rc] = k.split('\u0000') as [string, string];
    const row = boundOf.get(k);
    const existing = sliced.get(k);
    const bound = existing?.bound ?? (row && row.bound !== null ? Number(row.bound) : null);
    const amount = slices.get(project)?.get(rc);
    if (bound === null) {
      if (amount !== undefined) return { refusal: null, unlimited: [project, rc], checks: [] };
      continue;
    }
    const used = existing?.used ?? Number(row?.used ?? 0);
    const others = (existing?.slices ?? []).filter((s) => s.site !== site);
    const mine = existing?.slices.find((s) => s.site === site);
    const before = setAsideLoad(used, existing?.slices ?? []);
    const after = setAsideLoad(used, [...others, ...(amount === undefined ? [] : [{ amount, drawn: mine?.drawn ?? 0 }])]);
    if (raisesOverBound(before, after, bound))
      return {
        refusal: conflict(
          `Limit slice not admitted: project '${project}''s limit of '${rc}' is ${bound}, and its usage (${used}) with what the sites hold of it would come to ${after}`,
          LIMIT_EXCEEDED,
        ),
        unlimited: null,
        checks: [],
      };
    if (after > before) raised.push([project, rc]);
  }
  return { refusal: null, unlimited: null, checks: raised.length > 0 ? [setAsideWithinBoundsCheck(d, raised)] : [] };
}
