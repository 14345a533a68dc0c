// The one place the what-if extension meets the candidates engine: a World
// (world.ts) becomes the engine's input (its provider-tree model, usage and
// name lookups, CloudModel.of: no database), and the engine's own answers
// (allocation candidates, headroom) are asked over it, with the app's
// installed read hooks: each reads what it would read from a database where
// its tables are empty, but the device taints' hook, which reads the world's
// taints (so a taint change, and ext_tolerate, act as the installed
// extension makes them act; an app without the taints extension ignores them,
// as its real answers do). This file is what changes with the engine's API.
import type { Microversion } from '../../microversion.js';
import { CloudModel, type ProviderSpec } from '../../placement/candidates/cloud-model.js';
import type { CandidateEngine } from '../../placement/candidates/engine.js';
import type { CandidateReadHook } from '../../placement/candidates/hooks.js';
import {
  type CandidateOptions,
  type CandidatesBody,
  candidatesFromModel,
  searchEveryTreeOfModel,
} from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import type { Lookups, Usage } from '../../placement/candidates/research.js';
import { type Headroom, headroomOfSearch } from '../headroom/headroom.js';
import { taintFilter } from '../taints/filter.js';
import { type UsageTable, usageOf, type World } from './world.js';

/** What a what-if answer takes from the app's engine: its parser (with the installed extensions' parameters), options and read hooks. */
export type WhatIfEngine = Pick<CandidateEngine, 'parse' | 'options' | 'hooks'>;

/** A world as the engine reads it; the model is built once, the usage may be replaced (a plan's moves). */
export interface EngineView {
  model: CloudModel;
  lookups: Lookups;
  hooks: readonly CandidateReadHook[];
}

/** The app's installed read hooks, each reading the world's state instead of the database's. */
function worldHooks(installed: readonly CandidateReadHook[], world: World): CandidateReadHook[] {
  // A copy: the world may be changed after its view is made (a simulation measures before, then applies its changes).
  const taints = new Map(world.taints);
  return installed.map((hook) => ({
    ...hook,
    read: hook === (taintFilter as CandidateReadHook) ? () => taints : () => hook.read(undefined),
  }));
}

export function engineView(world: World, installed: readonly CandidateReadHook[]): EngineView {
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
  const rootIdByProviderUuid = new Map<string, number>();
  for (const p of world.providers.values()) rootIdByProviderUuid.set(p.uuid, p.rootId);
  return {
    model: CloudModel.of(specs),
    lookups: {
      classIdByName: world.classIdByName,
      traitIdByName: world.traitIdByName,
      aggregateIdByUuid: world.aggregateIdByUuid,
      rootIdByProviderUuid,
    },
    hooks: worldHooks(installed, world),
  };
}

/** Options for a what-if answer: stable order, no cap, no time budget, the world's hooks, no tree cache. */
function whatIfOptions(view: EngineView, options: CandidateOptions): CandidateOptions {
  return {
    ...options,
    randomize: false,
    maxCandidates: 0,
    timeBudgetMs: 0,
    treeCacheProviders: 0,
    generationStrategy: 'depth-first',
    hooks: view.hooks,
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
  const opts = whatIfOptions(view, options);
  return headroomOfSearch(await searchEveryTreeOfModel(view.model, usage as Usage, view.lookups, request, mv, opts), opts);
}

export async function candidatesOver(
  view: EngineView,
  usage: UsageTable,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesBody> {
  return candidatesFromModel(view.model, usage as Usage, view.lookups, request, mv, whatIfOptions(view, options));
}

export { usageOf };
