// "Why no host": explains an allocation-candidates answer. The request (parsed
// by the same parser as GET /allocation_candidates) is replayed through the
// candidate engine one constraint at a time, in a fixed order: each group's
// resources, required / any-of / forbidden traits, member_of, forbidden
// aggregates and in_tree, then root_required, same_subtree and group_policy.
// After each step the engine's answer is counted (providers and trees still in
// a candidate), so the funnel shows where the candidates went. Nothing is
// re-implemented: every count is what findAllocationCandidates returns for
// that prefix of the request. A request with k constraints costs k+1 engine
// runs plus one small query per named host.
import * as z from 'zod';
import type { DataStore } from '../db/client.js';
import type { Microversion } from '../microversion.js';
import { type CandidateOptions, type CandidatesBody, findAllocationCandidates } from '../placement/candidates/index.js';
import type { CandidateRequest, RequestGroup } from '../placement/candidates/parse.js';
import { amountFitsUnits } from '../placement/capacity.js';
import * as repo from './candidates-repo.js';

/** The negotiated microversion, as the engine takes it. */
type EngineVersion = Parameters<typeof findAllocationCandidates>[2];

export const CONSTRAINTS = [
  'inventory',
  'resources',
  'required',
  'required_any_of',
  'forbidden_traits',
  'member_of',
  'forbidden_aggregates',
  'in_tree',
  'root_required',
  'same_subtree',
  'group_policy',
] as const;
export type Constraint = (typeof CONSTRAINTS)[number];

const GroupSuffix = z.string().nullable().describe("request group suffix ('' for the unsuffixed group); null for request-wide constraints");

export const DiagnosisStep = z.object({
  group: GroupSuffix,
  constraint: z.enum(CONSTRAINTS),
  detail: z.string(),
  providers: z.number().int().describe('providers used by at least one candidate after this step'),
  trees: z.number().int(),
  allocation_requests: z.number().int(),
  capped: z.literal(true).optional().describe('the engine stopped at PLACEMENT_MAX_ALLOCATION_CANDIDATES: counts are lower bounds'),
});
export type DiagnosisStep = z.infer<typeof DiagnosisStep>;

export const HostVerdict = z.object({
  host: z.string(),
  provider_uuid: z.string(),
  root_provider_uuid: z.string(),
  fits: z.boolean(),
  failed_at: z
    .object({ group: GroupSuffix, constraint: z.enum(CONSTRAINTS), reason: z.string() })
    .optional()
    .describe('the first step after which the tree was in no candidate'),
});
export type HostVerdict = z.infer<typeof HostVerdict>;

export const Diagnosis = z.object({
  steps: z.array(DiagnosisStep),
  allocation_requests: z.number().int(),
  sharing_providers: z.number().int().describe('providers used in a candidate of another tree than their own'),
  hosts: z.array(HostVerdict),
  unknown_hosts: z.array(z.string()),
});
export type Diagnosis = z.infer<typeof Diagnosis>;

export interface DiagnosisContext {
  store: DataStore;
  options: CandidateOptions;
}

/**
 * An extension's part of "why no host" (GET /diagnostics/allocation_candidates),
 * installed from its object (`diagnosis`): its verdict under `key`, either its
 * gate's (project limits: CandidateGate.diagnosisKey, when the gate answers
 * none) or the answer to a question of its own (gangs: count=N).
 */
export interface DiagnosisPart {
  /** The answer's key for its verdict, and the verdict's schema (optional, described). */
  readonly key: string;
  readonly schema: z.ZodType;
  readonly question?: DiagnosisQuestion;
}

/** A query an extension answers itself: the plain diagnosis, with its verdict. */
export interface DiagnosisQuestion {
  /** Its query parameters, listed by GET /openapi.json after the plain query's and `host`. */
  readonly query: readonly { name: string; description: string }[];
  /** What the answer's description adds for it. */
  readonly answers: string;
  /** Whether `query` asks this question. */
  takes(query: Record<string, string[]>): boolean;
  /** The question in `query` (throws a DomainError where it is not one; `parse` reads a plain request), to run for the answer. */
  ask(
    query: Record<string, string[]>,
    mv: Microversion,
    parse: (query: Record<string, string[]>) => CandidateRequest,
  ): (ctx: DiagnosisContext, hosts: string[]) => Promise<Diagnosis>;
}

interface Stage {
  group: string | null;
  constraint: Constraint;
  detail: string;
  /** Adds the constraint to the working request. */
  apply(): void;
}

const emptyGroup = (suffix: string): RequestGroup => ({
  suffix,
  resources: new Map(),
  requiredAnyOf: [],
  forbiddenTraits: [],
  memberOf: [],
  forbiddenAggregates: [],
  inTree: null,
});

const amountsText = (resources: Map<string, number>) => [...resources].map(([rc, n]) => `${rc}:${n}`).join(',');

/** The constraints of `request`, in the order they are applied, each adding itself to `working`. */
function stagesOf(request: CandidateRequest, working: CandidateRequest): Stage[] {
  const stages: Stage[] = [];
  for (const group of request.groups) {
    const partial = emptyGroup(group.suffix);
    // A group joins the working request with its first constraint.
    const join = () => {
      if (!working.groups.includes(partial)) working.groups.push(partial);
    };
    const add = (constraint: Constraint, detail: string, apply: () => void) =>
      stages.push({
        group: group.suffix,
        constraint,
        detail,
        apply: () => {
          join();
          apply();
        },
      });
    if (group.resources.size)
      add('resources', amountsText(group.resources), () => {
        partial.resources = group.resources;
      });
    const single = group.requiredAnyOf.filter((anyOf) => anyOf.length === 1);
    const anyOf = group.requiredAnyOf.filter((list) => list.length > 1);
    if (single.length) add('required', single.flat().join(','), () => partial.requiredAnyOf.push(...single));
    if (anyOf.length)
      add('required_any_of', anyOf.map((l) => `in:${l.join(',')}`).join(' and '), () => partial.requiredAnyOf.push(...anyOf));
    if (group.forbiddenTraits.length) {
      add('forbidden_traits', group.forbiddenTraits.map((t) => `!${t}`).join(','), () =>
        partial.forbiddenTraits.push(...group.forbiddenTraits),
      );
    }
    if (group.memberOf.length) {
      add('member_of', group.memberOf.map((l) => (l.length > 1 ? `in:${l.join(',')}` : l[0])).join(' and '), () =>
        partial.memberOf.push(...group.memberOf),
      );
    }
    if (group.forbiddenAggregates.length) {
      add('forbidden_aggregates', group.forbiddenAggregates.map((a) => `!${a}`).join(','), () =>
        partial.forbiddenAggregates.push(...group.forbiddenAggregates),
      );
    }
    if (group.inTree !== null)
      add('in_tree', group.inTree, () => {
        partial.inTree = group.inTree;
      });
  }
  if (request.rootRequired.length || request.rootForbidden.length) {
    stages.push({
      group: null,
      constraint: 'root_required',
      detail: [...request.rootRequired, ...request.rootForbidden.map((t) => `!${t}`)].join(','),
      apply: () => {
        working.rootRequired = request.rootRequired;
        working.rootForbidden = request.rootForbidden;
      },
    });
  }
  if (request.sameSubtrees.length) {
    stages.push({
      group: null,
      constraint: 'same_subtree',
      detail: request.sameSubtrees.map((s) => s.join(',')).join(' and '),
      apply: () => {
        working.sameSubtrees = request.sameSubtrees;
      },
    });
  }
  if (request.groupPolicy === 'isolate') {
    stages.push({
      group: null,
      constraint: 'group_policy',
      detail: 'isolate',
      apply: () => {
        working.groupPolicy = 'isolate';
      },
    });
  }
  return stages;
}

/** Providers named in the engine's allocation requests (list form before 1.12, dict form after). */
function providersOf(body: CandidatesBody): string[][] {
  return body.allocation_requests.map((request) =>
    Array.isArray(request.allocations) ? request.allocations.map((a) => a.resource_provider.uuid) : Object.keys(request.allocations),
  );
}

export async function diagnoseCandidates(
  ctx: DiagnosisContext,
  request: CandidateRequest,
  mv: EngineVersion,
  hostNames: string[],
): Promise<Diagnosis> {
  const db = ctx.store.db;
  const classes = [...new Set(request.groups.flatMap((g) => [...g.resources.keys()]))];
  const rootOf = await repo.providersWithClasses(db, classes);
  const options: CandidateOptions = { ...ctx.options, randomize: false };

  const steps: DiagnosisStep[] = [
    {
      group: null,
      constraint: 'inventory',
      detail: `an inventory of ${classes.join(', ') || 'no class'}`,
      providers: rootOf.size,
      trees: new Set(rootOf.values()).size,
      allocation_requests: 0,
    },
  ];
  const treesAfter: Set<string>[] = [new Set(rootOf.values())];
  const working: CandidateRequest = {
    groups: [],
    groupPolicy: null,
    limit: null,
    rootRequired: [],
    rootForbidden: [],
    sameSubtrees: [],
    // The extensions' parameters hold from the first stage; the alternatives among the groups added so far.
    ...(request.ext ? { ext: request.ext } : {}),
  };
  let last: { body: CandidatesBody; providers: string[][] } | null = null;
  for (const stage of stagesOf(request, working)) {
    stage.apply();
    if (request.alternatives) working.alternatives = alternativesAmong(request.alternatives, working.groups);
    const body = await findAllocationCandidates(ctx.store.nearby, working, mv, options);
    const providers = providersOf(body);
    const unknown = [...new Set(providers.flat())].filter((uuid) => !rootOf.has(uuid));
    for (const [uuid, root] of await repo.rootsOf(db, unknown)) rootOf.set(uuid, root);
    const used = new Set(providers.flat());
    const trees = new Set([...used].map((uuid) => rootOf.get(uuid)!));
    const step: DiagnosisStep = {
      group: stage.group,
      constraint: stage.constraint,
      detail: stage.detail,
      providers: used.size,
      trees: trees.size,
      allocation_requests: body.allocation_requests.length,
    };
    if (options.maxCandidates > 0 && body.allocation_requests.length >= options.maxCandidates) step.capped = true;
    steps.push(step);
    treesAfter.push(trees);
    last = { body, providers };
  }

  // Sharing: a candidate whose providers span several trees got help from a sharing provider.
  const sharing = new Set<string>();
  for (const list of last?.providers ?? []) {
    const roots = new Set(list.map((uuid) => rootOf.get(uuid)));
    if (roots.size > 1) for (const uuid of list) sharing.add(uuid);
  }

  const found = await repo.findProviders(db, hostNames);
  const hosts: HostVerdict[] = [];
  for (const tree of found) {
    const index = treesAfter.findIndex((trees) => !trees.has(tree.rootUuid));
    const verdict: HostVerdict = { host: tree.asked, provider_uuid: tree.uuid, root_provider_uuid: tree.rootUuid, fits: index < 0 };
    if (index >= 0) {
      const step = steps[index]!;
      const details = await repo.treeDetails(db, tree.rootUuid);
      const group = step.group === null ? undefined : request.groups.find((g) => g.suffix === step.group);
      verdict.failed_at = { group: step.group, constraint: step.constraint, reason: explain(step, group, request, details, classes) };
    }
    hosts.push(verdict);
  }
  return {
    steps,
    allocation_requests: last?.body.allocation_requests.length ?? 0,
    sharing_providers: sharing.size,
    hosts,
    unknown_hosts: hostNames.filter((name) => !found.some((f) => f.asked === name)),
  };
}

/** Lists of alternatives restricted to the groups of `groups` (lists left empty dropped). */
function alternativesAmong(lists: string[][], groups: RequestGroup[]): string[][] {
  const present = new Set(groups.map((g) => g.suffix));
  return lists.map((list) => list.filter((s) => present.has(s))).filter((list) => list.length > 0);
}

/** The first reason a tree fails `step`, in words an operator can act on. */
function explain(
  step: DiagnosisStep,
  group: RequestGroup | undefined,
  request: CandidateRequest,
  tree: repo.TreeProvider[],
  classes: string[],
): string {
  const onAny = (trait: string) => tree.some((p) => p.traits.has(trait));
  const root = tree.find((p) => p.isRoot);
  switch (step.constraint) {
    case 'inventory':
      return `no provider of the tree has an inventory of ${classes.join(', ')}`;
    case 'resources':
      return group ? resourcesReason(group, tree) : 'the resources do not fit';
    case 'required': {
      const missing = (group?.requiredAnyOf ?? [])
        .filter((l) => l.length === 1)
        .flat()
        .filter((t) => !onAny(t));
      return missing.length
        ? `required trait${missing.length > 1 ? 's' : ''} ${missing.join(', ')} on no provider of the tree`
        : `no provider with the group's resources has every required trait (${step.detail})`;
    }
    case 'required_any_of': {
      const none = (group?.requiredAnyOf ?? []).filter((l) => l.length > 1 && !l.some(onAny));
      return none.length
        ? `none of ${none[0]!.join(', ')} on any provider of the tree`
        : `no provider with the group's resources has one of each ${step.detail}`;
    }
    case 'forbidden_traits': {
      const hits = tree.flatMap((p) => (group?.forbiddenTraits ?? []).filter((t) => p.traits.has(t)).map((t) => `${t} on ${p.uuid}`));
      return `forbidden trait ${hits.join(', ') || step.detail} on the providers that fit`;
    }
    case 'member_of': {
      const inNone = (group?.memberOf ?? []).find((anyOf) => !tree.some((p) => anyOf.some((a) => p.aggregates.has(a))));
      return inNone
        ? `no provider of the tree is in aggregate ${inNone.join(' or ')}`
        : `the providers that fit are not in ${step.detail} (nor is the root)`;
    }
    case 'forbidden_aggregates': {
      const hits = tree.flatMap((p) =>
        (group?.forbiddenAggregates ?? []).filter((a) => p.aggregates.has(a)).map((a) => `${a} on ${p.uuid}`),
      );
      return `in forbidden aggregate ${hits.join(', ') || step.detail}`;
    }
    case 'in_tree':
      return `not in the tree of ${step.detail}`;
    case 'root_required': {
      const lacks = request.rootRequired.filter((t) => !root?.traits.has(t));
      const has = request.rootForbidden.filter((t) => root?.traits.has(t));
      return (
        [...lacks.map((t) => `root ${root?.uuid ?? ''} lacks ${t}`), ...has.map((t) => `root ${root?.uuid ?? ''} has forbidden ${t}`)].join(
          '; ',
        ) || `root traits do not match ${step.detail}`
      );
    }
    case 'same_subtree':
      return `the providers for ${step.detail} are never within one subtree`;
    case 'group_policy':
      return 'group_policy=isolate: the groups cannot each get a different provider';
  }
}

/** Which class stops a group on this tree: missing inventory, a unit rule, or free capacity. */
function resourcesReason(group: RequestGroup, tree: repo.TreeProvider[]): string {
  for (const [rc, amount] of group.resources) {
    const offers = tree.flatMap((p) => p.inventories.filter((i) => i.resourceClass === rc).map((inv) => ({ provider: p, inv })));
    if (!offers.length) return `${rc}: no inventory in this tree`;
    const allowed = offers.filter((o) => amountFitsUnits(o.inv, amount));
    if (!allowed.length) {
      const { provider, inv } = offers[0]!;
      if (amount < inv.minUnit) return `${rc}: needs ${amount}, min_unit ${inv.minUnit} on ${provider.uuid}`;
      if (amount > inv.maxUnit) return `${rc}: needs ${amount}, max_unit ${inv.maxUnit} on ${provider.uuid}`;
      return `${rc}: needs ${amount}, not a multiple of step_size ${inv.stepSize} on ${provider.uuid}`;
    }
    const best = allowed.reduce((a, b) => (b.inv.capacity - b.inv.used > a.inv.capacity - a.inv.used ? b : a));
    const free = Math.max(0, best.inv.capacity - best.inv.used);
    if (free < amount) return `${rc}: needs ${amount}, free ${free} on ${best.provider.uuid}`;
  }
  if (group.suffix !== '' && group.resources.size > 1) {
    return `no single provider of the tree has ${amountsText(group.resources)} free together`;
  }
  return `each class fits somewhere, but not as one candidate (${amountsText(group.resources)}; earlier groups or one provider per tree before 1.29)`;
}
