// Holds' verbs (docs/holds.md): check the input, read what the model needs,
// decide with the model, write in one guarded batch (retried from a fresh
// read when a claim or another hold got in between). Bad input is refused
// before anything is written; no HTTP here (routes in ../http/routes/holds.ts).
import type { DataStore } from '../../db/client.js';
import { conflict, invalid, notFound } from '../../errors.js';
import type { WriteStatement } from '../../db/write-batch.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { placementWrite } from '../../placement/writes/kernel.js';
import { type Hold, type Key, keyOf, refuseHold, splitKey, type Violation } from './model.js';
import {
  declaredAmountsOf,
  declaredAmountsStatement,
  findHold,
  type HoldRow,
  insertHold,
  listHolds,
  projectKnown,
  removeHold,
  replaceHold,
  sameGenerationsGuard,
  sameHoldsGuard,
  type StoredHold,
  unknownNames,
  worldOf,
  worldStatements,
} from './repo.js';
import type { PatchHoldBody, PostHoldBody } from './schemas.js';

export const HOLD_UNSATISFIABLE = 'placement.ext.hold_unsatisfiable';

/** What an owner writes with its hold, in the hold's own batch (a site's limit slices): decided again at each try. */
export type HoldAlongside = () => Promise<WriteStatement[]>;

export interface HoldDeps {
  store: DataStore;
  /** What a hold sets aside (the holds extension's declaration, ./declaration.ts): every admission counts holds by it. */
  declaration: SetAsideConstraint;
  nowMs(): number;
  newId(): string;
}

/** A hold on the wire. */
export function presentHold(h: StoredHold) {
  const allocations: Record<string, { resources: Record<string, number> }> = {};
  for (const [key, amount] of h.amounts) {
    const { provider, resourceClass } = splitKey(key);
    (allocations[provider] ??= { resources: {} }).resources[resourceClass] = amount;
  }
  return {
    uuid: h.id,
    project_id: h.project,
    start: new Date(h.startMs).toISOString(),
    end: new Date(h.endMs).toISOString(),
    end_action: h.endAction,
    ignore_allocations: h.ignoreAllocations,
    generation: h.generation,
    allocations,
    created_at: h.createdAt,
    updated_at: h.updatedAt,
  };
}

export const amountsOf = (allocations: PostHoldBody['allocations']): Map<Key, number> => {
  const amounts = new Map<Key, number>();
  for (const [provider, { resources }] of Object.entries(allocations)) {
    for (const [resourceClass, amount] of Object.entries(resources)) amounts.set(keyOf(provider.toLowerCase(), resourceClass), amount);
  }
  return amounts;
};

const providersOf = (amounts: ReadonlyMap<Key, number>): string[] => [...new Set([...amounts.keys()].map((k) => splitKey(k).provider))];

export function unsatisfiable(v: Violation): Error {
  const { provider, resourceClass } = splitKey(v.key);
  return conflict(
    `Hold not admitted: '${resourceClass}' on resource provider '${provider}' would be over capacity at ${new Date(v.atMs).toISOString()} ` +
      `(${v.load} held and allocated of ${v.capacity})`,
    HOLD_UNSATISFIABLE,
  );
}

/** The window's checks: a start before its end, an end not past. */
export function checkWindow(startMs: number, endMs: number, nowMs: number): void {
  if (endMs <= startMs)
    throw invalid(`A hold's end (${new Date(endMs).toISOString()}) must come after its start (${new Date(startMs).toISOString()})`);
  if (endMs <= nowMs) throw invalid(`A hold's window must not be over: its end ${new Date(endMs).toISOString()} is in the past`);
}

/**
 * The world around the amounts' providers at `nowMs`, and the amounts as the
 * declaration counts them (a hold being admitted weighs as the stored ones do), in one read.
 */
async function readAround(deps: HoldDeps, holdUuid: string, amounts: ReadonlyMap<Key, number>, nowMs: number) {
  const statements = worldStatements(deps.declaration, providersOf(amounts), nowMs);
  const results = await deps.store.readBatch([...statements, declaredAmountsStatement(deps.declaration, holdUuid, amounts)]);
  return { read: worldOf(results.slice(0, statements.length), nowMs), counted: declaredAmountsOf(results[statements.length]!) };
}

/** What the amounts name exists, each pair has inventory, and no amount, as counted, exceeds its capacity (it could never fit). */
async function checkAmounts(deps: HoldDeps, amounts: ReadonlyMap<Key, number>, nowMs: number): Promise<void> {
  refuseUnknownNames(await unknownNames(deps.declaration, deps.store, amounts));
  const { read, counted } = await readAround(deps, '', amounts, nowMs);
  refuseOversized(counted, read.world.capacity);
}

/** The names a hold's amounts give that do not exist (pure: what-if checks its copy of the cloud with it, ext/simulate). */
export function refuseUnknownNames(unknown: { providers: string[]; classes: string[]; withoutInventory: Key[] }): void {
  if (unknown.providers.length) throw invalid(`No such resource provider: ${unknown.providers.join(', ')}`);
  if (unknown.classes.length) throw invalid(`No such resource class: ${unknown.classes.join(', ')}`);
  if (unknown.withoutInventory.length) {
    const { provider, resourceClass } = splitKey(unknown.withoutInventory[0]!);
    throw invalid(`Resource provider '${provider}' has no inventory of '${resourceClass}' to hold`);
  }
}

/** An amount bigger than its pair's capacity could never fit. */
export function refuseOversized(amounts: ReadonlyMap<Key, number>, capacity: ReadonlyMap<Key, number>): void {
  for (const [key, amount] of amounts) {
    const cap = capacity.get(key) ?? 0;
    if (amount > cap) {
      const { provider, resourceClass } = splitKey(key);
      throw invalid(`A hold of ${amount} '${resourceClass}' on resource provider '${provider}' is bigger than its capacity (${cap})`);
    }
  }
}

export const unknownProject = (project: string): Error => invalid(`Unknown project '${project}': placement has no consumer of it`);

/**
 * Admits `row` (new, or replacing the stored hold of its uuid at
 * `generation`) and writes it: read, decide, write guarded by what was read
 * (the providers' generations: no claim since; the holds there: no other hold
 * written since), retried from a fresh read when one moved.
 */
async function admit(deps: HoldDeps, row: HoldRow, generation?: number, alongside?: HoldAlongside): Promise<StoredHold> {
  const providers = providersOf(row.amounts);
  await placementWrite(async () => {
    // Decided (and refused) from its own read each try, so a retried write decides again.
    const extra = alongside ? await alongside() : [];
    const nowMs = deps.nowMs();
    const { read, counted } = await readAround(deps, row.uuid, row.amounts, nowMs);
    const hold: Hold = {
      id: row.uuid,
      project: row.projectId,
      startMs: row.startMs,
      endMs: row.endMs,
      amounts: counted,
      endAction: row.endAction,
    };
    const refusal = refuseHold(read.world, hold, row.ignoreAllocations);
    if (refusal) throw unsatisfiable(refusal.violation);
    const guards = [sameGenerationsGuard(read.generations), sameHoldsGuard(providers, nowMs, read.holds, row.uuid), ...extra];
    const now = new Date(nowMs).toISOString();
    if (generation === undefined) await insertHold(deps.store, row, now, guards);
    else await replaceHold(deps.store, row, generation, now, guards);
  });
  const stored = await findHold(deps.store, row.uuid);
  if (!stored) throw conflict(`Hold ${row.uuid} was removed meanwhile`, 'placement.concurrent_update');
  return stored;
}

const timeOf = (rfc3339: string): number => Date.parse(rfc3339);

export async function createHold(deps: HoldDeps, body: PostHoldBody): Promise<StoredHold> {
  const nowMs = deps.nowMs();
  const startMs = timeOf(body.start);
  const endMs = timeOf(body.end);
  checkWindow(startMs, endMs, nowMs);
  if (!(await projectKnown(deps.store, body.project_id))) throw unknownProject(body.project_id);
  const amounts = amountsOf(body.allocations);
  await checkAmounts(deps, amounts, nowMs);
  return admit(deps, {
    uuid: deps.newId(),
    projectId: body.project_id,
    startMs,
    endMs,
    endAction: body.end_action,
    ignoreAllocations: body.ignore_allocations,
    amounts,
  });
}

export async function getHold(deps: HoldDeps, uuid: string): Promise<StoredHold> {
  const hold = await findHold(deps.store, uuid);
  if (!hold) throw notFound(`No hold ${uuid}`);
  return hold;
}

/** Edits a hold at the generation the caller read (stale: 409 concurrent_update); the edited hold is admitted as a new one would be. */
export async function patchHold(deps: HoldDeps, uuid: string, body: PatchHoldBody): Promise<StoredHold> {
  const old = await getHold(deps, uuid);
  if (old.generation !== body.generation) {
    throw conflict(`Hold ${uuid} is at generation ${old.generation}, not ${body.generation}: read it again`, 'placement.concurrent_update');
  }
  const nowMs = deps.nowMs();
  const startMs = body.start === undefined ? old.startMs : timeOf(body.start);
  const endMs = body.end === undefined ? old.endMs : timeOf(body.end);
  checkWindow(startMs, endMs, nowMs);
  const amounts = body.allocations === undefined ? old.amounts : amountsOf(body.allocations);
  if (body.allocations !== undefined) await checkAmounts(deps, amounts, nowMs);
  try {
    return await admit(
      deps,
      {
        uuid,
        projectId: old.project,
        startMs,
        endMs,
        endAction: body.end_action ?? old.endAction,
        ignoreAllocations: body.ignore_allocations ?? old.ignoreAllocations,
        amounts,
      },
      body.generation,
    );
  } catch (err) {
    // The hold changed or went between the read and the write (mustChange on its generation).
    const now = await findHold(deps.store, uuid);
    if (!now || now.generation !== body.generation)
      throw conflict(`Hold ${uuid} changed meanwhile: read it again`, 'placement.concurrent_update');
    throw err;
  }
}

export async function deleteHold(deps: HoldDeps, uuid: string): Promise<void> {
  if (!(await removeHold(deps.store, uuid))) throw notFound(`No hold ${uuid}`);
}

export async function findHolds(deps: HoldDeps, filter: { project_id?: string; active_at?: string }): Promise<StoredHold[]> {
  return listHolds(deps.store, {
    projectId: filter.project_id,
    activeAtMs: filter.active_at === undefined ? undefined : timeOf(filter.active_at),
  });
}

/** The end of a hold without one (a site's slice): the last instant an RFC 3339 time can name. */
export const OPEN_END_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The one open-ended hold of `owner` (a project name no consumer uses, such as `site:<id>`):
 * created, or replaced with `amounts`, from now on, admitted by the same rule as any hold, so
 * nothing but what is drawn from it can use it. Used by edge sites (docs/sites.md).
 */
export async function putOwnedHold(
  deps: HoldDeps,
  owner: string,
  amounts: ReadonlyMap<Key, number>,
  alongside?: HoldAlongside,
): Promise<StoredHold> {
  const nowMs = deps.nowMs();
  await checkAmounts(deps, amounts, nowMs);
  const [existing] = await listHolds(deps.store, { projectId: owner });
  const row = {
    uuid: existing?.id ?? deps.newId(),
    projectId: owner,
    startMs: existing?.startMs ?? nowMs,
    endMs: OPEN_END_MS,
    endAction: 'keep' as const,
    ignoreAllocations: false,
    amounts,
  };
  return admit(deps, row, existing?.generation, alongside);
}

/** The open-ended hold of `owner`, or null. */
export async function ownedHold(deps: HoldDeps, owner: string): Promise<StoredHold | null> {
  const [existing] = await listHolds(deps.store, { projectId: owner });
  return existing ?? null;
}
