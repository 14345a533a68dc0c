// Project limits in SQL (extension, issue 35): the limits table
// (drizzle/0008), a project's usage over the consumers that count, and the
// conditions the write kernel checks inside a claim's write transaction
// (guard.ts). Which consumers count is a setting, fixed per app, so it is
// part of the statements' text, built once.
import type { InStatement, ResultSet } from '@libsql/client';
import { ALLOC, CONSUMER, CONSUMER_TYPE, LIMIT, LIMIT_SYNC, PROJECT, RC } from '../../db/columns.js';
import { guard, inList, type WriteStatement } from '../../db/write-batch.js';
import { num, str } from '../../db/rows.js';
import { limitSetOf, REGISTERED, rowsOf, type LimitRow, type LimitSet } from './model.js';

/** Which consumers a project's usage counts: these types, and untyped ones when `untyped`. */
export interface Counting {
  types: readonly string[];
  untyped: boolean;
}

/** The effective limit of (project, class) as of the statement: the project's own, else the registered default. */
const limitSql = (project: string, resourceClass: string) =>
  `COALESCE((SELECT l.${LIMIT.resourceLimit} FROM ext_limits l WHERE l.${LIMIT.project} = ${project} AND l.${LIMIT.resourceClass} = ${resourceClass}),
            (SELECT l.${LIMIT.resourceLimit} FROM ext_limits l WHERE l.${LIMIT.project} = '' AND l.${LIMIT.resourceClass} = ${resourceClass}))`;

/** The statements of one app's counting rule, built once. */
export class LimitsSql {
  /** True for a consumer `c` that counts. */
  readonly counted: string;
  /** The usage of (project external id, class name), both bound, over the consumers that count. */
  readonly usage: string;

  constructor(counting: Counting) {
    // Consumer types are A-Z, 0-9 and _ (settings.ts): safe as literals.
    const typed =
      counting.types.length > 0
        ? `c.${CONSUMER.consumerTypeId} IN (SELECT ${CONSUMER_TYPE.id} FROM consumer_types WHERE ${CONSUMER_TYPE.name} IN (${counting.types.map((t) => `'${t}'`).join(', ')}))`
        : 'false';
    this.counted = counting.untyped ? `(c.${CONSUMER.consumerTypeId} IS NULL OR ${typed})` : `(${typed})`;
    this.usage = this.projectUsageSql('?', '?');
  }

  /** The usage of a class by a project, as of the statement; `project` and `resourceClass` are SQL expressions. */
  private projectUsageSql(project: string, resourceClass: string): string {
    return `(SELECT total(a.${ALLOC.used}) FROM consumers c JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
        WHERE c.${CONSUMER.projectId} = (SELECT ${PROJECT.id} FROM projects WHERE ${PROJECT.externalId} = ${project})
          AND a.${ALLOC.resourceClassId} = (SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} = ${resourceClass}) AND ${this.counted})`;
  }

  /**
   * The one-batch claim's condition (its consumers are all new, so any amount
   * they hold raises their project's usage): for every (project, class) the
   * consumers bound as `consumers` hold, with a limit, the project's usage as
   * of the write is within it.
   */
  newConsumersWithinLimitsSql(consumers: string): string {
    return `NOT EXISTS (SELECT 1 FROM (SELECT DISTINCT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc
          FROM consumers c JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId}
          JOIN allocations mine ON mine.${ALLOC.consumerId} = c.${CONSUMER.uuid}
          JOIN resource_classes rc ON rc.${RC.id} = mine.${ALLOC.resourceClassId}
          WHERE c.${CONSUMER.uuid} IN (${consumers}) AND mine.${ALLOC.used} > 0 AND ${this.counted}
            AND rc.${RC.name} IN (SELECT ${LIMIT.resourceClass} FROM ext_limits WHERE ${LIMIT.project} IN ('', p.${PROJECT.externalId}))) k
        WHERE ${this.projectUsageSql('k.project', 'k.rc')} > ${limitSql('k.project', 'k.rc')})`;
  }

  /**
   * The ordinary path's check of a grant that raises usage: for every
   * [project, class] of the bound JSON list, the project's usage as of the
   * write is within the limit in force (a limit removed meanwhile fails it:
   * the claim is decided again).
   */
  raisedWithinLimits(raised: readonly (readonly [string, string])[]): WriteStatement {
    const project = "json_extract(j.value, '$[0]')";
    const resourceClass = "json_extract(j.value, '$[1]')";
    return guard(
      `NOT EXISTS (SELECT 1 FROM json_each(?) j
          WHERE NOT (${this.projectUsageSql(project, resourceClass)} <= ${limitSql(project, resourceClass)}))`,
      [JSON.stringify(raised)],
    );
  }

  /**
   * A claim's snapshot: the limits of `projects`, their usage of every class
   * limited for them, and what the claimed consumers hold now, by project and
   * class, among the consumers that count.
   */
  snapshot(projects: readonly string[], consumers: readonly string[]): InStatement[] {
    const named = [REGISTERED, ...projects];
    return [
      {
        sql: `SELECT ${LIMIT.project}, ${LIMIT.resourceClass}, ${LIMIT.resourceLimit} FROM ext_limits WHERE ${LIMIT.project} IN (${inList(named)})`,
        args: named,
      },
      {
        sql: `SELECT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc, total(a.${ALLOC.used}) AS used
          FROM projects p JOIN consumers c ON c.${CONSUMER.projectId} = p.${PROJECT.id}
          JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
          JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
          WHERE p.${PROJECT.externalId} IN (${inList(projects)}) AND ${this.counted}
            AND rc.${RC.name} IN (SELECT ${LIMIT.resourceClass} FROM ext_limits WHERE ${LIMIT.project} IN ('', p.${PROJECT.externalId}))
          GROUP BY p.${PROJECT.externalId}, rc.${RC.name}`,
        args: [...projects],
      },
      {
        sql: `SELECT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc, total(a.${ALLOC.used}) AS used
          FROM consumers c JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId}
          JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
          JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
          WHERE c.${CONSUMER.uuid} IN (${inList(consumers)}) AND ${this.counted}
          GROUP BY p.${PROJECT.externalId}, rc.${RC.name}`,
        args: [...consumers],
      },
    ];
  }

  /** Usage of every limited class by every project that has any (GET /ext/limits). */
  usageOfLimitedClasses(project?: string): InStatement {
    return {
      sql: `SELECT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc, total(a.${ALLOC.used}) AS used
        FROM projects p JOIN consumers c ON c.${CONSUMER.projectId} = p.${PROJECT.id}
        JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
        JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
        WHERE ${project === undefined ? '' : `p.${PROJECT.externalId} = ? AND `}${this.counted}
          AND rc.${RC.name} IN (SELECT ${LIMIT.resourceClass} FROM ext_limits WHERE ${LIMIT.project} IN ('', p.${PROJECT.externalId}))
        GROUP BY p.${PROJECT.externalId}, rc.${RC.name}`,
      args: project === undefined ? [] : [project],
    };
  }
}

/** (project, class) -> amount, from rows of project, rc, used. */
export function usageTable(result: ResultSet): Map<string, number> {
  return new Map(result.rows.map((r) => [usageKey(str(r, 'project'), str(r, 'rc')), num(r, 'used')]));
}

export const usageKey = (project: string, resourceClass: string) => `${project}\u0000${resourceClass}`;

/** The limits as rows read from the table. */
export function limitSetOfResult(result: ResultSet): LimitSet {
  return limitSetOf(
    result.rows.map((r) => ({
      project: str(r, LIMIT.project),
      resourceClass: str(r, LIMIT.resourceClass),
      limit: num(r, LIMIT.resourceLimit),
    })),
  );
}

export const READ_LIMITS: InStatement = `SELECT ${LIMIT.project}, ${LIMIT.resourceClass}, ${LIMIT.resourceLimit} FROM ext_limits`;
export const READ_SYNC: InStatement = `SELECT ${LIMIT_SYNC.syncedAt}, ${LIMIT_SYNC.source} FROM ext_limits_sync WHERE ${LIMIT_SYNC.id} = 1`;

/** When the limits were last read, and from where; null before the first read. */
export function syncOf(result: ResultSet): { syncedAt: number; source: string } | null {
  const row = result.rows[0];
  return row ? { syncedAt: num(row, LIMIT_SYNC.syncedAt), source: str(row, LIMIT_SYNC.source) } : null;
}

/** The table replaced by `limits` (when `rows` differ from what it holds), and the time of this read. */
export function writeLimitsStatements(limits: LimitSet | null, syncedAt: number, source: string): InStatement[] {
  const statements: InStatement[] = [];
  if (limits) {
    statements.push('DELETE FROM ext_limits');
    const rows: LimitRow[] = rowsOf(limits);
    // In slices: SQLite binds at most 32766 values per statement.
    for (let at = 0; at < rows.length; at += 1000) {
      const slice = rows.slice(at, at + 1000);
      statements.push({
        sql: `INSERT INTO ext_limits (${LIMIT.project}, ${LIMIT.resourceClass}, ${LIMIT.resourceLimit}) VALUES ${slice.map(() => '(?, ?, ?)').join(', ')}`,
        args: slice.flatMap((r) => [r.project, r.resourceClass, r.limit]),
      });
    }
  }
  statements.push({
    sql: `INSERT INTO ext_limits_sync (${LIMIT_SYNC.id}, ${LIMIT_SYNC.syncedAt}, ${LIMIT_SYNC.source}) VALUES (1, ?, ?)
      ON CONFLICT (${LIMIT_SYNC.id}) DO UPDATE SET ${LIMIT_SYNC.syncedAt} = excluded.${LIMIT_SYNC.syncedAt}, ${LIMIT_SYNC.source} = excluded.${LIMIT_SYNC.source}`,
    args: [syncedAt, source],
  });
  return statements;
}
