// The one place the what-if extension meets the candidates engine: a World
// (world.ts) becomes the engine's input (its provider-tree model, usage and
// name lookups, CloudModel.of: no database), and the engine's own answers
// (allocation candidates, headroom) are asked over it. The world's taints
// reach the engine as a read hook whose state is the world's, in place of
// the installed taint hook that reads the database. When the engine becomes
// one object with one answer, this file is what changes.
import type { Microversion } from '../../microversion.js';
import { CloudModel, type ProviderSpec } from '../../placement/candidates/cloud-model.js';
import type { CandidateReadHook } from '../../placement/candidates/hooks.js';
import {
  type CandidateOptions,
  type CandidatesBody,
  candidatesFromModel,
  searchEveryTreeOfModel,
} from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import type { Lookups, Usage } from '../../placement/candidates/research.js';
import { type Headroom, headroomOfSearch } from '../headroom.js';
import { excludedProviders, type ProviderTaints } from '../taints/filter.js';
import { type UsageTable, usageOf, type World } from './world.js';

/** A world as the engine reads it; the model is built once, the usage may be replaced (a plan's moves). */
export interface EngineView {
  model: CloudModel;
  lookups: Lookups;
  hooks: readonly CandidateReadHook[];
}

/** The world's taints as a read hook: the same exclusion rule as the installed one (taints/filter.ts), over the world's taints. */
function worldTaints(taints: ProviderTaints): CandidateReadHook<ProviderTaints> {
  return {
    name: 'device taints (what-if)',
    statement: () => ({ sql: 'SELECT 1', args: [] }),
    read: () => taints,
    excludeProviders: (state, request) => excludedProviders(state, request.tolerate ?? []),
  };
}

export function engineView(world: World): EngineView {
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
    // A copy: the world may be changed after its view is made (a simulation measures before, then applies its changes).
    hooks: [worldTaints(new Map(world.taints))],
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
