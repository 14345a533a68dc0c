// Project limits in SQL (extension, docs/limits.md): the limits table
// (drizzle/0008), the ledger of each project's usage by the consumers that
// count (ext_limit_usage, kept by triggers: a claim's guard reads one row per
// class, whatever the size of the project) and which consumers count. The
// limit rule's own statements are derived from the declaration
// (declaration.ts, placement/capacity.ts).
import type { InStatement, ResultSet } from '@libsql/client';
import { ALLOC, CONSUMER, CONSUMER_TYPE, LIMIT, LIMIT_COUNTING as COUNTING, LIMIT_SYNC, LIMIT_USAGE } from '../../db/columns.js';
import { num, str } from '../../db/rows.js';
import { rowsOf, type LimitRow, type LimitSet } from './model.js';

/** Which consumers a project's usage counts: these types, and untyped ones when `untyped`. */
export interface Counting {
  types: readonly string[];
  untyped: boolean;
}

/** Whether a consumer of `type` (null: untyped) counts: the TypeScript side of countedSql. */
export const countsConsumer = (counting: Counting, type: string | null): boolean =>
  type === null ? counting.untyped : counting.types.includes(type);

const U = LIMIT_USAGE;
/** Adds (sign '+') or takes away ('-') the allocations of consumer row `row` (NEW or OLD) to or from its project's ledger. */
const moveConsumerSql = (row: 'NEW' | 'OLD', sign: '+' | '-') =>
  `INSERT INTO ext_limit_usage (${U.projectId}, ${U.resourceClassId}, ${U.used})
      SELECT ${row}.${CONSUMER.projectId}, a.${ALLOC.resourceClassId}, ${sign}sum(a.${ALLOC.used}) FROM allocations a
      WHERE a.${ALLOC.consumerId} = ${row}.${CONSUMER.uuid} GROUP BY a.${ALLOC.resourceClassId}
      ON CONFLICT (${U.projectId}, ${U.resourceClassId}) DO UPDATE SET ${U.used} = ${U.used} + excluded.${U.used};`;
/** Adds or takes away allocation row `row` to or from its consumer's project, when the consumer counts. */
const moveAllocationSql = (row: 'NEW' | 'OLD', sign: '+' | '-', counted: string) =>
  `INSERT INTO ext_limit_usage (${U.projectId}, ${U.resourceClassId}, ${U.used})
      SELECT c.${CONSUMER.projectId}, ${row}.${ALLOC.resourceClassId}, ${sign}${row}.${ALLOC.used} FROM consumers c
      WHERE c.${CONSUMER.uuid} = ${row}.${ALLOC.consumerId} AND ${counted}
      ON CONFLICT (${U.projectId}, ${U.resourceClassId}) DO UPDATE SET ${U.used} = ${U.used} + excluded.${U.used};`;

/**
 * Which consumers count, as data: a row per counted consumer type, '' for
 * consumers without a type (ext_limit_counting, drizzle/0009). The triggers
 * and every statement below read it, so the triggers are the migration's,
 * the same for every app, and a setting changes rows, not DDL.
 */
const UNTYPED = '';
export const countedSql = (row: string) =>
  `((${row}.${CONSUMER.consumerTypeId} IS NULL AND EXISTS (SELECT 1 FROM ext_limit_counting k WHERE k.${COUNTING.consumerType} = '${UNTYPED}'))
      OR ${row}.${CONSUMER.consumerTypeId} IN (SELECT ct.${CONSUMER_TYPE.id} FROM consumer_types ct JOIN ext_limit_counting k ON k.${COUNTING.consumerType} = ct.${CONSUMER_TYPE.name}))`;

/** Any consumer counts: with nothing counted (limits never on) the allocations' triggers cost one probe of an empty table. */
const ANY_COUNTED = 'EXISTS (SELECT 1 FROM ext_limit_counting)';

/**
 * The ledger's triggers (name -> CREATE TRIGGER text), created by
 * drizzle/0009 (test/ext/limits-ledger.test.ts checks the migration holds
 * exactly these): every write of allocations or consumers, by any path
 * (claims, deletes, the lease sweep, an import), keeps each project's usage
 * of each class by the consumers that count. Consumer rows are written
 * before or after their allocations depending on the path, so both sides
 * move the ledger.
 */
export function ledgerTriggers(): ReadonlyMap<string, string> {
  const counted = countedSql('c');
  const trigger = (name: string, event: string, body: string, when: string) =>
    [name, `CREATE TRIGGER ${name} AFTER ${event} WHEN ${when} BEGIN\n  ${body}\nEND`] as const;
  return new Map([
    trigger('ext_limit_usage_allocation_insert', 'INSERT ON allocations', moveAllocationSql('NEW', '+', counted), ANY_COUNTED),
    trigger('ext_limit_usage_allocation_delete', 'DELETE ON allocations', moveAllocationSql('OLD', '-', counted), ANY_COUNTED),
    trigger(
      'ext_limit_usage_allocation_update',
      `UPDATE OF ${ALLOC.used}, ${ALLOC.consumerId}, ${ALLOC.resourceClassId} ON allocations`,
      `${moveAllocationSql('OLD', '-', counted)}\n  ${moveAllocationSql('NEW', '+', counted)}`,
      ANY_COUNTED,
    ),
    trigger('ext_limit_usage_consumer_insert', 'INSERT ON consumers', moveConsumerSql('NEW', '+'), countedSql('NEW')),
    trigger('ext_limit_usage_consumer_delete', 'DELETE ON consumers', moveConsumerSql('OLD', '-'), countedSql('OLD')),
    trigger(
      'ext_limit_usage_consumer_leave',
      `UPDATE OF ${CONSUMER.projectId}, ${CONSUMER.consumerTypeId} ON consumers`,
      moveConsumerSql('OLD', '-'),
      countedSql('OLD'),
    ),
    trigger(
      'ext_limit_usage_consumer_join',
      `UPDATE OF ${CONSUMER.projectId}, ${CONSUMER.consumerTypeId} ON consumers`,
      moveConsumerSql('NEW', '+'),
      countedSql('NEW'),
    ),
  ]);
}

/** The counting rule's rows ('' for untyped consumers), in a stable order. */
export const countingRows = (counting: Counting): string[] =>
  [...new Set([...(counting.untyped ? [UNTYPED] : []), ...counting.types])].sort();

/** The counting rule in force (prepare() compares it with the app's). */
export const READ_COUNTING: InStatement = `SELECT ${COUNTING.consumerType} FROM ext_limit_counting ORDER BY ${COUNTING.consumerType}`;

/** The statements of one app's counting rule, built once. */
export class LimitsSql {
  /** True for a consumer `c` that counts. */
  readonly counted = countedSql('c');

  constructor(readonly counting: Counting) {}

  /** Puts this app's counting rule in force and counts the ledger again from the allocations, in one transaction. */
  countingStatements(): InStatement[] {
    const rows = countingRows(this.counting);
    return [
      'DELETE FROM ext_limit_counting',
      ...(rows.length
        ? [{ sql: `INSERT INTO ext_limit_counting (${COUNTING.consumerType}) VALUES ${rows.map(() => '(?)').join(', ')}`, args: rows }]
        : []),
      'DELETE FROM ext_limit_usage',
      `INSERT INTO ext_limit_usage (${U.projectId}, ${U.resourceClassId}, ${U.used})
        SELECT c.${CONSUMER.projectId}, a.${ALLOC.resourceClassId}, sum(a.${ALLOC.used}) FROM consumers c
        JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid} WHERE ${this.counted}
        GROUP BY c.${CONSUMER.projectId}, a.${ALLOC.resourceClassId}`,
    ];
  }
}

export const READ_SYNC: InStatement = `SELECT ${LIMIT_SYNC.syncedAt}, ${LIMIT_SYNC.source} FROM ext_limits_sync WHERE ${LIMIT_SYNC.id} = 1`;

/** When the limits were last read, and from where; null before the first read. */
export function syncOf(result: ResultSet): { syncedAt: number; source: string } | null {
  const row = result.rows[0];
  return row ? { syncedAt: num(row, LIMIT_SYNC.syncedAt), source: str(row, LIMIT_SYNC.source) } : null;
}

/**
 * The table replaced by `limits`, stamped with their source and the time of
 * this read, in one batch: the stamp (ext_limits_sync) names where every row
 * of the table came from.
 */
export function writeLimitsStatements(limits: LimitSet, syncedAt: number, source: string): InStatement[] {
  const statements: InStatement[] = ['DELETE FROM ext_limits'];
  const rows: LimitRow[] = rowsOf(limits);
  // In slices: SQLite binds at most 32766 values per statement.
  for (let at = 0; at < rows.length; at += 1000) {
    const slice = rows.slice(at, at + 1000);
    statements.push({
      sql: `INSERT INTO ext_limits (${LIMIT.project}, ${LIMIT.resourceClass}, ${LIMIT.resourceLimit}) VALUES ${slice.map(() => '(?, ?, ?)').join(', ')}`,
      args: slice.flatMap((r) => [r.project, r.resourceClass, r.limit]),
    });
  }
  statements.push({
    sql: `INSERT INTO ext_limits_sync (${LIMIT_SYNC.id}, ${LIMIT_SYNC.syncedAt}, ${LIMIT_SYNC.source}) VALUES (1, ?, ?)
      ON CONFLICT (${LIMIT_SYNC.id}) DO UPDATE SET ${LIMIT_SYNC.syncedAt} = excluded.${LIMIT_SYNC.syncedAt}, ${LIMIT_SYNC.source} = excluded.${LIMIT_SYNC.source}`,
    args: [syncedAt, source],
  });
  return statements;
}

/**
 * The time of a read that found the limits unchanged, only when the table
 * holds limits from `source` (no row changes otherwise: another source's
 * limits are then replaced by writeLimitsStatements).
 */
export function touchSyncStatement(syncedAt: number, source: string): InStatement {
  return {
    sql: `UPDATE ext_limits_sync SET ${LIMIT_SYNC.syncedAt} = ? WHERE ${LIMIT_SYNC.id} = 1 AND ${LIMIT_SYNC.source} = ?`,
    args: [syncedAt, source],
  };
}
