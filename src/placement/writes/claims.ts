// The claim write path (PUT/POST /allocations, DELETE /allocations/{c}; the
// reshaper reuses its decision, reshape.ts) in the write model (kernel.ts): ONE read batch
// (providers, consumers, classes, inventories with usage, the consumers'
// current allocations), the decision here in TypeScript with placement's
// capacity rule and errors, then ONE guarded write batch. Two round trips
// whatever the size of the request; a lost race is decided again from a
// fresh read.
//
// Why the guards are enough: every statement that adds usage on a provider
// (a claim, a reshape, an inventory change) bumps that provider's
// generation, so the compare-and-swap on every provider that receives
// allocations proves its usage and inventory are still those the capacity
// check saw (DELETE /allocations only frees usage, which cannot invalidate a
// granted claim). The compare-and-swap on every claimed consumer (or, for a
// new one, its INSERT failing UNIQUE) proves nobody changed its allocations.
import type { InValue } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { commitGuarded, guard, placeholders, prebuiltGuard, stmt, type WriteStatement } from '../../db/write-batch.js';
import type { ConsumerClaim } from '../repo/allocations.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID, INCOMPLETE_CONSUMER_USER_ID } from '../repo/consumers.js';
import {
  type ClaimAlongside,
  type ClaimEntry,
  type ClaimView,
  GenerationPlan,
  type InventoryState,
  key,
  placementWrite,
  readSnapshot,
  type Snapshot,
  sqlByCount,
  tryOneBatch,
  type WriteDeps,
  type WriteHooks,
} from './kernel.js';
import {
  ClaimRefused,
  ConsumerGenerationMismatch,
  consumersOn,
  ProviderMissing,
  UnknownResourceClass,
  type ClaimEndpoint,
} from './refusals.js';
import { brokenRule } from './rules.js';
import { ALLOC, CONSUMER, CONSUMER_TYPE, PROJECT, RC, RP, USER } from '../../db/columns.js';

export interface ClaimOptions {
  /** 1.28+: consumer generations are compared. */
  requireGeneration: boolean;
  now: string;
  /** The endpoint the claims come from, for the wording of its refusals. */
  endpoint: ClaimEndpoint;
  /** What an extension writes with this claim, in its own batch (kernel.ts ClaimAlongside). */
  alongside?: ClaimAlongside;
  /** The request's `ext_` parameters, for the claim guards (kernel.ts ClaimParams). */
  params?: ReadonlyMap<string, string>;
}

const NO_PARAMS: ReadonlyMap<string, string> = new Map();

function invalidInventory(resourceClass: string, providerUuids: readonly string[], claims: readonly ConsumerClaim[]): ClaimRefused {
  return new ClaimRefused(
    `Inventory for '${resourceClass}' on resource provider '${providerUuids.join(', ')}' invalid.`,
    consumersOn(claims, providerUuids),
  );
}

/**
 * Decides `claims` against `snap` with `inventoryOf` as the inventory in
 * force (the reshaper passes its interim inventory), and returns the
 * statements that write them, plus the usage they leave per (provider, class).
 * Order of checks (and so of errors) follows upstream: providers exist,
 * consumers and their generations, resource classes exist, inventory and
 * the claim rules (rules.ts); then the installed claim guards (kernel.ts).
 */
export function planClaims(
  deps: Pick<WriteDeps, 'writeHooks' | 'metrics'>,
  snap: Snapshot,
  claims: ConsumerClaim[],
  inventoryOf: Map<string, InventoryState>,
  gens: GenerationPlan,
  opts: ClaimOptions,
): { statements: WriteStatement[]; usageAfter: Map<string, number> } {
  const usageAfter = new Map<string, number>();
  for (const inv of inventoryOf.values()) usageAfter.set(key(inv.providerId, inv.classId), inv.used);
  const claimUuids = new Set(claims.map((c) => c.uuid));
  const previous = snap.previous.filter((p) => claimUuids.has(p.consumer));
  // What the consumers held before, per (provider, class): usage there may stay
  // over capacity (an operator shrank the inventory) as long as it does not grow.
  const released = new Map<string, number>();
  for (const p of previous) {
    const k = key(p.providerId, p.classId);
    usageAfter.set(k, (usageAfter.get(k) ?? 0) - p.used);
    released.set(k, (released.get(k) ?? 0) + p.used);
  }
  if (claims.length === 0) return { statements: [], usageAfter };

  // 1. Every named provider exists, first missing one in body order.
  const named = [...new Set(claims.flatMap((c) => Object.keys(c.allocations)))];
  for (const uuid of named) if (!snap.providers.has(uuid)) throw new ProviderMissing(uuid);

  // 2. Consumer generations (1.28+): null means "I expect no consumer".
  if (opts.requireGeneration) {
    for (const claim of claims) {
      const existing = snap.consumers.get(claim.uuid);
      if (existing && existing.generation !== claim.generation)
        throw new ConsumerGenerationMismatch(existing.generation, claim.generation, claim.uuid);
      if (!existing && claim.generation !== null) throw new ConsumerGenerationMismatch(null, claim.generation, claim.uuid);
    }
  }

  // 3. Resource classes exist, first unknown one in body order.
  const bodyEntries = claims.flatMap((claim) =>
    Object.entries(claim.allocations).flatMap(([providerUuid, resources]) =>
      Object.entries(resources).map(([resourceClass, amount]) => ({
        consumer: claim.uuid,
        provider: snap.providers.get(providerUuid)!,
        resourceClass,
        amount,
      })),
    ),
  );
  const classNames = [...new Set(bodyEntries.map((e) => e.resourceClass))];
  for (const name of classNames) {
    if (!snap.classIds.has(name)) {
      throw new UnknownResourceClass(name, opts.endpoint, bodyEntries.find((e) => e.resourceClass === name)!.consumer);
    }
  }
  const entries: ClaimEntry[] = bodyEntries.map((e) => ({ ...e, classId: snap.classIds.get(e.resourceClass)! }));

  // 4. Inventory, unit constraints and capacity, against usage without the
  //    consumers' old allocations and with every earlier entry of this request.
  const requestedClassIds = new Set(classNames.map((n) => snap.classIds.get(n)!));
  const providerIds = [...new Set(entries.map((e) => e.provider.id))];
  const withInventory = new Set([...inventoryOf.values()].filter((i) => requestedClassIds.has(i.classId)).map((i) => i.providerId));
  const lacking = providerIds.filter((id) => !withInventory.has(id));
  if (lacking.length > 0) {
    const uuids = entries
      .map((e) => e.provider)
      .filter((p) => lacking.includes(p.id))
      .map((p) => p.uuid);
    throw invalidInventory(classNames.join(', '), [...new Set(uuids)], claims);
  }
  const requested = new Map<string, number>();
  const { claimRules } = deps.writeHooks;
  // Over capacity is refused only where the request increases usage (upstream bug 2104040).
  const notRaising = claimRules.filter((rule) => rule.refusal !== 'capacity');
  for (const e of entries) {
    const k = key(e.provider.id, e.classId);
    const inv = inventoryOf.get(k);
    if (!inv) throw invalidInventory(e.resourceClass, [e.provider.uuid], claims);
    const total = (requested.get(k) ?? 0) + e.amount;
    requested.set(k, total);
    const broken = brokenRule(total > (released.get(k) ?? 0) ? claimRules : notRaising, {
      amount: e.amount,
      usage: (usageAfter.get(k) ?? 0) + total,
      inventory: inv,
    });
    if (!broken) continue;
    const prefix = `Unable to create allocation for '${e.resourceClass}' on resource provider '${e.provider.uuid}'.`;
    const concerned = consumersOn(claims, [e.provider.uuid]);
    if (broken.refusal === 'constraints')
      throw new ClaimRefused(`${prefix} The requested amount would violate inventory constraints.`, concerned);
    deps.metrics.capacityRefusals.inc([e.resourceClass]);
    throw new ClaimRefused(`${prefix} The requested amount would exceed the capacity.`, concerned);
  }
  for (const [k, amount] of requested) usageAfter.set(k, (usageAfter.get(k) ?? 0) + amount);
  // What the guards' grants hold on, checked as of the write (after its statements).
  const checks: WriteStatement[] = [];
  if (snap.guards.length > 0) {
    const view: ClaimView = {
      claims,
      entries,
      providerIds,
      consumers: snap.consumers,
      now: opts.now,
      params: opts.params ?? NO_PARAMS,
      usedBefore: (providerId, classId) => inventoryOf.get(key(providerId, classId))?.used ?? 0,
      usedAfter: (providerId, classId) => usageAfter.get(key(providerId, classId)) ?? 0,
    };
    for (const decide of snap.guards) {
      const decision = decide(view);
      if (!decision) continue;
      if ('checks' in decision) {
        checks.push(...decision.checks);
        continue;
      }
      if (decision.resourceClass !== undefined) deps.metrics.capacityRefusals.inc([decision.resourceClass]);
      throw decision.error;
    }
  }

  // 5. The write: owners, the consumers' allocations replaced, generations.
  const { now } = opts;
  const statements: WriteStatement[] = [];
  for (const claim of claims) statements.push(...ownerStatements(claim, now));
  const uuids = [...claimUuids];
  statements.push(stmt(`DELETE FROM allocations WHERE ${ALLOC.consumerId} IN (${placeholders(uuids.length)})`, uuids));
  if (entries.length > 0) {
    statements.push(
      stmt(
        `INSERT INTO allocations (${ALLOC.resourceProviderId}, ${ALLOC.consumerId}, ${ALLOC.resourceClassId}, ${ALLOC.used}, ${ALLOC.createdAt}, ${ALLOC.updatedAt}) VALUES ${entries
          .map(() => '(?, ?, ?, ?, ?, ?)')
          .join(', ')}`,
        entries.flatMap((e) => [e.provider.id, e.consumer, e.classId, e.amount, now, now]),
      ),
    );
  }
  // Providers that receive allocations, and those an emptied consumer leaves, move on.
  const emptied = new Set(claims.filter((c) => Object.keys(c.allocations).length === 0).map((c) => c.uuid));
  const touchedProviders = new Map<number, { id: number; generation: number }>();
  const touchedConsumers = new Set<string>();
  for (const p of previous) {
    if (!emptied.has(p.consumer)) continue;
    touchedProviders.set(p.providerId, { id: p.providerId, generation: p.providerGeneration });
    touchedConsumers.add(p.consumer);
  }
  for (const e of entries) {
    touchedProviders.set(e.provider.id, e.provider);
    touchedConsumers.add(e.consumer);
  }
  for (const p of touchedProviders.values()) gens.bump(p);

  for (const claim of claims) {
    const existing = snap.consumers.get(claim.uuid);
    const project = claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID;
    const user = claim.userId ?? INCOMPLETE_CONSUMER_USER_ID;
    const typeArgs = claim.consumerType !== undefined ? [claim.consumerType] : [];
    const generation = touchedConsumers.has(claim.uuid) ? 1 : 0;
    if (existing) {
      // Compare-and-swap even when nothing changes: it proves the allocations just replaced are those read.
      statements.push(
        stmt(
          claim.consumerType !== undefined ? UPDATE_CONSUMER.typed : UPDATE_CONSUMER.untyped,
          [project, user, ...typeArgs, existing.generation + generation, now, existing.id, existing.generation],
          { mustChange: true },
        ),
      );
    } else if (!emptied.has(claim.uuid)) {
      // Absent when read.
      statements.push(insertConsumer(claim, generation, now));
    }
  }
  statements.push(...checks);
  return { statements, usageAfter };
}

// The statements of a claim that do not depend on its size, built once at load.
const TYPE_BY_NAME = `(SELECT ${CONSUMER_TYPE.id} FROM consumer_types WHERE ${CONSUMER_TYPE.name} = ?)`;
const updateConsumerSql = (typeSql: string) =>
  `UPDATE consumers SET ${CONSUMER.projectId} = (SELECT ${PROJECT.id} FROM projects WHERE ${PROJECT.externalId} = ?),
          ${CONSUMER.userId} = (SELECT ${USER.id} FROM users WHERE ${USER.externalId} = ?), ${CONSUMER.consumerTypeId} = ${typeSql},
          ${CONSUMER.generation} = ?, ${CONSUMER.updatedAt} = ? WHERE ${CONSUMER.id} = ? AND ${CONSUMER.generation} = ?`;
const UPDATE_CONSUMER = { typed: updateConsumerSql(TYPE_BY_NAME), untyped: updateConsumerSql(CONSUMER.consumerTypeId) };
const INSERT_PROJECT = `INSERT OR IGNORE INTO projects (${PROJECT.externalId}, ${PROJECT.createdAt}, ${PROJECT.updatedAt}) VALUES (?, ?, ?)`;
const INSERT_USER = `INSERT OR IGNORE INTO users (${USER.externalId}, ${USER.createdAt}, ${USER.updatedAt}) VALUES (?, ?, ?)`;
const INSERT_CONSUMER_TYPE = `INSERT OR IGNORE INTO consumer_types (${CONSUMER_TYPE.name}, ${CONSUMER_TYPE.createdAt}, ${CONSUMER_TYPE.updatedAt}) VALUES (?, ?, ?)`;
const insertConsumerSql = (typeSql: string) =>
  `INSERT INTO consumers (${CONSUMER.uuid}, ${CONSUMER.projectId}, ${CONSUMER.userId}, ${CONSUMER.generation}, ${CONSUMER.consumerTypeId}, ${CONSUMER.createdAt}, ${CONSUMER.updatedAt})
    VALUES (?, (SELECT ${PROJECT.id} FROM projects WHERE ${PROJECT.externalId} = ?), (SELECT ${USER.id} FROM users WHERE ${USER.externalId} = ?), ?,
    ${typeSql}, ?, ?)`;
const INSERT_CONSUMER = { typed: insertConsumerSql(TYPE_BY_NAME), untyped: insertConsumerSql('NULL') };
const DELETE_CONSUMER_ALLOCATIONS = `DELETE FROM allocations WHERE ${ALLOC.consumerId} = ?`;
const DELETE_CONSUMER = `DELETE FROM consumers WHERE ${CONSUMER.uuid} = ?`;

/** Get-or-create the project, user and consumer type a claim names (the consumer row refers to them by name). */
function ownerStatements(claim: ConsumerClaim, now: string): WriteStatement[] {
  const statements = [
    stmt(INSERT_PROJECT, [claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID, now, now]),
    stmt(INSERT_USER, [claim.userId ?? INCOMPLETE_CONSUMER_USER_ID, now, now]),
  ];
  if (claim.consumerType !== undefined) {
    statements.push(stmt(INSERT_CONSUMER_TYPE, [claim.consumerType, now, now]));
  }
  return statements;
}

/** Inserts a consumer believed absent: one created meanwhile makes it fail UNIQUE, a lost race. */
function insertConsumer(claim: ConsumerClaim, generation: number, now: string): WriteStatement {
  const typed = claim.consumerType !== undefined;
  return stmt(
    typed ? INSERT_CONSUMER.typed : INSERT_CONSUMER.untyped,
    [
      claim.uuid,
      claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID,
      claim.userId ?? INCOMPLETE_CONSUMER_USER_ID,
      generation,
      ...(typed ? [claim.consumerType!] : []),
      now,
      now,
    ],
    { racing: true },
  );
}

/** Placement keeps no consumer without allocations. */
export function dropEmptyConsumers(uuids: string[]): WriteStatement[] {
  if (uuids.length === 0) return [];
  return [
    stmt(
      `DELETE FROM consumers WHERE ${CONSUMER.uuid} IN (${placeholders(uuids.length)})
    AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.consumerId} = consumers.${CONSUMER.uuid})`,
      uuids,
    ),
  ];
}

export function claimedNames(claims: ConsumerClaim[]): { providers: string[]; classes: string[] } {
  const providers = new Set<string>();
  const classes = new Set<string>();
  for (const claim of claims) {
    for (const [rp, resources] of Object.entries(claim.allocations)) {
      providers.add(rp);
      for (const rc of Object.keys(resources)) classes.add(rc);
    }
  }
  return { providers: [...providers], classes: [...classes] };
}

export function inventoryIndex(inventories: InventoryState[]): Map<string, InventoryState> {
  return new Map(inventories.map((i) => [key(i.providerId, i.classId), i]));
}

/**
 * The claim of consumers that do not exist yet (what every boot sends) as
 * ONE write batch with nothing read first: the consumers are inserted (a
 * consumer that exists fails UNIQUE), the allocations inserted by provider
 * uuid and class name, and a guard requires, as of the write, that every
 * allocation found its provider, class and inventory, respects min_unit,
 * max_unit and step_size, and leaves usage within capacity: the decision
 * planClaims makes, in SQL, inside the write transaction. When any of that
 * fails the batch rolls back and the claim takes the ordinary path (read,
 * decide, write), which words the refusal exactly; so a refusal costs one
 * round trip more and a grant one less. Null when the claim does not qualify
 * (an existing consumer expected, a microversion without consumer
 * generations, or allocations removed).
 */
function newConsumerClaimStatements(hooks: WriteHooks, claims: ConsumerClaim[], opts: ClaimOptions): WriteStatement[] | null {
  // Only a consumer the client says is new (consumer_generation null, 1.28+): before 1.28 a PUT
  // replaces whatever the consumer holds, and trying the insert first would cost 3 round trips.
  const uuids: string[] = [];
  for (const claim of claims) {
    if (claim.generation !== null || !hasAllocations(claim)) return null;
    uuids.push(claim.uuid);
  }
  const { now } = opts;
  const statements: WriteStatement[] = [];
  // A consumer with allocations starts at generation 1, as in planClaims.
  for (const claim of claims) statements.push(...ownerStatements(claim, now), insertConsumer(claim, 1, now));
  // Body order, as the ordinary path inserts them: (order, consumer, provider, class, amount) per entry.
  const values: InValue[] = [now, now];
  const providers = new Set<string>();
  let entries = 0;
  for (const claim of claims) {
    for (const provider in claim.allocations) {
      const resources = claim.allocations[provider]!;
      for (const resourceClass in resources) {
        values.push(entries++, claim.uuid, provider, resourceClass, resources[resourceClass]!);
        providers.add(provider);
      }
    }
  }
  statements.push(stmt(insertAllocationsByNameSql(entries), values));
  const perGuard = hooks.claimGuards.flatMap(() => uuids);
  statements.push(prebuiltGuard(hooks.claimFitsSql(uuids.length), [entries, ...uuids, ...perGuard]));
  // Every provider that receives allocations moves on, as in planClaims.
  statements.push(stmt(bumpClaimedProvidersSql(providers.size), [now, ...providers]), ...(opts.alongside ?? []));
  return statements;
}

function hasAllocations(claim: ConsumerClaim): boolean {
  for (const _ in claim.allocations) return true;
  return false;
}

const insertAllocationsByNameSql = sqlByCount(
  (
    entries,
  ) => `INSERT INTO allocations (${ALLOC.resourceProviderId}, ${ALLOC.consumerId}, ${ALLOC.resourceClassId}, ${ALLOC.used}, ${ALLOC.createdAt}, ${ALLOC.updatedAt})
      SELECT p.${RP.id}, v.column2, rc.${RC.id}, v.column5, ?, ? FROM (VALUES ${Array.from({ length: entries }, () => '(?, ?, ?, ?, ?)').join(', ')}) v
      JOIN resource_providers p ON p.${RP.uuid} = v.column3 JOIN resource_classes rc ON rc.${RC.name} = v.column4 ORDER BY v.column1`,
);

// By uuid: the guard before it has made sure every named provider received its allocations.
const bumpClaimedProvidersSql = sqlByCount(
  (providers) =>
    `UPDATE resource_providers SET ${RP.generation} = ${RP.generation} + 1, ${RP.updatedAt} = ? WHERE ${RP.uuid} IN (${placeholders(providers)})`,
);

/**
 * Replaces the allocations of every consumer in `claims`, atomically, as
 * placement's AllocationList.replace_all(): one read batch, one write batch;
 * a claim of new consumers that fits is one write batch alone. The
 * statements of `opts.alongside` end that write batch, whichever it is.
 */
export async function claimAllocations(deps: WriteDeps, claims: ConsumerClaim[], opts: ClaimOptions): Promise<void> {
  if (claims.length === 0) return;
  const { store, writeHooks } = deps;
  const params = opts.params ?? NO_PARAMS;
  const asSent = writeHooks.claimParams.every((p) => p.asSent?.(params) ?? true);
  const fast = asSent ? newConsumerClaimStatements(writeHooks, claims, opts) : null;
  // Not granted as sent (or raced): the ordinary path decides and words it.
  if (fast && (await tryOneBatch(store, fast))) return;
  const names = claimedNames(claims);
  const uuids = claims.map((c) => c.uuid);
  await placementWrite(async () => {
    const snap = await readSnapshot(store, names.providers, uuids, names.classes, writeHooks, claims);
    const gens = new GenerationPlan();
    const { statements } = planClaims(deps, snap, claims, inventoryIndex(snap.inventories), gens, opts);
    await commitGuarded(store, [
      ...statements,
      ...gens.statements(opts.now),
      ...everyBatchGuards(writeHooks, uuids),
      ...dropEmptyConsumers(uuids),
      ...(opts.alongside ?? []),
    ]);
  });
}

/**
 * The ordinary path's guard for the claim guards that provider generations do
 * not protect (kernel.ts), as of the write: refused, the claim is decided again.
 */
export function everyBatchGuards(hooks: WriteHooks, uuids: string[]): WriteStatement[] {
  const condition = hooks.everyBatchHoldsSql(uuids.length);
  if (condition === '') return [];
  const guards = hooks.claimGuards.filter((g) => g.beyondProviderGenerations);
  return [
    guard(
      condition,
      guards.flatMap(() => uuids),
    ),
  ];
}

/**
 * DELETE /allocations/{consumer}: removes every allocation and the consumer,
 * in one write batch. Returns false when it held none. Provider generations
 * are not bumped, as upstream.
 */
export async function deleteConsumerAllocations(store: DataStore, consumerUuid: string): Promise<boolean> {
  const [removed] = await commitGuarded(store, [
    stmt(DELETE_CONSUMER_ALLOCATIONS, [consumerUuid]),
    // Without allocations now: placement keeps no consumer without allocations.
    stmt(DELETE_CONSUMER, [consumerUuid]),
  ]);
  return removed!.rowsAffected > 0;
}
