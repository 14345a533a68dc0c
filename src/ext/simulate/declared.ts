// The holds' declaration (ext/holds/declaration.ts; the app's own, as its
// holds hook carries it) over the simulation's copy: what it bounds each held
// (provider, class) pair by and what each hold amount sets aside, evaluated by
// the declaration's own SQL with the copy's rows standing in for the tables it
// reads (common table expressions of the same names shadow them within the
// one statement; nothing is written). So a simulation counts holds exactly as
// the app's claims, candidates and admissions do, whatever the declaration,
// and nothing here restates it. The copy's rows given are those of held pairs
// (their inventories and allocations, their consumers and draws) and every hold.
import type { InStatement, InValue } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, HOLD_DRAW, INV } from '../../db/columns.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import type { World, WorldHold } from './world.js';

/** The declaration's figures over a copy: bound by held pair, amount by hold and pair (keys: declaredKey). */
export interface DeclaredHolds {
  bound: Map<string, number | null>;
  amount: Map<string, number>;
}

/** A held pair's key, or a hold amount's (with its hold). */
export const declaredKey = (providerId: number, classId: number, holdId?: string): string =>
  holdId === undefined ? `${providerId} ${classId}` : `${holdId} ${providerId} ${classId}`;

/** A table of JSON rows (arrays, in `columns` order) under `name`, for a WITH clause. */
const table = (name: string, columns: readonly string[]) =>
  `${name}(${columns.join(', ')}) AS (SELECT ${columns.map((_, i) => `json_extract(j.value, '$[${i}]')`).join(', ')} FROM json_each(?) j)`;

const INVENTORY_COLUMNS = [
  INV.resourceProviderId,
  INV.resourceClassId,
  INV.total,
  INV.reserved,
  INV.minUnit,
  INV.maxUnit,
  INV.stepSize,
  INV.allocationRatio,
];
const HOLD_COLUMNS = [HOLD.uuid, HOLD.projectId, HOLD.startMs, HOLD.endMs, HOLD.endAction];
const AMOUNT_COLUMNS = [HOLD_AMOUNT.holdUuid, HOLD_AMOUNT.resourceProviderId, HOLD_AMOUNT.resourceClassId, HOLD_AMOUNT.amount];
const ALLOCATION_COLUMNS = [ALLOC.consumerId, ALLOC.resourceProviderId, ALLOC.resourceClassId, ALLOC.used];
const CONSUMER_COLUMNS = [CONSUMER.uuid, CONSUMER.generation];
const DRAW_COLUMNS = [HOLD_DRAW.consumerUuid, HOLD_DRAW.holdUuid, HOLD_DRAW.consumerGeneration];

/** The one statement: the copy's rows as the tables, then each held pair's bound ('b') and each amount as counted ('a'). */
function declaredStatement(d: SetAsideConstraint, world: World, holds: readonly WorldHold[]): InStatement {
  const held = new Set<string>();
  const amounts: InValue[][] = [];
  for (const h of holds)
    for (const a of h.amounts) {
      if (!world.providers.has(a.providerId)) continue;
      held.add(declaredKey(a.providerId, a.classId));
      amounts.push([h.id, a.providerId, a.classId, a.amount]);
    }
  const inventories: InValue[][] = [];
  for (const p of world.providers.values())
    for (const i of p.inventories)
      if (held.has(declaredKey(p.id, i.classId)))
        inventories.push([p.id, i.classId, i.total, i.reserved, i.minUnit, i.maxUnit, i.stepSize, i.allocationRatio]);
  const allocations: InValue[][] = [];
  const consumers: InValue[][] = [];
  const draws: InValue[][] = [];
  for (const c of world.consumers.values()) {
    const mine = c.allocations.filter((a) => held.has(declaredKey(a.providerId, a.classId)));
    if (mine.length === 0) continue;
    consumers.push([c.uuid, c.generation]);
    if (c.drawnFrom !== null) draws.push([c.uuid, c.drawnFrom, c.generation]);
    for (const a of mine) allocations.push([c.uuid, a.providerId, a.classId, a.used]);
  }
  const windows = holds.map((h) => [h.id, h.project, h.startMs, h.endMs, h.endAction]);
  const [rp, cls] = [HOLD_AMOUNT.resourceProviderId, HOLD_AMOUNT.resourceClassId];
  return {
    sql: `WITH ${table('inventories', INVENTORY_COLUMNS)}, ${table('ext_holds', HOLD_COLUMNS)}, ${table('ext_hold_amounts', AMOUNT_COLUMNS)},
        ${table('allocations', ALLOCATION_COLUMNS)}, ${table('consumers', CONSUMER_COLUMNS)}, ${table('ext_hold_draws', DRAW_COLUMNS)}
      SELECT 'b' AS kind, NULL AS hold, p.${rp} AS rp, p.${cls} AS cls, ${d.keys.bound([`p.${rp}`, `p.${cls}`])} AS value
        FROM (SELECT DISTINCT ${rp}, ${cls} FROM ext_hold_amounts) p
      UNION ALL
      SELECT 'a', ha.${HOLD_AMOUNT.holdUuid}, ha.${rp}, ha.${cls}, ${d.setAside.amount('ha')} FROM ext_hold_amounts ha`,
    args: [inventories, windows, amounts, allocations, consumers, draws].map((rows) => JSON.stringify(rows)),
  };
}

/** What `d` makes of the copy's holds (and of `extra`, a hold being admitted), in one read; empty without holds. */
export async function declaredHoldsOf(
  reader: BatchReader,
  d: SetAsideConstraint,
  world: World,
  extra: readonly WorldHold[] = [],
): Promise<DeclaredHolds> {
  const declared: DeclaredHolds = { bound: new Map(), amount: new Map() };
  const holds = [...world.holds, ...extra];
  if (holds.length === 0) return declared;
  const [result] = await reader.readBatch([declaredStatement(d, world, holds)]);
  for (const r of result!.rows) {
    const [providerId, classId] = [Number(r.rp), Number(r.cls)];
    if (r.kind === 'b') declared.bound.set(declaredKey(providerId, classId), r.value === null ? null : Number(r.value));
    else declared.amount.set(declaredKey(providerId, classId, String(r.hold)), Number(r.value));
  }
  return declared;
}
