// The claim write path (PUT/POST /allocations, DELETE /allocations/{c},
// POST /reshaper) in the write model of db/write-batch.ts: ONE read batch
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
import type { InValue, Row } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import {
  commitGuarded,
  guardSql,
  LostRace,
  placeholders,
  prebuiltGuard,
  stmt,
  withRaceRetries,
  type WriteStatement,
} from '../../db/write-batch.js';
import { amountFitsUnits, capacityOf, capacitySql, usedSql, type InventoryLimits } from '../capacity.js';
import {
  ConsumerGenerationMismatch,
  InventoryInUse,
  InventoryProviderMissing,
  InvalidInventoryInput,
  ProviderGenerationMismatch,
  ProviderMissing,
} from '../write-errors.js';
import { serviceMetrics } from '../../observability/service.js';
import { AllocationFailure, type ConsumerClaim } from './allocations.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID, INCOMPLETE_CONSUMER_USER_ID } from './consumers.js';
import { reservedCapacityProblem, type InventoryInput } from './inventories.js';

export interface ClaimOptions {
  /** 1.28+: consumer generations are compared. */
  requireGeneration: boolean;
  now: string;
}

export interface ProviderState {
  id: number;
  uuid: string;
  generation: number;
}

export interface InventoryState extends InventoryLimits {
  providerId: number;
  classId: number;
  resourceClass: string;
  /** Usage of every consumer, as read. */
  used: number;
}

interface ConsumerState {
  id: number;
  generation: number;
  project: string;
  user: string;
  type: string | null;
}

interface PreviousAllocation {
  consumer: string;
  providerId: number;
  providerUuid: string;
  providerGeneration: number;
  classId: number;
  used: number;
}

/** What a claim or reshape depends on, read in one snapshot. */
export interface Snapshot {
  providers: Map<string, ProviderState>;
  inventories: InventoryState[];
  classIds: Map<string, number>;
  consumers: Map<string, ConsumerState>;
  previous: PreviousAllocation[];
}

const num = (row: Row, column: string): number => Number(row[column]);
const str = (row: Row, column: string): string => String(row[column]);

/** One read batch: the providers, their inventories with usage, the classes (all when `classNames` is null), the consumers. */
export async function readSnapshot(
  store: DataStore,
  providerUuids: string[],
  consumerUuids: string[],
  classNames: string[] | null,
): Promise<Snapshot> {
  const inList = (values: string[]) => (values.length > 0 ? placeholders(values.length) : 'NULL');
  const [providers, inventories, classes, consumers, previous] = await store.readBatch([
    { sql: `SELECT id, uuid, generation FROM resource_providers WHERE uuid IN (${inList(providerUuids)})`, args: providerUuids },
    {
      sql: `SELECT i.resource_provider_id, i.resource_class_id, rc.name, i.total, i.reserved, i.min_unit, i.max_unit,
          i.step_size, i.allocation_ratio, ${usedSql('i')} AS used
        FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
        WHERE i.resource_provider_id IN (SELECT id FROM resource_providers WHERE uuid IN (${inList(providerUuids)}))`,
      args: providerUuids,
    },
    classNames === null
      ? { sql: 'SELECT id, name FROM resource_classes', args: [] }
      : { sql: `SELECT id, name FROM resource_classes WHERE name IN (${inList(classNames)})`, args: classNames },
    {
      sql: `SELECT c.id, c.uuid, c.generation, p.external_id AS project, u.external_id AS user, ct.name AS type
        FROM consumers c JOIN projects p ON p.id = c.project_id JOIN users u ON u.id = c.user_id
        LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
        WHERE c.uuid IN (${inList(consumerUuids)})`,
      args: consumerUuids,
    },
    {
      sql: `SELECT a.consumer_id, a.resource_provider_id, p.uuid, p.generation, a.resource_class_id, a.used
        FROM allocations a JOIN resource_providers p ON p.id = a.resource_provider_id
        WHERE a.consumer_id IN (${inList(consumerUuids)}) ORDER BY a.id`,
      args: consumerUuids,
    },
  ]);
  return {
    providers: new Map(
      providers!.rows.map((r) => [str(r, 'uuid'), { id: num(r, 'id'), uuid: str(r, 'uuid'), generation: num(r, 'generation') }]),
    ),
    inventories: inventories!.rows.map((r) => ({
      providerId: num(r, 'resource_provider_id'),
      classId: num(r, 'resource_class_id'),
      resourceClass: str(r, 'name'),
      total: num(r, 'total'),
      reserved: num(r, 'reserved'),
      minUnit: num(r, 'min_unit'),
      maxUnit: num(r, 'max_unit'),
      stepSize: num(r, 'step_size'),
      allocationRatio: num(r, 'allocation_ratio'),
      used: num(r, 'used'),
    })),
    classIds: new Map(classes!.rows.map((r) => [str(r, 'name'), num(r, 'id')])),
    consumers: new Map(
      consumers!.rows.map((r) => [
        str(r, 'uuid'),
        {
          id: num(r, 'id'),
          generation: num(r, 'generation'),
          project: str(r, 'project'),
          user: str(r, 'user'),
          type: r.type === null || r.type === undefined ? null : str(r, 'type'),
        },
      ]),
    ),
    previous: previous!.rows.map((r) => ({
      consumer: str(r, 'consumer_id'),
      providerId: num(r, 'resource_provider_id'),
      providerUuid: str(r, 'uuid'),
      providerGeneration: num(r, 'generation'),
      classId: num(r, 'resource_class_id'),
      used: num(r, 'used'),
    })),
  };
}

export const key = (providerId: number, classId: number) => `${providerId}:${classId}`;

/** Provider generations this write moves: provider id -> {read, next}. */
export class GenerationPlan {
  readonly bumps = new Map<number, { read: number; next: number }>();
  bump(provider: { id: number; generation: number }): void {
    const entry = this.bumps.get(provider.id) ?? { read: provider.generation, next: provider.generation };
    entry.next += 1;
    this.bumps.set(provider.id, entry);
  }
  statements(now: string): WriteStatement[] {
    return [...this.bumps].map(([id, { read, next }]) =>
      stmt('UPDATE resource_providers SET generation = ?, updated_at = ? WHERE id = ? AND generation = ?', [next, now, id, read], {
        mustChange: true,
      }),
    );
  }
}

function invalidInventory(resourceClass: string, providerUuid: string): AllocationFailure {
  return new AllocationFailure('invalid_inventory', `Inventory for '${resourceClass}' on resource provider '${providerUuid}' invalid.`);
}

/**
 * Decides `claims` against `snap` with `inventoryOf` as the inventory in
 * force (the reshaper passes its interim inventory), and returns the
 * statements that write them, plus the usage they leave per (provider, class).
 * Order of checks (and so of errors) follows upstream: providers exist,
 * consumers and their generations, resource classes exist, inventory and
 * capacity.
 */
function planClaims(
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
      if (existing && existing.generation !== claim.generation) throw new ConsumerGenerationMismatch(existing.generation, claim.generation);
      if (!existing && claim.generation !== null) throw new ConsumerGenerationMismatch(null, claim.generation);
    }
  }

  // 3. Resource classes exist, first unknown one in body order.
  const entries = claims.flatMap((claim) =>
    Object.entries(claim.allocations).flatMap(([providerUuid, resources]) =>
      Object.entries(resources).map(([resourceClass, amount]) => ({
        consumer: claim.uuid,
        provider: snap.providers.get(providerUuid)!,
        resourceClass,
        amount,
      })),
    ),
  );
  const classNames = [...new Set(entries.map((e) => e.resourceClass))];
  for (const name of classNames) {
    if (!snap.classIds.has(name)) throw new AllocationFailure('unknown_class', `No such resource class ${name}.`);
  }

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
    throw invalidInventory(classNames.join(', '), [...new Set(uuids)].join(', '));
  }
  const requested = new Map<string, number>();
  for (const e of entries) {
    const k = key(e.provider.id, snap.classIds.get(e.resourceClass)!);
    const inv = inventoryOf.get(k);
    if (!inv) throw invalidInventory(e.resourceClass, e.provider.uuid);
    const prefix = `Unable to create allocation for '${e.resourceClass}' on resource provider '${e.provider.uuid}'.`;
    if (!amountFitsUnits(inv, e.amount)) {
      throw new AllocationFailure('invalid_inventory', `${prefix} The requested amount would violate inventory constraints.`);
    }
    const total = (requested.get(k) ?? 0) + e.amount;
    requested.set(k, total);
    // Over capacity is refused only where the request increases usage (upstream bug 2104040).
    if ((usageAfter.get(k) ?? 0) + total > capacityOf(inv) && total > (released.get(k) ?? 0)) {
      serviceMetrics.capacityRefusals.inc([e.resourceClass]);
      throw new AllocationFailure('invalid_inventory', `${prefix} The requested amount would exceed the capacity.`);
    }
  }
  for (const [k, amount] of requested) usageAfter.set(k, (usageAfter.get(k) ?? 0) + amount);

  // 5. The write: owners, the consumers' allocations replaced, generations.
  const { now } = opts;
  const statements: WriteStatement[] = [];
  for (const claim of claims) statements.push(...ownerStatements(claim, now));
  const uuids = [...claimUuids];
  statements.push(stmt(`DELETE FROM allocations WHERE consumer_id IN (${placeholders(uuids.length)})`, uuids));
  if (entries.length > 0) {
    statements.push(
      stmt(
        `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, created_at, updated_at) VALUES ${entries
          .map(() => '(?, ?, ?, ?, ?, ?)')
          .join(', ')}`,
        entries.flatMap((e) => [e.provider.id, e.consumer, snap.classIds.get(e.resourceClass)!, e.amount, now, now]),
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
    const typeSql = claim.consumerType !== undefined ? '(SELECT id FROM consumer_types WHERE name = ?)' : 'consumer_type_id';
    const typeArgs = claim.consumerType !== undefined ? [claim.consumerType] : [];
    const generation = touchedConsumers.has(claim.uuid) ? 1 : 0;
    if (existing) {
      // Compare-and-swap even when nothing changes: it proves the allocations just replaced are those read.
      statements.push(
        stmt(
          `UPDATE consumers SET project_id = (SELECT id FROM projects WHERE external_id = ?),
          user_id = (SELECT id FROM users WHERE external_id = ?), consumer_type_id = ${typeSql},
          generation = ?, updated_at = ? WHERE id = ? AND generation = ?`,
          [project, user, ...typeArgs, existing.generation + generation, now, existing.id, existing.generation],
          { mustChange: true },
        ),
      );
    } else if (!emptied.has(claim.uuid)) {
      // Absent when read.
      statements.push(insertConsumer(claim, generation, now));
    }
  }
  return { statements, usageAfter };
}

/** Get-or-create the project, user and consumer type a claim names (the consumer row refers to them by name). */
function ownerStatements(claim: ConsumerClaim, now: string): WriteStatement[] {
  const statements = [
    stmt('INSERT OR IGNORE INTO projects (external_id, created_at, updated_at) VALUES (?, ?, ?)', [
      claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID,
      now,
      now,
    ]),
    stmt('INSERT OR IGNORE INTO users (external_id, created_at, updated_at) VALUES (?, ?, ?)', [
      claim.userId ?? INCOMPLETE_CONSUMER_USER_ID,
      now,
      now,
    ]),
  ];
  if (claim.consumerType !== undefined) {
    statements.push(
      stmt('INSERT OR IGNORE INTO consumer_types (name, created_at, updated_at) VALUES (?, ?, ?)', [claim.consumerType, now, now]),
    );
  }
  return statements;
}

/** Inserts a consumer believed absent: one created meanwhile makes it fail UNIQUE, a lost race. */
function insertConsumer(claim: ConsumerClaim, generation: number, now: string): WriteStatement {
  const typed = claim.consumerType !== undefined;
  return stmt(
    `INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type_id, created_at, updated_at)
    VALUES (?, (SELECT id FROM projects WHERE external_id = ?), (SELECT id FROM users WHERE external_id = ?), ?,
    ${typed ? '(SELECT id FROM consumer_types WHERE name = ?)' : 'NULL'}, ?, ?)`,
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
function dropEmptyConsumers(uuids: string[]): WriteStatement[] {
  if (uuids.length === 0) return [];
  return [
    stmt(
      `DELETE FROM consumers WHERE uuid IN (${placeholders(uuids.length)})
    AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = consumers.uuid)`,
      uuids,
    ),
  ];
}

function claimedNames(claims: ConsumerClaim[]): { providers: string[]; classes: string[] } {
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

function inventoryIndex(inventories: InventoryState[]): Map<string, InventoryState> {
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
function newConsumerClaimStatements(claims: ConsumerClaim[], opts: ClaimOptions): WriteStatement[] | null {
  // Only a consumer the client says is new (consumer_generation null, 1.28+): before 1.28 a PUT
  // replaces whatever the consumer holds, and trying the insert first would cost 3 round trips.
  const uuids: string[] = [];
  for (const claim of claims) {
    if (claim.generation !== null || !hasAllocations(claim)) return null;
    uuids.push(claim.uuid);
  }
  if (uuids.length > 1 && new Set(uuids).size !== uuids.length) return null;
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
  statements.push(prebuiltGuard(claimFitsSql(uuids.length), [entries, ...uuids]));
  // Every provider that receives allocations moves on, as in planClaims.
  statements.push(stmt(bumpClaimedProvidersSql(providers.size), [now, ...providers]));
  return statements;
}

function hasAllocations(claim: ConsumerClaim): boolean {
  for (const _ in claim.allocations) return true;
  return false;
}

/**
 * An SQL text per count of bound values, built once: a claim sends the same
 * few shapes over and over, and the same string each time is found in the
 * prepared-statement cache without hashing and comparing it anew.
 */
function sqlByCount(build: (count: number) => string): (count: number) => string {
  const built = new Map<number, string>();
  return (count) => {
    let sql = built.get(count);
    if (sql === undefined) {
      sql = build(count);
      if (built.size < 64) built.set(count, sql);
    }
    return sql;
  };
}

const insertAllocationsByNameSql = sqlByCount(
  (entries) => `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, created_at, updated_at)
      SELECT p.id, v.column2, rc.id, v.column5, ?, ? FROM (VALUES ${Array.from({ length: entries }, () => '(?, ?, ?, ?, ?)').join(', ')}) v
      JOIN resource_providers p ON p.uuid = v.column3 JOIN resource_classes rc ON rc.name = v.column4 ORDER BY v.column1`,
);

/**
 * As of the write, every allocation of the consumers found its inventory
 * (their count is the entries sent), respects min_unit, max_unit and
 * step_size, and leaves usage within capacity.
 */
const claimFitsSql = sqlByCount((consumers) =>
  guardSql(`(SELECT count(*) = ? AND total(mine.used < i.min_unit OR mine.used > i.max_unit OR mine.used % i.step_size != 0
          OR ${usedSql('i')} > ${capacitySql('i')}) = 0
        FROM allocations mine JOIN inventories i
          ON i.resource_provider_id = mine.resource_provider_id AND i.resource_class_id = mine.resource_class_id
        WHERE mine.consumer_id IN (${placeholders(consumers)}))`),
);

// By uuid: the guard before it has made sure every named provider received its allocations.
const bumpClaimedProvidersSql = sqlByCount(
  (providers) => `UPDATE resource_providers SET generation = generation + 1, updated_at = ? WHERE uuid IN (${placeholders(providers)})`,
);

/**
 * Replaces the allocations of every consumer in `claims`, atomically, as
 * placement's AllocationList.replace_all(): one read batch, one write batch;
 * a claim of new consumers that fits is one write batch alone.
 */
export async function claimAllocations(store: DataStore, claims: ConsumerClaim[], opts: ClaimOptions): Promise<void> {
  if (claims.length === 0) return;
  const fast = newConsumerClaimStatements(claims, opts);
  if (fast) {
    try {
      await commitGuarded(store, fast);
      return;
    } catch (err) {
      // Not granted as sent (or raced): the ordinary path decides and words it.
      if (!(err instanceof LostRace)) throw err;
    }
  }
  const names = claimedNames(claims);
  const uuids = claims.map((c) => c.uuid);
  await withRaceRetries(async () => {
    const snap = await readSnapshot(store, names.providers, uuids, names.classes);
    const gens = new GenerationPlan();
    const { statements } = planClaims(snap, claims, inventoryIndex(snap.inventories), gens, opts);
    await commitGuarded(store, [...statements, ...gens.statements(opts.now), ...dropEmptyConsumers(uuids)]);
  });
}

/**
 * DELETE /allocations/{consumer}: removes every allocation and the consumer,
 * in one write batch. Returns false when it held none. Provider generations
 * are not bumped, as upstream.
 */
export async function deleteConsumerAllocations(store: DataStore, consumerUuid: string): Promise<boolean> {
  const [removed] = await commitGuarded(store, [
    stmt('DELETE FROM allocations WHERE consumer_id = ?', [consumerUuid]),
    // Without allocations now: placement keeps no consumer without allocations.
    stmt('DELETE FROM consumers WHERE uuid = ?', [consumerUuid]),
  ]);
  return removed!.rowsAffected > 0;
}

export interface ProviderInventoryChange {
  providerUuid: string;
  /** The caller's view of the provider generation. */
  generation: number;
  /** The provider's whole desired inventory, by resource class name. */
  records: Record<string, InventoryInput>;
}

export interface ReshapeRequest {
  inventories: ProviderInventoryChange[];
  claims: ConsumerClaim[];
}

export interface ReshapeOptions extends ClaimOptions {
  /** 1.26+: reserved may equal total. */
  reservedMayEqualTotal: boolean;
}

/** A resource class named in the reshaper's inventories that does not exist (400 "malformed reshaper data"). */
export class UnknownResourceClass extends Error {
  constructor(readonly resourceClass: string) {
    super(`No such resource class ${resourceClass}.`);
    this.name = 'UnknownResourceClass';
  }
}

/**
 * POST /reshaper: inventories and allocations moved across providers at
 * once, as placement/objects/reshaper.py. Upstream writes an interim
 * inventory (old classes kept, new ones added), then the allocations, then
 * the final inventory; here the same three steps are decided in memory
 * (the claims checked against the interim inventory, the final one against
 * the usage the claims leave) and written in one batch. Each provider's
 * generation moves as upstream's three steps move it.
 */
export async function reshape(store: DataStore, request: ReshapeRequest, opts: ReshapeOptions): Promise<void> {
  const claimed = claimedNames(request.claims);
  const providerUuids = [...new Set([...request.inventories.map((c) => c.providerUuid), ...claimed.providers])];
  const classNames = [...new Set([...request.inventories.flatMap((c) => Object.keys(c.records)), ...claimed.classes])];
  const consumerUuids = request.claims.map((c) => c.uuid);
  await withRaceRetries(async () => {
    const snap = await readSnapshot(store, providerUuids, consumerUuids, classNames);
    // Every provider exists at the generation the caller saw, with sane input.
    for (const change of request.inventories) {
      const rp = snap.providers.get(change.providerUuid);
      if (!rp) throw new InventoryProviderMissing(change.providerUuid);
      if (rp.generation !== change.generation) throw new ProviderGenerationMismatch(rp.uuid, rp.generation, change.generation);
      const problem = reservedCapacityProblem(rp, change.records, opts.reservedMayEqualTotal);
      if (problem) throw new InvalidInventoryInput(problem);
    }
    const inventoryClasses = [...new Set(request.inventories.flatMap((ch) => Object.keys(ch.records)))];
    const unknown = inventoryClasses.find((name) => !snap.classIds.has(name));
    if (unknown) throw new UnknownResourceClass(unknown);

    // Interim inventory: current classes overlaid with the requested ones.
    const gens = new GenerationPlan();
    const interim = inventoryIndex(snap.inventories);
    const usedNow = new Map(snap.inventories.map((i) => [key(i.providerId, i.classId), i.used]));
    for (const change of request.inventories) {
      if (Object.keys(change.records).length === 0) continue;
      const rp = snap.providers.get(change.providerUuid)!;
      for (const [rc, input] of Object.entries(change.records)) {
        const classId = snap.classIds.get(rc)!;
        const k = key(rp.id, classId);
        interim.set(k, { ...input, providerId: rp.id, classId, resourceClass: rc, used: usedNow.get(k) ?? 0 });
      }
      gens.bump(rp);
    }

    const { statements, usageAfter } = planClaims(snap, request.claims, interim, gens, opts);

    // Final inventory, exactly as requested: removing a class still allocated is 409 inuse.
    const { now } = opts;
    for (const change of request.inventories) {
      const rp = snap.providers.get(change.providerUuid)!;
      const wanted = new Set(Object.keys(change.records).map((rc) => snap.classIds.get(rc)!));
      const current = [...interim.values()].filter((i) => i.providerId === rp.id);
      const removed = current.filter((i) => !wanted.has(i.classId)).sort((a, b) => a.classId - b.classId);
      assertInventoryNotInUse(
        rp.uuid,
        removed.filter((i) => (usageAfter.get(key(rp.id, i.classId)) ?? 0) > 0),
      );
      if (removed.length > 0) {
        const ids = removed.map((i) => i.classId);
        statements.push(
          stmt(`DELETE FROM inventories WHERE resource_provider_id = ? AND resource_class_id IN (${placeholders(ids.length)})`, [
            rp.id,
            ...ids,
          ]),
        );
      }
      for (const [rc, input] of Object.entries(change.records)) {
        statements.push(upsertInventory(rp.id, snap.classIds.get(rc)!, input, now));
      }
      gens.bump(rp);
    }
    await commitGuarded(store, [...statements, ...gens.statements(now), ...dropEmptyConsumers(consumerUuids)]);
  });
}

// Selected from the class's row: a class deleted since the read (DELETE
// /resource_classes/{name}) inserts nothing, and mustChange aborts the batch.
const upsertInventorySql = `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit,
    step_size, allocation_ratio, created_at) SELECT ?, id, ?, ?, ?, ?, ?, ?, ? FROM resource_classes WHERE id = ?
  ON CONFLICT (resource_provider_id, resource_class_id) DO UPDATE SET total = excluded.total,
    reserved = excluded.reserved, min_unit = excluded.min_unit, max_unit = excluded.max_unit,
    step_size = excluded.step_size, allocation_ratio = excluded.allocation_ratio, updated_at = ?`;

/** The write-batch statement for one inventory record: inserted, or updated in place. */
export function upsertInventory(providerId: number, classId: number, input: InventoryInput, now: string): WriteStatement {
  return stmt(
    upsertInventorySql,
    [providerId, input.total, input.reserved, input.minUnit, input.maxUnit, input.stepSize, input.allocationRatio, now, classId, now],
    { mustChange: true },
  );
}

/** 409 inventory.inuse when classes to drop still have allocations; listed in class-id order, as upstream's GROUP BY. */
export function assertInventoryNotInUse(providerUuid: string, inUse: { classId: number; resourceClass: string }[]): void {
  if (inUse.length === 0) return;
  const names = [...inUse].sort((a, b) => a.classId - b.classId).map((i) => i.resourceClass);
  throw new InventoryInUse(`Inventory for '${names.join(', ')}' on resource provider '${providerUuid}' in use.`);
}
