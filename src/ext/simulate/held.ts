// Holds (ext/holds) over the simulation's copy of the cloud: the copy given
// to the holds extension's own code in the shape its reads give it, so its
// rule decides as it would on the real database: the read hook's state (what
// a query may take of held capacity, ext_until and ext_hold included), the
// World its admission and its claim guard read (model.ts refuseHold,
// claim-guard.ts), and the domains gangs read (gangs/domains.ts). Nothing
// here decides a hold's rule: it only lays the copy out as rows.
import type { ResultSet, Row, Value } from '@libsql/client';
import type { DomainFacts } from '../gangs/domains.js';
import { type HeldCapacityHook, type HeldState, heldCapacityHook } from '../holds/candidates.js';
import { type ReadWorld, worldOf } from '../holds/repo.js';
import { SHARES_TRAIT } from '../../placement/candidates/cloud-model.js';
import { type DeclaredHolds, declaredKey } from './declared.js';
import { classNames, type World, type WorldHold, type WorldProvider } from './world.js';

/** Rows as a statement's result (the holds code reads columns by name). */
export function resultOf(rows: Record<string, Value>[]): ResultSet {
  const columns = rows[0] ? Object.keys(rows[0]) : [];
  return {
    columns,
    columnTypes: columns.map(() => ''),
    rows: rows as unknown as Row[],
    rowsAffected: 0,
    lastInsertRowid: undefined,
    toJSON: () => ({ columns, rows }),
  };
}

/** Held (provider id, class id) pairs of the world's holds, on providers that still exist (a removed provider's amounts go with it). */
function heldPairs(world: World): Set<string> {
  const pairs = new Set<string>();
  for (const h of world.holds) for (const a of h.amounts) if (world.providers.has(a.providerId)) pairs.add(`${a.providerId} ${a.classId}`);
  return pairs;
}

/** What the app's holds declaration makes of the copy's holds (snapshot.ts, counted again after each change). */
function declaredOf(world: World): DeclaredHolds {
  if (!world.heldDeclared) throw new Error("the copy's holds were not counted by the app's holds declaration (declared.ts)");
  return world.heldDeclared;
}

/** A held pair's capacity as the declaration bounds it (null: no inventory, or not held). */
const boundAt = (declared: DeclaredHolds, providerId: number, classId: number): number | null =>
  declared.bound.get(declaredKey(providerId, classId)) ?? null;

/** A hold's amount as the declaration counts it. */
const amountOf = (declared: DeclaredHolds, hold: WorldHold, a: WorldHold['amounts'][number]): number =>
  declared.amount.get(declaredKey(a.providerId, a.classId, hold.id)) ?? a.amount;

/**
 * What the holds read hook reads from the copy (candidates.ts heldStatement):
 * every hold amount with its pair's capacity, then the allocations on held
 * pairs with their ends and draws; read by a fresh hook of the installed
 * one's declaration, so its kept states are untouched. Null without holds, as the hook answers.
 */
export function heldStateOf(world: World, installed: HeldCapacityHook): HeldState | null {
  if (world.holds.length === 0) return null;
  const declared = declaredOf(world);
  const rows: Record<string, Value>[] = [
    { kind: 'v', id: 1, project: 'what-if', s: 1, e: null, action: null, rp: null, rc: null, n: null, cap: null },
  ];
  for (const h of world.holds) {
    for (const a of h.amounts) {
      if (!world.providers.has(a.providerId)) continue;
      rows.push({
        kind: 'h',
        id: h.id,
        project: h.project,
        s: h.startMs,
        e: h.endMs,
        action: h.endAction,
        rp: a.providerId,
        rc: a.classId,
        n: amountOf(declared, h, a),
        cap: boundAt(declared, a.providerId, a.classId),
      });
    }
  }
  const held = heldPairs(world);
  for (const c of world.consumers.values()) {
    for (const a of c.allocations) {
      if (!held.has(`${a.providerId} ${a.classId}`)) continue;
      rows.push({
        kind: 'a',
        id: c.uuid,
        project: c.drawnFrom,
        s: c.leaseEndsAtMs,
        e: null,
        action: null,
        rp: a.providerId,
        rc: a.classId,
        n: a.used,
        cap: null,
      });
    }
  }
  return heldCapacityHook(installed.declaration).read(resultOf(rows));
}

/**
 * What the holds repo reads around `providers` (repo.ts worldStatements), laid
 * out from the copy and read back by its own worldOf: the holds on them, the
 * allocations and capacities there (`heldOnly`: of held pairs only, as the
 * claim guard reads them). In the repo's order: the statements' four results.
 */
export function holdsReadOf(world: World, providers: readonly string[], heldOnly: boolean): ResultSet[] {
  const names = classNames(world);
  const ids = new Set<number>();
  for (const p of world.providers.values()) if (providers.includes(p.uuid)) ids.add(p.id);
  const uuidOf = (id: number) => world.providers.get(id)!.uuid;
  const held = heldPairs(world);
  const declared = world.holds.length > 0 ? declaredOf(world) : world.heldDeclared;
  const holdRows: Record<string, Value>[] = [];
  for (const h of [...world.holds].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const amounts = h.amounts.filter((a) => world.providers.has(a.providerId));
    if (!amounts.some((a) => ids.has(a.providerId))) continue;
    for (const a of amounts) {
      holdRows.push({
        uuid: h.id,
        project: h.project,
        start_ms: h.startMs,
        end_ms: h.endMs,
        end_action: h.endAction,
        ignore_allocations: h.ignoreAllocations ? 1 : 0,
        generation: h.generation,
        created_at: '',
        updated_at: '',
        provider: uuidOf(a.providerId),
        resource_class: names.get(a.classId)!,
        amount: amountOf(declared!, h, a),
      });
    }
  }
  const allocationRows: Record<string, Value>[] = [];
  for (const c of world.consumers.values()) {
    for (const a of c.allocations) {
      if (!ids.has(a.providerId) || (heldOnly && !held.has(`${a.providerId} ${a.classId}`))) continue;
      allocationRows.push({
        consumer: c.uuid,
        project: c.projectId,
        provider: uuidOf(a.providerId),
        resource_class: names.get(a.classId)!,
        used: a.used,
        ends_at_ms: c.leaseEndsAtMs,
        hold: c.drawnFrom,
      });
    }
  }
  const capacityRows: Record<string, Value>[] = [];
  const generationRows: Record<string, Value>[] = [];
  for (const id of ids) {
    const p = world.providers.get(id)!;
    generationRows.push({ provider: p.uuid, generation: p.generation });
    for (const inv of p.inventories) {
      // The rule reads the capacity of held pairs only (and of a hold's being admitted: counted with it, addHold).
      const capacity = declared?.bound.get(declaredKey(id, inv.classId));
      if (capacity === undefined || capacity === null || (heldOnly && !held.has(`${id} ${inv.classId}`))) continue;
      capacityRows.push({ provider: p.uuid, resource_class: inv.className, capacity, generation: p.generation });
    }
  }
  return [resultOf(holdRows), resultOf(allocationRows), resultOf(capacityRows), resultOf(generationRows)];
}

/** The holds model's World around `providers` at `nowMs`, as the service reads it (repo.ts readWorld). */
export function holdsWorldOf(world: World, providers: readonly string[], nowMs: number): ReadWorld {
  return worldOf(holdsReadOf(world, providers, false), nowMs);
}

const isSharing = (p: WorldProvider): boolean => p.traits.includes(SHARES_TRAIT);

/** What gangs/domains.ts reads, from the copy: the domains' root members (by aggregate, then root uuid) and the providers' facts. */
export function domainFactsOf(world: World, only: readonly string[] | null, providerUuids: readonly string[]): DomainFacts {
  const uuidOfAggregate = new Map([...world.aggregateIdByUuid].map(([uuid, id]) => [id, uuid]));
  const pairs: [string, string][] = [];
  for (const p of world.providers.values()) {
    if (p.id !== p.rootId) continue;
    for (const agg of p.aggregates) {
      const uuid = uuidOfAggregate.get(agg);
      if (uuid !== undefined && (only === null || only.includes(uuid))) pairs.push([uuid, p.uuid]);
    }
  }
  pairs.sort(([a1, r1], [a2, r2]) => (a1 < a2 ? -1 : a1 > a2 ? 1 : r1 < r2 ? -1 : r1 > r2 ? 1 : 0));
  const rootsOf = new Map<string, Set<string>>();
  for (const [agg, root] of pairs) {
    let roots = rootsOf.get(agg);
    if (!roots) rootsOf.set(agg, (roots = new Set()));
    roots.add(root);
  }
  const byUuid = new Map([...world.providers.values()].map((p) => [p.uuid, p]));
  const providers = new Map<string, { root: string; sharing: boolean }>();
  for (const uuid of providerUuids) {
    const p = byUuid.get(uuid);
    if (p) providers.set(uuid, { root: world.providers.get(p.rootId)!.uuid, sharing: isSharing(p) });
  }
  return { rootsOf, providers };
}
