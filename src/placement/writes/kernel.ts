// The kernel of Placement's write model (the batches of db/write-batch.ts): the
// snapshot a write is decided on (ONE read batch), the provider generations it
// moves (GenerationPlan), the one-batch form (tryOneBatch: a write whose
// common case needs nothing read first), and the retry that decides a write
// again when it loses a race and, when it keeps losing, refuses it as
// placement's 409 concurrent_update (a DomainError, so no route catches it).
// One module per resource sits beside this one (claims, reshape,
// inventories, providers, traits, aggregates, resource classes).
//
// One-batch writes (docs/write-model.md): every condition the ordinary path (read,
// decide, write) would check is checked in SQL inside the write transaction
// (a rule that compares values is declared once, in rules.ts, and both the
// decision and the SQL guard are derived from it; what an extension adds to
// a claim comes from the hooks installed in the app, at the end of this file);
// when one fails the batch rolls back and the caller takes the ordinary path,
// which decides again and words the answer. So a write that the ordinary path
// would grant takes 1 round trip, a refusal 2 (the refused batch, then the
// read that words it).
import type { InStatement, ResultSet } from '@libsql/client';
import type { BatchReader, DataStore } from '../../db/client.js';
import { ALLOC, CONSUMER, CONSUMER_TYPE, INV, PROJECT, RC, RP, USER } from '../../db/columns.js';
import { num, str } from '../../db/rows.js';
import {
  commitGuarded,
  guardSql,
  inList,
  LostRace,
  placeholders,
  stmt,
  withRaceRetries,
  WriteContention,
  type WriteStatement,
} from '../../db/write-batch.js';
import { ErrorCode, conflict } from '../../errors.js';
import { usedSql, type InventoryLimits } from '../capacity.js';
import type { ConsumerClaim } from '../repo/allocations.js';
import { CLAIM_RULES, claimRulesHoldSql, type Rule } from './rules.js';

/** What the write model needs of the app (Deps has them): the store, the installed hooks, the metrics it counts into. */
export interface WriteDeps {
  store: DataStore;
  writeHooks: WriteHooks;
  metrics: WriteMetrics;
}

/** The write model's metrics (a part of Deps.metrics). */
export interface WriteMetrics {
  capacityRefusals: { inc(labels: string[]): void };
}

/**
 * Runs one read-decide-write attempt until it does not lose a race; when it
 * keeps losing, 409 concurrent_update in placement's words.
 */
export async function placementWrite<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await withRaceRetries(attempt);
  } catch (err) {
    if (err instanceof WriteContention) {
      throw conflict('Another thread concurrently updated the data. Please retry your update', ErrorCode.CONCURRENT_UPDATE);
    }
    throw err;
  }
}

/**
 * Runs `statements` as one guarded write batch. Returns their results, or
 * null when a guard refused it (nothing was written): the caller then takes
 * the ordinary path. Any other failure is rethrown.
 */
export async function tryOneBatch(store: DataStore, statements: WriteStatement[]): Promise<ResultSet[] | null> {
  try {
    return await commitGuarded(store, statements);
  } catch (err) {
    if (err instanceof LostRace) return null;
    throw err;
  }
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

export interface ConsumerState {
  id: number;
  generation: number;
  project: string;
  user: string;
  type: string | null;
}

export interface PreviousAllocation {
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
  /** The installed claim guards' decisions on what they read in this snapshot (the hooks, below), in install order. */
  guards: ClaimDecision[];
}

// The snapshot's columns, by the drizzle schema's names (a renamed column fails typecheck).
const INVENTORY_LIMITS = [INV.total, INV.reserved, INV.minUnit, INV.maxUnit, INV.stepSize, INV.allocationRatio]
  .map((c) => `i.${c}`)
  .join(', ');

/**
 * One read batch: the providers, their inventories with usage, the classes
 * (all when `classNames` is null), the consumers, and what the claim guards
 * of `hooks` read for `claims` (none when null: a write that claims nothing).
 */
export async function readSnapshot(
  store: DataStore,
  providerUuids: string[],
  consumerUuids: string[],
  classNames: string[] | null,
  hooks: WriteHooks | null,
  claims: readonly ConsumerClaim[] = [],
): Promise<Snapshot> {
  const extension = hooks ? guardSnapshot(hooks, providerUuids, consumerUuids, claims) : null;
  const [providers, inventoryRows, classes, consumerRows, previous, ...guardRows] = await store.readBatch([
    {
      sql: `SELECT ${RP.id}, ${RP.uuid}, ${RP.generation} FROM resource_providers WHERE ${RP.uuid} IN (${inList(providerUuids)})`,
      args: providerUuids,
    },
    {
      sql: `SELECT i.${INV.resourceProviderId}, i.${INV.resourceClassId}, rc.${RC.name}, ${INVENTORY_LIMITS}, ${usedSql('i')} AS used
        FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
        WHERE i.${INV.resourceProviderId} IN (SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} IN (${inList(providerUuids)}))`,
      args: providerUuids,
    },
    classNames === null
      ? { sql: `SELECT ${RC.id}, ${RC.name} FROM resource_classes`, args: [] }
      : { sql: `SELECT ${RC.id}, ${RC.name} FROM resource_classes WHERE ${RC.name} IN (${inList(classNames)})`, args: classNames },
    {
      sql: `SELECT c.${CONSUMER.id}, c.${CONSUMER.uuid}, c.${CONSUMER.generation}, p.${PROJECT.externalId} AS project, u.${USER.externalId} AS user, ct.${CONSUMER_TYPE.name} AS type
        FROM consumers c JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId} JOIN users u ON u.${USER.id} = c.${CONSUMER.userId}
        LEFT JOIN consumer_types ct ON ct.${CONSUMER_TYPE.id} = c.${CONSUMER.consumerTypeId}
        WHERE c.${CONSUMER.uuid} IN (${inList(consumerUuids)})`,
      args: consumerUuids,
    },
    {
      sql: `SELECT a.${ALLOC.consumerId}, a.${ALLOC.resourceProviderId}, p.${RP.uuid}, p.${RP.generation}, a.${ALLOC.resourceClassId}, a.${ALLOC.used}
        FROM allocations a JOIN resource_providers p ON p.${RP.id} = a.${ALLOC.resourceProviderId}
        WHERE a.${ALLOC.consumerId} IN (${inList(consumerUuids)}) ORDER BY a.${ALLOC.id}`,
      args: consumerUuids,
    },
    ...(extension?.statements ?? []),
  ]);
  return {
    providers: new Map(
      providers!.rows.map((r) => [str(r, RP.uuid), { id: num(r, RP.id), uuid: str(r, RP.uuid), generation: num(r, RP.generation) }]),
    ),
    inventories: inventoryRows!.rows.map((r) => ({
      providerId: num(r, INV.resourceProviderId),
      classId: num(r, INV.resourceClassId),
      resourceClass: str(r, RC.name),
      total: num(r, INV.total),
      reserved: num(r, INV.reserved),
      minUnit: num(r, INV.minUnit),
      maxUnit: num(r, INV.maxUnit),
      stepSize: num(r, INV.stepSize),
      allocationRatio: num(r, INV.allocationRatio),
      used: num(r, 'used'),
    })),
    classIds: new Map(classes!.rows.map((r) => [str(r, RC.name), num(r, RC.id)])),
    consumers: new Map(
      consumerRows!.rows.map((r) => [
        str(r, CONSUMER.uuid),
        {
          id: num(r, CONSUMER.id),
          generation: num(r, CONSUMER.generation),
          project: str(r, 'project'),
          user: str(r, 'user'),
          type: r.type === null || r.type === undefined ? null : str(r, 'type'),
        },
      ]),
    ),
    previous: previous!.rows.map((r) => ({
      consumer: str(r, ALLOC.consumerId),
      providerId: num(r, ALLOC.resourceProviderId),
      providerUuid: str(r, RP.uuid),
      providerGeneration: num(r, RP.generation),
      classId: num(r, ALLOC.resourceClassId),
      used: num(r, ALLOC.used),
    })),
    guards: extension?.deciders(guardRows) ?? [],
  };
}

export const key = (providerId: number, classId: number) => `${providerId}:${classId}`;

// The generation statements, built once at load.
const BUMP_GENERATION = `UPDATE resource_providers SET ${RP.generation} = ?, ${RP.updatedAt} = ? WHERE ${RP.id} = ? AND ${RP.generation} = ?`;
const BUMP_BY_UUID = `UPDATE resource_providers SET ${RP.generation} = ${RP.generation} + 1, ${RP.updatedAt} = ? WHERE ${RP.uuid} = ?`;
const BUMP_BY_UUID_ANY = `${BUMP_BY_UUID} RETURNING ${RP.generation}`;
const BUMP_BY_UUID_AT = `${BUMP_BY_UUID} AND ${RP.generation} = ? RETURNING ${RP.generation}`;

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
      stmt(BUMP_GENERATION, [next, now, id, read], {
        mustChange: true,
      }),
    );
  }
}

/**
 * Bumps the generation of the provider `uuid`, compared with `expected`
 * when the client gave one, and returns the new generation (RETURNING): the
 * batch is refused when the provider is missing or its generation differs.
 * The ordinary path's GenerationPlan writes the same row.
 */
export function bumpProviderGeneration(uuid: string, expected: number | undefined, now: string): WriteStatement {
  return expected === undefined
    ? stmt(BUMP_BY_UUID_ANY, [now, uuid], {
        mustChange: true,
      })
    : stmt(BUMP_BY_UUID_AT, [now, uuid, expected], { mustChange: true });
}

/** The new generation a bumpProviderGeneration statement returned. */
export const bumpedGeneration = (result: ResultSet): number => num(result.rows[0]!, RP.generation);

/** The id of the provider `uuid` as of the write (an SQL expression taking one argument). */
export const PROVIDER_ID_BY_UUID = `(SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} = ?)`;

// --- The kernel's extension points -------------------------------------------
// What an extension adds to a claim, declared here and called by claims.ts
// and reshape.ts; src/ext
// implements them and the composition root (src/compose.ts) installs them per
// app (Deps.writeHooks). src/placement never imports an extension.
//
// A claim guard adds, without a round trip of its own:
//   - statements to the claim's snapshot (the same read batch, so the same snapshot);
//   - the ordinary path's decision on what it read (after placement's own
//     checks, so upstream's order of errors is kept): a refusal carries the
//     guard's own error, with its own status and code;
//   - an SQL condition on the claim as written, checked inside the write
//     transaction: in the one-batch claim's guard always (refused, the claim
//     takes the ordinary path, which decides and words it), and in the ordinary
//     path's write batch too when the provider generations' compare-and-swap
//     does not protect what the guard read (a project's usage across providers):
//     refused there, the claim is decided again from a fresh snapshot. So two
//     racing writers never both pass it.
//
// A caller may also add statements to one claim's own batch (ClaimAlongside),
// what an extension must write with that claim or not at all (a gang's lease).
//
// What a delete cascades to an extension's rows (a provider's taints and
// counters, a consumer's lease) is declared by the extension's migration as
// triggers (drizzle/0006, 0007), so every path that deletes (the kernel, the
// lease sweep, a restore) cascades alike, and the kernel needs no hook for it.
/** One allocation of a claim, in body order. */
export interface ClaimEntry {
  consumer: string;
  provider: ProviderState;
  resourceClass: string;
  classId: number;
  amount: number;
}

/** What a claim leaves, as the ordinary path decided it, for a guard to judge. */
export interface ClaimView {
  claims: readonly ConsumerClaim[];
  entries: readonly ClaimEntry[];
  /** Providers that receive allocations, first appearance first. */
  providerIds: readonly number[];
  /** The claimed consumers as read (absent: new). */
  consumers: ReadonlyMap<string, ConsumerState>;
  /** When the claim is written (ISO 8601), by the app's clock. */
  now: string;
  /** The request's extension parameters (`ext_` names, as sent), for the guards whose extension declared them. */
  params: ReadonlyMap<string, string>;
  /** Usage of (provider, class) by every consumer, as read, and as the claim leaves it. */
  usedBefore(providerId: number, classId: number): number;
  usedAfter(providerId: number, classId: number): number;
}

/** A guard's refusal: the error answered; `resourceClass` counts it among the capacity refusals of that class. */
export interface ClaimRefusal {
  error: Error;
  resourceClass?: string;
}

/**
 * A guard's grant that holds only while what it read still holds (a
 * project's usage across providers): checks (guard() statements) added to the
 * ordinary path's write batch after the claim's writes, so as of the write; a
 * failing one is a lost race, and the claim is decided again from a fresh snapshot.
 */
export interface ClaimGrant {
  checks: WriteStatement[];
}

/**
 * What a caller writes with one claim, in the claim's own write batch after
 * its writes (so they see the claimed consumers and allocations): rows of an
 * extension that must stand or fall with the claim, as a gang's lease (POST
 * /ext/gangs). A failing one fails the claim: nothing is written. Unlike a
 * guard, these belong to one request, not to every claim of the app.
 */
export type ClaimAlongside = readonly WriteStatement[];

/** The decision a guard makes on its part of a snapshot: null grants. */
export type ClaimDecision = (claim: ClaimView) => ClaimRefusal | ClaimGrant | null;

export interface ClaimGuard {
  /** For messages and tests. */
  readonly name: string;
  /** Statements read beside placement's own in the claim's snapshot, for the providers, consumers and claims (their projects) it names. */
  snapshotStatements(providerUuids: string[], consumerUuids: string[], claims: readonly ConsumerClaim[]): InStatement[];
  /** The decision on their results (as many as snapshotStatements returned, in order). */
  decider(results: ResultSet[]): ClaimDecision;
  /**
   * An SQL condition, true when the claim as written may stand, as of the
   * write; `consumers` is a placeholder list bound to the claimed consumers' uuids.
   */
  holdsSql(consumers: string): string;
  /** What the guard reads is not protected by the providers' generations: its condition guards every claim batch. */
  beyondProviderGenerations?: boolean;
}

/**
 * The `ext_` query parameters an extension takes on a claim (PUT
 * /allocations/{c}, POST /allocations), and what a claim with them writes in
 * its own batch (ClaimAlongside): parsed here, so a malformed one is refused
 * (a DomainError) before anything is read or written.
 */
export interface ClaimParams {
  readonly names: readonly string[];
  alongside(params: ReadonlyMap<string, string>, claims: readonly ConsumerClaim[], nowMs: number): ClaimAlongside;
  /** Whether a claim with these parameters may be granted as sent (the one-batch claim); false where only the guards' decision can grant it. */
  asSent?(params: ReadonlyMap<string, string>): boolean;
}

/** A change to when a consumer's allocations end, made outside a claim (a lease renewed or confirmed: /ext/leases). */
export interface EndChange {
  consumer: string;
  /** The new end: a lease's expiry, or forever (Infinity) once confirmed. */
  endsAtMs: number;
  nowMs: number;
}

/**
 * A guard on an EndChange, for a rule that reads when allocations end
 * (holds): it reads what it needs, then refuses (its own error) or grants
 * with checks (guard() statements) that go first in the change's own write
 * batch, so a change that raced a claim or a hold is refused as of the write.
 */
export interface EndChangeGuard {
  readonly name: string;
  decide(reader: BatchReader, change: EndChange): Promise<ClaimRefusal | ClaimGrant | null>;
}

/** What one extension adds to the write kernel. */
export interface WriteExtension {
  claimGuards?: ClaimGuard[];
  claimParams?: ClaimParams;
  endGuards?: EndChangeGuard[];
}

/** A claim rule (rules.ts): what it refuses is worded by claims.ts. */
export type ClaimRule = Rule<'constraints' | 'capacity'>;

/** The hooks installed in one app, with the claim rules they are checked beside. */
export interface WriteHooks {
  readonly claimGuards: readonly ClaimGuard[];
  readonly claimRules: readonly ClaimRule[];
  /**
   * The one-batch claim's guard statement for `consumers` new consumers:
   * the claim rules, then every guard's condition; bound to the count of
   * entries, then the consumers' uuids once per part (built once per count).
   */
  claimFitsSql(consumers: number): string;
  /** The conditions of the guards beyond the providers' generations, ANDed ('' when none), for the ordinary path's batch. */
  everyBatchHoldsSql(consumers: number): string;
  /** The extensions' claim parameters (none: a claim takes no `ext_` parameter). */
  readonly claimParams: readonly ClaimParams[];
  /** The guards on a change of when allocations end. */
  readonly endGuards: readonly EndChangeGuard[];
}

/**
 * An SQL text per count of bound values, built once: a claim sends the same
 * few shapes over and over, and the same string each time is found in the
 * prepared-statement cache without hashing and comparing it anew.
 */
export function sqlByCount(build: (count: number) => string): (count: number) => string {
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

const conditionsOf = (guards: readonly ClaimGuard[], count: number) => guards.map((g) => `(${g.holdsSql(placeholders(count))})`);

/**
 * The hooks of `extensions`, in the order given (a refusal of an earlier one
 * is answered first), beside `rules` (placement's own; a test passes others).
 */
export function writeHooks(extensions: readonly WriteExtension[], rules: readonly ClaimRule[] = CLAIM_RULES): WriteHooks {
  const claimGuards = extensions.flatMap((e) => e.claimGuards ?? []);
  const everyBatch = claimGuards.filter((g) => g.beyondProviderGenerations);
  return {
    claimGuards,
    claimParams: extensions.flatMap((e) => (e.claimParams ? [e.claimParams] : [])),
    endGuards: extensions.flatMap((e) => e.endGuards ?? []),
    claimRules: rules,
    claimFitsSql: sqlByCount((count) =>
      guardSql([claimRulesHoldSql(rules, placeholders(count)), ...conditionsOf(claimGuards, count)].join('\n      AND ')),
    ),
    everyBatchHoldsSql: sqlByCount((count) => conditionsOf(everyBatch, count).join(' AND ')),
  };
}

/** The statements the guards add to a snapshot, and how to split their results back. */
export function guardSnapshot(
  hooks: WriteHooks,
  providerUuids: string[],
  consumerUuids: string[],
  claims: readonly ConsumerClaim[],
): { statements: InStatement[]; deciders(results: ResultSet[]): ClaimDecision[] } {
  const parts = hooks.claimGuards.map((g) => g.snapshotStatements(providerUuids, consumerUuids, claims));
  return {
    statements: parts.flat(),
    deciders: (results) => {
      let at = 0;
      return hooks.claimGuards.map((g, i) => {
        const mine = results.slice(at, at + parts[i]!.length);
        at += parts[i]!.length;
        return g.decider(mine);
      });
    },
  };
}

/** Every end guard's decision on `change`, in order: the first refusal's error is thrown; else the grants' checks. */
export async function endChangeChecks(hooks: WriteHooks, reader: BatchReader, change: EndChange): Promise<WriteStatement[]> {
  const checks: WriteStatement[] = [];
  for (const g of hooks.endGuards) {
    const decision = await g.decide(reader, change);
    if (decision && 'error' in decision) throw decision.error;
    if (decision) checks.push(...decision.checks);
  }
  return checks;
}
