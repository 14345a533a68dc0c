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
// a claim comes from the hooks installed in the app, hooks.ts);
// when one fails the batch rolls back and the caller takes the ordinary path,
// which decides again and words the answer. So a write that the ordinary path
// would grant takes 1 round trip, a refusal 2 (the refused batch, then the
// read that words it).
import type { ResultSet } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { ALLOC, CONSUMER, CONSUMER_TYPE, INV, PROJECT, RC, RP, USER } from '../../db/columns.js';
import { num, str } from '../../db/rows.js';
import { commitGuarded, inList, LostRace, stmt, withRaceRetries, WriteContention, type WriteStatement } from '../../db/write-batch.js';
import { ErrorCode, conflict } from '../../errors.js';
import { usedSql, type InventoryLimits } from '../capacity.js';
import type { ConsumerClaim } from '../repo/allocations.js';
import { guardSnapshot, type ClaimDecision, type WriteHooks } from './hooks.js';

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
  /** The installed claim guards' decisions on what they read in this snapshot (hooks.ts), in install order. */
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
