// The kernel of Placement's write model (the batches of db/write-batch.ts): the
// snapshot a write is decided on (ONE read batch), the provider generations it
// moves (GenerationPlan), the one-batch form (tryOneBatch: a write whose
// common case needs nothing read first), and the retry that decides a write
// again when it loses a race and, when it keeps losing, refuses it as
// placement's 409 concurrent_update (a DomainError, so no route catches it).
// One module per resource sits beside this one (claims, reshape,
// inventories, providers, traits, aggregates, resource classes).
//
// One-batch writes (issue 13): every condition the ordinary path (read,
// decide, write) would check is checked in SQL inside the write transaction;
// when one fails the batch rolls back and the caller takes the ordinary path,
// which decides again and words the answer. So a write that the ordinary path
// would grant takes 1 round trip, a refusal 2 (the refused batch, then the
// read that words it).
import type { ResultSet, Row } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { columnNames } from '../../db/rows.js';
import {
  allocations,
  consumers,
  consumerTypes,
  inventories,
  projects,
  resourceClasses,
  resourceProviders,
  users,
} from '../../db/schema/index.js';
import { commitGuarded, inList, LostRace, stmt, withRaceRetries, WriteContention, type WriteStatement } from '../../db/write-batch.js';
import { ErrorCode, conflict } from '../../errors.js';
import { providerCountersOf, providerCountersStatements } from '../../ext/counters/sql.js';
import type { CounterTable } from '../../ext/counters/model.js';
import { usedSql, type InventoryLimits } from '../capacity.js';

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
  /** Shared counters of the providers read (extension, issue 25; empty on a cloud without them). */
  counters: CounterTable;
}

const num = (row: Row, column: string): number => Number(row[column]);
const str = (row: Row, column: string): string => String(row[column]);

// The snapshot's columns, by the drizzle schema's names (a renamed column fails typecheck).
const P = columnNames(resourceProviders);
const I = columnNames(inventories);
const RC = columnNames(resourceClasses);
const C = columnNames(consumers);
const A = columnNames(allocations);
const EXTERNAL_ID = columnNames(projects).externalId;
const USER_EXTERNAL_ID = columnNames(users).externalId;
const TYPE_NAME = columnNames(consumerTypes).name;
const INVENTORY_LIMITS = [I.total, I.reserved, I.minUnit, I.maxUnit, I.stepSize, I.allocationRatio].map((c) => `i.${c}`).join(', ');

/** One read batch: the providers, their inventories with usage, the classes (all when `classNames` is null), the consumers. */
export async function readSnapshot(
  store: DataStore,
  providerUuids: string[],
  consumerUuids: string[],
  classNames: string[] | null,
): Promise<Snapshot> {
  const [providers, inventoryRows, classes, consumerRows, previous, ...counterRows] = await store.readBatch([
    {
      sql: `SELECT ${P.id}, ${P.uuid}, ${P.generation} FROM resource_providers WHERE ${P.uuid} IN (${inList(providerUuids)})`,
      args: providerUuids,
    },
    {
      sql: `SELECT i.${I.resourceProviderId}, i.${I.resourceClassId}, rc.${RC.name}, ${INVENTORY_LIMITS}, ${usedSql('i')} AS used
        FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${I.resourceClassId}
        WHERE i.${I.resourceProviderId} IN (SELECT ${P.id} FROM resource_providers WHERE ${P.uuid} IN (${inList(providerUuids)}))`,
      args: providerUuids,
    },
    classNames === null
      ? { sql: `SELECT ${RC.id}, ${RC.name} FROM resource_classes`, args: [] }
      : { sql: `SELECT ${RC.id}, ${RC.name} FROM resource_classes WHERE ${RC.name} IN (${inList(classNames)})`, args: classNames },
    {
      sql: `SELECT c.${C.id}, c.${C.uuid}, c.${C.generation}, p.${EXTERNAL_ID} AS project, u.${USER_EXTERNAL_ID} AS user, ct.${TYPE_NAME} AS type
        FROM consumers c JOIN projects p ON p.id = c.${C.projectId} JOIN users u ON u.id = c.${C.userId}
        LEFT JOIN consumer_types ct ON ct.id = c.${C.consumerTypeId}
        WHERE c.${C.uuid} IN (${inList(consumerUuids)})`,
      args: consumerUuids,
    },
    {
      sql: `SELECT a.${A.consumerId}, a.${A.resourceProviderId}, p.${P.uuid}, p.${P.generation}, a.${A.resourceClassId}, a.${A.used}
        FROM allocations a JOIN resource_providers p ON p.${P.id} = a.${A.resourceProviderId}
        WHERE a.${A.consumerId} IN (${inList(consumerUuids)}) ORDER BY a.${A.id}`,
      args: consumerUuids,
    },
    ...providerCountersStatements(providerUuids),
  ]);
  return {
    providers: new Map(
      providers!.rows.map((r) => [str(r, P.uuid), { id: num(r, P.id), uuid: str(r, P.uuid), generation: num(r, P.generation) }]),
    ),
    inventories: inventoryRows!.rows.map((r) => ({
      providerId: num(r, I.resourceProviderId),
      classId: num(r, I.resourceClassId),
      resourceClass: str(r, RC.name),
      total: num(r, I.total),
      reserved: num(r, I.reserved),
      minUnit: num(r, I.minUnit),
      maxUnit: num(r, I.maxUnit),
      stepSize: num(r, I.stepSize),
      allocationRatio: num(r, I.allocationRatio),
      used: num(r, 'used'),
    })),
    classIds: new Map(classes!.rows.map((r) => [str(r, RC.name), num(r, RC.id)])),
    consumers: new Map(
      consumerRows!.rows.map((r) => [
        str(r, C.uuid),
        {
          id: num(r, C.id),
          generation: num(r, C.generation),
          project: str(r, 'project'),
          user: str(r, 'user'),
          type: r.type === null || r.type === undefined ? null : str(r, 'type'),
        },
      ]),
    ),
    previous: previous!.rows.map((r) => ({
      consumer: str(r, A.consumerId),
      providerId: num(r, A.resourceProviderId),
      providerUuid: str(r, P.uuid),
      providerGeneration: num(r, P.generation),
      classId: num(r, A.resourceClassId),
      used: num(r, A.used),
    })),
    counters: providerCountersOf(counterRows),
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

/**
 * Bumps the generation of the provider `uuid`, compared with `expected`
 * when the client gave one, and returns the new generation (RETURNING): the
 * batch is refused when the provider is missing or its generation differs.
 * The ordinary path's GenerationPlan writes the same row.
 */
export function bumpProviderGeneration(uuid: string, expected: number | undefined, now: string): WriteStatement {
  return expected === undefined
    ? stmt('UPDATE resource_providers SET generation = generation + 1, updated_at = ? WHERE uuid = ? RETURNING generation', [now, uuid], {
        mustChange: true,
      })
    : stmt(
        'UPDATE resource_providers SET generation = generation + 1, updated_at = ? WHERE uuid = ? AND generation = ? RETURNING generation',
        [now, uuid, expected],
        { mustChange: true },
      );
}

/** The new generation a bumpProviderGeneration statement returned. */
export const bumpedGeneration = (result: ResultSet): number => Number(result.rows[0]!.generation);

/** The id of the provider `uuid` as of the write (an SQL expression taking one argument). */
export const PROVIDER_ID_BY_UUID = '(SELECT id FROM resource_providers WHERE uuid = ?)';
