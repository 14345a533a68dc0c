// The one place the what-if extension meets the candidates engine: a World
// (world.ts) becomes the engine's input (its provider-tree model, usage and
// name lookups, CloudModel.of: no database), and the engine's own answers
// (allocation candidates, headroom) are asked over it, with the app's
// installed read hooks: each reads its own statement's result from the
// snapshot, but the device taints' hook reads the world's taints (a taint
// change, and ext_tolerate, act as the installed extension makes them act;
// an app without it ignores them, as its real answers do), the shared
// counters' computes its loads from the world's usage, and the holds' reads
// the world's holds (held.ts). This file is what
// changes with the engine's API.
import type { Microversion } from '../../microversion.js';
import { CloudModel, type Lookups, type ProviderSpec, type Usage } from '../../placement/candidates/cloud-model.js';
import type { CandidateEngine, CandidateReadHook } from '../../placement/candidates/index.js';
import {
  type CandidateOptions,
  type CandidatesBody,
  candidatesFromModel,
  searchEveryTreeOfModel,
} from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { type Headroom, headroomOfSearch } from '../headroom/headroom.js';
import { isConstraintReadHook, loadsOf, type LoadedKeys } from '../../placement/capacity.js';
import { taintFilter } from '../taints/filter.js';
import { type HeldState, heldCapacityHook, isHeldCapacityHook } from '../holds/candidates.js';
import { heldStateOf } from './held.js';
import { type UsageTable, usageOf, type World } from './world.js';

/** What a what-if answer takes from the app's engine: its parser (with the installed extensions' parameters), options and read hooks. */
export type WhatIfEngine = Pick<CandidateEngine, 'parse' | 'options' | 'hooks'>;

/** A world as the engine reads it; the model is built once, the usage may be replaced (a plan's moves). */
export interface EngineView {
  model: CloudModel;
  lookups: Lookups;
  /** The installed read hooks as they read this world under `usage`. */
  hooksFor(usage: UsageTable): CandidateReadHook[];
  /** The same view, its holds' state read from `world` (consumers moved since: the model is not built again). */
  withHoldsOf(world: World): EngineView;
}

/**
 * The app's installed read hooks over a world and a usage table: the device
 * taints' reads the world's taints, the shared counters' its bounds and
 * weights as the snapshot read them with loads from `usage`, any other its
 * own statement's result from the snapshot.
 */
function worldHooks(installed: readonly CandidateReadHook[], world: World, usage: UsageTable, held: Held): CandidateReadHook[] {
  return installed.map((hook) => {
    const result = world.hookResults.get(hook);
    let read: () => unknown = () => hook.read(result);
    if (hook === (taintFilter as CandidateReadHook)) read = () => world.taints;
    if (isConstraintReadHook(hook)) {
      const table = hook.read(result);
      read = () => countersUnder(table, usage);
    }
    return isHeldCapacityHook(hook) ? { ...hook, read: () => held.state, capacityRule: held.rule } : { ...hook, read };
  });
}

/** The counters' loads as `usage` puts them (headroom adds its simulated claims to a fresh copy each time). */
function countersUnder(table: ReadonlyMap<number, LoadedKeys>, usage: UsageTable): Map<number, LoadedKeys> {
  const out = new Map<number, LoadedKeys>();
  for (const [providerId, keys] of table)
    out.set(providerId, { ...keys, loads: loadsOf(keys, (classId) => usage.get(providerId)?.get(classId) ?? 0) });
  return out;
}

/** The holds' state over a world, and their capacity rule judged at one instant (without one, the request's instant on the app's clock). */
interface Held {
  state: HeldState | null;
  rule: CandidateReadHook['capacityRule'];
}

export function engineView(world: World, installed: readonly CandidateReadHook[], nowMs?: number): EngineView {
  const specs: ProviderSpec[] = [...world.providers.values()]
    .sort((a, b) => a.id - b.id)
    .map((p) => ({
      id: p.id,
      uuid: p.uuid,
      parentId: p.parentId,
      rootId: p.rootId,
      traits: p.traits,
      aggregates: p.aggregates,
      inventories: [...p.inventories].sort((a, b) => a.classId - b.classId),
    }));
  // The view keeps the taints as they are now: the world may be changed after (a simulation measures before, then applies its changes).
  const frozen: World = { ...world, taints: new Map(world.taints) };
  // So do the holds' state (held capacity, as the holds hook would read it from this world).
  // The app's own holds hook (its declaration), if the app installs holds.
  const holdsHook = installed.find(isHeldCapacityHook);
  const rule = (nowMs === undefined ? holdsHook : holdsHook && (heldCapacityHook(holdsHook.declaration, () => nowMs) as CandidateReadHook))
    ?.capacityRule;
  const rootIdByProviderUuid = new Map<string, number>();
  for (const p of world.providers.values()) rootIdByProviderUuid.set(p.uuid, p.rootId);
  const model = CloudModel.of(specs);
  const lookups: Lookups = {
    classIdByName: world.classIdByName,
    traitIdByName: world.traitIdByName,
    aggregateIdByUuid: world.aggregateIdByUuid,
    rootIdByProviderUuid,
  };
  const withHoldsOf = (holdsWorld: World): EngineView => {
    const held: Held = { state: holdsHook ? heldStateOf(holdsWorld, holdsHook) : null, rule };
    return { model, lookups, hooksFor: (usage) => worldHooks(installed, frozen, usage, held), withHoldsOf };
  };
  return withHoldsOf(world);
}

/** Options for a what-if answer: stable order, no cap, no time budget, the world's hooks, no tree cache. */
function whatIfOptions(view: EngineView, usage: UsageTable, options: CandidateOptions): CandidateOptions {
  return {
    ...options,
    randomize: false,
    maxCandidates: 0,
    timeBudgetMs: 0,
    treeCacheProviders: 0,
    generationStrategy: 'depth-first',
    hooks: view.hooksFor(usage),
    trees: undefined,
    metrics: undefined,
  };
}

export async function headroomOver(
  view: EngineView,
  usage: UsageTable,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Headroom> {
  const opts = whatIfOptions(view, usage, options);
  const full = await searchEveryTreeOfModel({ model: view.model, usage: usage as Usage, lookups: view.lookups }, request, mv, opts);
  // Headroom reads the counters' loads back by the replacement hook (it keeps the constraint it reads).
  return headroomOfSearch(full, opts);
}

export async function candidatesOver(
  view: EngineView,
  usage: UsageTable,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
  generationStrategy: CandidateOptions['generationStrategy'] = 'depth-first',
): Promise<CandidatesBody> {
  return candidatesFromModel({ model: view.model, usage: usage as Usage, lookups: view.lookups }, request, mv, {
    ...whatIfOptions(view, usage, options),
    generationStrategy,
  });
}

export { usageOf };
