// The simulation's copy of the cloud: providers with their inventories,
// consumers with their allocations, taints and names, as plain data a change
// may rewrite. Read from the database once (snapshot.ts), copied per use,
// never written back.
import type { ResultSet } from '@libsql/client';
import { capacityOf, type InventoryLimits } from '../../placement/capacity.js';
import type { CandidateReadHook } from '../../placement/candidates/index.js';
import type { DeclaredHolds } from './declared.js';

export interface WorldInventory extends InventoryLimits {
  classId: number;
  className: string;
}

export interface WorldProvider {
  id: number;
  uuid: string;
  name: string;
  generation: number;
  parentId: number | null;
  rootId: number;
  /** Trait names in trait id order (as the engine's model keeps them). */
  traits: string[];
  aggregates: number[];
  /** In class id order. */
  inventories: WorldInventory[];
}

export interface WorldAllocation {
  providerId: number;
  classId: number;
  used: number;
}

export interface WorldConsumer {
  uuid: string;
  generation: number;
  projectId: string;
  userId: string;
  consumerType: string | null;
  allocations: WorldAllocation[];
  /** Holds an allocation lease (ext/leases): a plan leaves it where it is unless asked. */
  leased: boolean;
  /** Its lease's expiry while the lease covers it as it is (same consumer generation), else null: when its allocations end for holds. */
  leaseEndsAtMs: number | null;
  /** The hold it draws from (ext_hold), while the draw covers it as it is; else null. */
  drawnFrom: string | null;
}

/** A hold (ext/holds) as stored: its window and amounts by provider and class id. */
export interface WorldHold {
  id: string;
  project: string;
  startMs: number;
  endMs: number;
  endAction: 'release' | 'keep';
  ignoreAllocations: boolean;
  generation: number;
  amounts: { providerId: number; classId: number; amount: number }[];
}

export interface World {
  providers: Map<number, WorldProvider>;
  consumers: Map<string, WorldConsumer>;
  /** provider id -> keys of its excluding taints. */
  taints: Map<number, string[]>;
  classIdByName: Map<string, number>;
  traitIdByName: Map<string, number>;
  aggregateIdByUuid: Map<string, number>;
  /** Every stored hold (ext/holds), in uuid order, and those a simulation adds. */
  holds: WorldHold[];
  /** Every project placement knows (a hold names one of them). */
  projects: Set<string>;
  /** What the app's installed read hooks read in the snapshot (their own statements), by hook. */
  hookResults: Map<CandidateReadHook, ResultSet | undefined>;
  /** What the app's holds declaration makes of the holds (declared.ts), counted again after each change; absent where holds are not installed. */
  heldDeclared?: DeclaredHolds;
}

/** A deep copy, so a simulation never changes what it was given. */
export function copyWorld(world: World): World {
  const providers = new Map<number, WorldProvider>();
  for (const [id, p] of world.providers) providers.set(id, { ...p, inventories: p.inventories.map((i) => ({ ...i })) });
  const consumers = new Map<string, WorldConsumer>();
  for (const [uuid, c] of world.consumers) consumers.set(uuid, { ...c, allocations: c.allocations.map((a) => ({ ...a })) });
  return {
    providers,
    consumers,
    taints: new Map([...world.taints].map(([id, keys]) => [id, [...keys]])),
    classIdByName: world.classIdByName,
    traitIdByName: world.traitIdByName,
    aggregateIdByUuid: world.aggregateIdByUuid,
    holds: world.holds.map((h) => ({ ...h, amounts: h.amounts.map((a) => ({ ...a })) })),
    projects: new Set(world.projects),
    hookResults: world.hookResults,
    heldDeclared: world.heldDeclared,
  };
}

/** provider id -> class id -> units allocated. */
export type UsageTable = Map<number, Map<number, number>>;

export function usageOf(world: World): UsageTable {
  const usage: UsageTable = new Map();
  for (const consumer of world.consumers.values()) {
    for (const a of consumer.allocations) {
      let perClass = usage.get(a.providerId);
      if (!perClass) usage.set(a.providerId, (perClass = new Map()));
      perClass.set(a.classId, (perClass.get(a.classId) ?? 0) + a.used);
    }
  }
  return usage;
}

export interface OverCapacity {
  resource_provider_uuid: string;
  resource_class: string;
  capacity: number;
  used: number;
}

/** Every inventory whose usage exceeds its capacity (a total lowered under usage, a resize in place), by provider uuid then class. */
export function overCapacity(world: World, usage: UsageTable = usageOf(world)): OverCapacity[] {
  const over: OverCapacity[] = [];
  for (const p of world.providers.values()) {
    for (const inv of p.inventories) {
      const used = usage.get(p.id)?.get(inv.classId) ?? 0;
      const capacity = capacityOf(inv);
      if (used > capacity) over.push({ resource_provider_uuid: p.uuid, resource_class: inv.className, capacity, used });
    }
  }
  return over.sort((a, b) => cmp(a.resource_provider_uuid, b.resource_provider_uuid) || cmp(a.resource_class, b.resource_class));
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export interface ClassFigures {
  providers: number;
  capacity: number;
  used: number;
  free: number;
  over_threshold: number;
  over_capacity: number;
}

/** The dashboard's headline figures (GET /dashboard/api/summary), computed over a world. */
export interface DashboardFigures {
  total_providers: number;
  total_trees: number;
  /** Providers over capacity or with a class used above the threshold (the dashboard's attention list). */
  attention_total: number;
  resource_classes: Record<string, ClassFigures>;
}

/** The same figures the dashboard reads in SQL (diagnostics/dashboard-repo.ts), over the world. */
export function dashboardFigures(world: World, thresholdPercent: number, usage: UsageTable = usageOf(world)): DashboardFigures {
  const classes = new Map<string, ClassFigures>();
  let attention = 0;
  const roots = new Set<number>();
  for (const p of world.providers.values()) {
    roots.add(p.rootId);
    let hot = false;
    for (const inv of p.inventories) {
      const used = usage.get(p.id)?.get(inv.classId) ?? 0;
      const capacity = capacityOf(inv);
      let figures = classes.get(inv.className);
      if (!figures)
        classes.set(inv.className, (figures = { providers: 0, capacity: 0, used: 0, free: 0, over_threshold: 0, over_capacity: 0 }));
      figures.providers += 1;
      figures.capacity += capacity;
      figures.used += used;
      if (used * 100 > thresholdPercent * capacity) figures.over_threshold += 1;
      if (used > capacity) figures.over_capacity += 1;
      const percent = capacity > 0 ? (used * 100) / capacity : used > 0 ? Number.POSITIVE_INFINITY : 0;
      if (used > capacity || percent > thresholdPercent) hot = true;
    }
    if (hot) attention += 1;
  }
  const resourceClasses: Record<string, ClassFigures> = {};
  for (const name of [...classes.keys()].sort(cmp)) {
    const f = classes.get(name)!;
    f.free = f.capacity - f.used;
    resourceClasses[name] = f;
  }
  return { total_providers: world.providers.size, total_trees: roots.size, attention_total: attention, resource_classes: resourceClasses };
}

/** Allocations as placement writes them: provider uuid -> {resources: class -> amount}. */
export type AllocationsBody = Record<string, { resources: Record<string, number> }>;

export function allocationsBody(world: World, allocations: readonly WorldAllocation[]): AllocationsBody {
  const classNameById = classNames(world);
  const body: AllocationsBody = {};
  for (const a of allocations) {
    const uuid = world.providers.get(a.providerId)?.uuid ?? String(a.providerId);
    const entry = (body[uuid] ??= { resources: {} });
    const name = classNameById.get(a.classId) ?? String(a.classId);
    entry.resources[name] = (entry.resources[name] ?? 0) + a.used;
  }
  return body;
}

const classNameCache = new WeakMap<Map<string, number>, Map<number, string>>();

export function classNames(world: World): Map<number, string> {
  let names = classNameCache.get(world.classIdByName);
  if (!names) classNameCache.set(world.classIdByName, (names = new Map([...world.classIdByName].map(([n, id]) => [id, n]))));
  return names;
}

/** A consumer's amounts per class, added up over its providers. */
export function amountsOf(world: World, consumer: WorldConsumer): Map<string, number> {
  const names = classNames(world);
  const amounts = new Map<string, number>();
  for (const a of consumer.allocations) {
    const name = names.get(a.classId)!;
    amounts.set(name, (amounts.get(name) ?? 0) + a.used);
  }
  return amounts;
}
