// The changes that add a hold (POST /ext/holds' body) or claim a gang (POST
// /ext/gangs' body) to the simulation's copy of the cloud. Each takes the
// steps of its real request in its order, each step the extension's own code
// over the copy (held.ts lays the copy out as their reads give it): a hold's
// query picked by the gangs' search and pinned (holds/pick.ts), its window,
// project and amounts checked, admitted by the holds' rule (model.ts
// refuseHold); a gang's domain checked (gangs/claim.ts), its members decided
// by placement's claim decision (writes/claims.ts planClaims) with the holds'
// claim guard, refusals worded as the route words them. So bad input gets the
// real request's 4xx and its words.
import type { Microversion } from '../../microversion.js';
import type { ConsumerClaim } from '../../placement/repo/allocations.js';
import { GenerationPlan, type InventoryState, type Snapshot, type WriteHooks } from '../../placement/writes/kernel.js';
import { inventoryIndex, planClaims } from '../../placement/writes/claims.js';
import { MV } from '../../placement/versions.js';
import { invalid } from '../../errors.js';
import { checkGangDomainOf, refusalOfGang } from '../gangs/claim.js';
import { domainSearchOf } from '../gangs/index.js';
import { parseGangQuery } from '../gangs/query.js';
import { rankGangs, usedProviders } from '../gangs/assemble.js';
import type { PostGangBody } from '../gangs/schemas.js';
import { isHeldCapacityHook } from '../holds/candidates.js';
import { type Hold, refuseHold, splitKey } from '../holds/model.js';
import { heldOfFirstGang, queryOf } from '../holds/pick.js';
import type { postHoldRequestSchema } from '../holds/schemas.js';
import { amountsOf, checkWindow, refuseOversized, refuseUnknownNames, unknownProject, unsatisfiable } from '../holds/service.js';
import { leaseExpiryMs } from '../allocation-ends.js';
import { candidatesOver, engineView, type WhatIfEngine } from './engine-adapter.js';
import { domainFactsOf, holdsReadOf, holdsWorldOf } from './held.js';
import { type AllocationsBody, usageOf, type World, type WorldConsumer, type WorldHold } from './world.js';
import { declaredHoldsOf, declaredKey } from './declared.js';
import type { BatchReader } from '../../db/client.js';
import type { z } from 'zod';

/** What the two changes need beyond the copy: the app's engine and claim rules, the microversion, and one instant for the whole simulation. */
export interface HeldChangeContext {
  /** The app's database: the holds' declaration is evaluated there over the copy's rows (declared.ts), nothing read from it. */
  reader: BatchReader;
  engine: WhatIfEngine;
  writeHooks: WriteHooks;
  mv: Microversion;
  nowMs: number;
  newId(): string;
}

export type HoldBody = z.infer<typeof postHoldRequestSchema>;

/** The app's holds declaration, where it installs holds (its holds hook carries it). */
const declarationOf = (ctx: HeldChangeContext) => ctx.engine.hooks.find(isHeldCapacityHook)?.declaration;

/** Counts the copy's holds again by the app's declaration (after a change); nothing where holds are not installed. */
export async function countHolds(world: World, ctx: HeldChangeContext): Promise<void> {
  const declaration = declarationOf(ctx);
  if (declaration && world.heldDeclared !== undefined) world.heldDeclared = await declaredHoldsOf(ctx.reader, declaration, world);
}

/** GET /ext/gang_candidates' first gang for a hold's query, over the copy (pick.ts pickHeld). */
async function pickHeldOver(world: World, query: string, ctx: HeldChangeContext): Promise<AllocationsBody> {
  const params = queryOf(query);
  if (!params.count) params.count = ['1'];
  const { gang, rest } = parseGangQuery({ ...params, limit: ['1'] });
  const request = ctx.engine.parse(rest, ctx.mv);
  request.limit = null;
  const view = engineView(world, ctx.engine.hooks, ctx.nowMs);
  const options = { ...ctx.engine.options({ randomize: false }), now: ctx.nowMs };
  const body = await candidatesOver(view, usageOf(world), request, ctx.mv, options, 'breadth-first');
  const facts = domainFactsOf(world, gang.domain === 'any' ? [] : gang.domains, usedProviders(body));
  return heldOfFirstGang(rankGangs(domainSearchOf(body, facts, gang, false).gangs, gang), query, params.count[0]!);
}

/** The names a hold's amounts give that the copy lacks (repo.ts unknownNames). */
function unknownNamesIn(world: World, amounts: ReadonlyMap<string, number>) {
  const byUuid = new Map([...world.providers.values()].map((p) => [p.uuid, p]));
  const keys = [...amounts.keys()].map((k) => ({ key: k, ...splitKey(k) }));
  return {
    providers: [...new Set(keys.map((k) => k.provider))].filter((uuid) => !byUuid.has(uuid)),
    classes: [...new Set(keys.map((k) => k.resourceClass))].filter((name) => !world.classIdByName.has(name)),
    withoutInventory: keys
      .filter((k) => !byUuid.get(k.provider)?.inventories.some((i) => i.className === k.resourceClass))
      .map((k) => k.key),
  };
}

/** POST /ext/holds over the copy: the hold is added to it (what later queries and claims see); returns its uuid and what it holds. */
export async function addHold(
  world: World,
  body: HoldBody,
  ctx: HeldChangeContext,
): Promise<{ uuid: string; allocations: AllocationsBody }> {
  const { query, allocations, ...hold } = body;
  const held = allocations ?? (await pickHeldOver(world, query!, ctx));
  const startMs = Date.parse(hold.start);
  const endMs = Date.parse(hold.end);
  checkWindow(startMs, endMs, ctx.nowMs);
  if (!world.projects.has(hold.project_id)) throw unknownProject(hold.project_id);
  const amounts = amountsOf(held);
  refuseUnknownNames(unknownNamesIn(world, amounts));
  const providers = [...new Set([...amounts.keys()].map((k) => splitKey(k).provider))];
  const idOf = new Map([...world.providers.values()].map((p) => [p.uuid, p.id]));
  const added: WorldHold = {
    id: ctx.newId(),
    project: hold.project_id,
    startMs,
    endMs,
    endAction: hold.end_action,
    ignoreAllocations: hold.ignore_allocations,
    generation: 1,
    amounts: [...amounts].map(([key, amount]) => {
      const { provider, resourceClass } = splitKey(key);
      return { providerId: idOf.get(provider)!, classId: world.classIdByName.get(resourceClass)!, amount };
    }),
  };
  // The stored holds and the one being admitted, counted alike by the app's declaration (as the service's admission counts them).
  const declaration = declarationOf(ctx);
  const declared = declaration ? await declaredHoldsOf(ctx.reader, declaration, world, [added]) : world.heldDeclared;
  const read = holdsWorldOf({ ...world, heldDeclared: declared }, providers, ctx.nowMs);
  const keys = [...amounts.keys()];
  const counted = new Map(
    added.amounts.map((a, i) => [keys[i]!, declared?.amount.get(declaredKey(a.providerId, a.classId, added.id)) ?? a.amount]),
  );
  refuseOversized(counted, read.world.capacity);
  const candidate: Hold = { id: added.id, project: hold.project_id, startMs, endMs, amounts: counted, endAction: hold.end_action };
  const refusal = refuseHold(read.world, candidate, hold.ignore_allocations);
  if (refusal) throw unsatisfiable(refusal.violation);
  world.holds.push(added);
  const pinned: AllocationsBody = {};
  for (const [key, amount] of amounts) {
    const { provider, resourceClass } = splitKey(key);
    (pinned[provider] ??= { resources: {} }).resources[resourceClass] = amount;
  }
  return { uuid: candidate.id, allocations: pinned };
}

/** Simulated refusals are not the service's: they are counted nowhere. */
const UNCOUNTED = { capacityRefusals: { inc() {} } };

/** The claim snapshot (kernel.ts readSnapshot) of `claims`, from the copy, with the holds' claim guard where the app installs it. */
function claimSnapshot(world: World, claims: readonly ConsumerClaim[], ctx: HeldChangeContext): Snapshot {
  const named = new Set(claims.flatMap((c) => Object.keys(c.allocations)));
  const usage = usageOf(world);
  const providers = new Map([...world.providers.values()].map((p) => [p.uuid, { id: p.id, uuid: p.uuid, generation: p.generation }]));
  const inventories: InventoryState[] = [];
  for (const p of world.providers.values()) {
    if (!named.has(p.uuid)) continue;
    for (const inv of p.inventories)
      inventories.push({ ...inv, providerId: p.id, resourceClass: inv.className, used: usage.get(p.id)?.get(inv.classId) ?? 0 });
  }
  const consumers: Snapshot['consumers'] = new Map();
  const previous: Snapshot['previous'] = [];
  claims.forEach((claim, index) => {
    const c = world.consumers.get(claim.uuid);
    if (!c || c.allocations.length === 0) return;
    consumers.set(claim.uuid, { id: index + 1, generation: c.generation, project: c.projectId, user: c.userId, type: c.consumerType });
    for (const a of c.allocations) {
      const p = world.providers.get(a.providerId)!;
      previous.push({
        consumer: c.uuid,
        providerId: p.id,
        providerUuid: p.uuid,
        providerGeneration: p.generation,
        classId: a.classId,
        used: a.used,
      });
    }
  });
  // The holds' guard the app installs (its own declaration, named as the app's holds hook names it), deciding on the copy's rows.
  const declaration = ctx.engine.hooks.find(isHeldCapacityHook)?.declaration;
  const held = declaration && ctx.writeHooks.claimGuards.find((g) => g.name === declaration.name);
  const guards = held ? [held.decider(holdsReadOf(world, [...named], true).slice(0, 3))] : [];
  return { providers, inventories, classIds: world.classIdByName, consumers, previous, guards };
}

/**
 * POST /ext/gangs over the copy: every member claimed or none, as the route
 * decides it (the domain, then placement's claim rules and the holds' guard);
 * the members' allocations (and lease) replace theirs in the copy.
 */
export function addGang(world: World, body: PostGangBody, ctx: HeldChangeContext): { consumers: string[]; expires_at?: string } {
  if (!ctx.mv.atLeast(MV.CONSUMER_TYPES)) throw invalid(`add_gang: POST /ext/gangs takes microversion ${MV.CONSUMER_TYPES} or later`);
  const claims: ConsumerClaim[] = Object.entries(body.members).map(([uuid, part]) => ({
    uuid,
    allocations: Object.fromEntries(Object.entries(part.allocations).map(([rp, entry]) => [rp, entry.resources])),
    projectId: part.project_id,
    userId: part.user_id,
    generation: part.consumer_generation ?? null,
    consumerType: part.consumer_type,
  }));
  if (body.domain) {
    const providers = [...new Set(Object.values(body.members).flatMap((m) => Object.keys(m.allocations)))];
    checkGangDomainOf(domainFactsOf(world, [body.domain], providers), body.domain, body.members);
  }
  const snap = claimSnapshot(world, claims, ctx);
  const gens = new GenerationPlan();
  const now = new Date(ctx.nowMs).toISOString();
  try {
    planClaims({ writeHooks: ctx.writeHooks, metrics: UNCOUNTED }, snap, claims, inventoryIndex(snap.inventories), gens, {
      requireGeneration: true,
      now,
      endpoint: 'allocations',
    });
  } catch (err) {
    throw refusalOfGang(err, body.members);
  }
  // Granted: the copy as the write leaves it (consumers' allocations replaced, their generations moved, the gang's lease).
  for (const [id, { next }] of gens.bumps) {
    const p = world.providers.get(id);
    if (p) p.generation = next;
  }
  const expiresAtMs = body.lease_seconds === undefined ? null : leaseExpiryMs(body.lease_seconds, ctx.nowMs);
  for (const claim of claims) {
    const before = world.consumers.get(claim.uuid);
    const allocations = Object.entries(claim.allocations).flatMap(([uuid, resources]) => {
      const providerId = snap.providers.get(uuid)!.id;
      return Object.entries(resources).map(([name, used]) => ({ providerId, classId: world.classIdByName.get(name)!, used }));
    });
    if (allocations.length === 0) {
      // Placement keeps no consumer without allocations.
      world.consumers.delete(claim.uuid);
      continue;
    }
    const consumer: WorldConsumer = {
      uuid: claim.uuid,
      generation: before && before.allocations.length > 0 ? before.generation + 1 : 1,
      projectId: claim.projectId!,
      userId: claim.userId!,
      consumerType: claim.consumerType ?? before?.consumerType ?? null,
      allocations,
      leased: expiresAtMs !== null || (before?.leased ?? false),
      leaseEndsAtMs: expiresAtMs,
      drawnFrom: null,
    };
    world.consumers.set(claim.uuid, consumer);
    world.projects.add(consumer.projectId);
  }
  const consumers = claims.map((c) => c.uuid);
  return expiresAtMs === null ? { consumers } : { consumers, expires_at: new Date(expiresAtMs).toISOString() };
}
