// Preemption priorities (docs/preemption.md): a consumer's own, or its
// project's default; a consumer with neither is never preemptible. Rows only:
// every write is one batch whose statements carry their own conditions.
import type { DataStore } from '../../db/client.js';
import { commitGuarded, stmt } from '../../db/write-batch.js';
import { CONSUMER, CONSUMER_PRIORITY, PROJECT, PROJECT_PRIORITY } from '../../db/columns.js';

export interface ConsumerPriorityView {
  consumer_uuid: string;
  priority: number;
  /** Where it comes from: the consumer's own, or its project's default. */
  source: 'consumer' | 'project';
}

export interface ProjectPriorityView {
  project_id: string;
  priority: number;
  created_at: string;
  updated_at: string;
}

/** Every preemptible consumer's effective priority and project: SQL for a read batch (`:uuids` narrows it when given). */
export const EFFECTIVE_PRIORITIES_SQL = `SELECT c.${CONSUMER.uuid} AS uuid, pr.${PROJECT.externalId} AS project, c.${CONSUMER.generation} AS generation,
    COALESCE(cp.${CONSUMER_PRIORITY.priority}, pp.${PROJECT_PRIORITY.priority}) AS priority,
    CASE WHEN cp.${CONSUMER_PRIORITY.priority} IS NULL THEN 'project' ELSE 'consumer' END AS source
  FROM consumers c JOIN projects pr ON pr.${PROJECT.id} = c.${CONSUMER.projectId}
  LEFT JOIN ext_consumer_priorities cp ON cp.${CONSUMER_PRIORITY.consumerUuid} = c.${CONSUMER.uuid}
  LEFT JOIN ext_project_priorities pp ON pp.${PROJECT_PRIORITY.projectExternalId} = pr.${PROJECT.externalId}
  WHERE (cp.${CONSUMER_PRIORITY.priority} IS NOT NULL OR pp.${PROJECT_PRIORITY.priority} IS NOT NULL)`;

const consumerPriorityOf = (r: Record<string, unknown>): ConsumerPriorityView => ({
  consumer_uuid: String(r.uuid),
  priority: Number(r.priority),
  source: r.source === 'consumer' ? 'consumer' : 'project',
});

const PROJECT_COLUMNS = `${PROJECT_PRIORITY.projectExternalId} AS project_id, ${PROJECT_PRIORITY.priority} AS priority,
  ${PROJECT_PRIORITY.createdAt} AS created_at, ${PROJECT_PRIORITY.updatedAt} AS updated_at`;
const projectPriorityOf = (r: Record<string, unknown>): ProjectPriorityView => ({
  project_id: String(r.project_id),
  priority: Number(r.priority),
  created_at: String(r.created_at),
  updated_at: String(r.updated_at),
});

/** A consumer's effective priority; null when it has none (not preemptible) or does not exist. */
export async function getConsumerPriority(store: DataStore, consumerUuid: string): Promise<ConsumerPriorityView | null> {
  const [read] = await store.readBatch([{ sql: `${EFFECTIVE_PRIORITIES_SQL} AND c.${CONSUMER.uuid} = ?`, args: [consumerUuid] }]);
  const row = read!.rows[0];
  return row ? consumerPriorityOf(row) : null;
}

/** Sets a consumer's own priority (one batch, only while the consumer exists); null: no such consumer. */
export async function putConsumerPriority(
  store: DataStore,
  consumerUuid: string,
  priority: number,
  nowMs: number,
): Promise<ConsumerPriorityView | null> {
  const now = new Date(nowMs).toISOString();
  const [, read] = await commitGuarded(store, [
    stmt(
      `INSERT INTO ext_consumer_priorities (${CONSUMER_PRIORITY.consumerUuid}, ${CONSUMER_PRIORITY.priority}, ${CONSUMER_PRIORITY.createdAt}, ${CONSUMER_PRIORITY.updatedAt})
        SELECT c.${CONSUMER.uuid}, ?, ?, ? FROM consumers c WHERE c.${CONSUMER.uuid} = ?
        ON CONFLICT (${CONSUMER_PRIORITY.consumerUuid}) DO UPDATE SET ${CONSUMER_PRIORITY.priority} = excluded.${CONSUMER_PRIORITY.priority},
          ${CONSUMER_PRIORITY.updatedAt} = excluded.${CONSUMER_PRIORITY.updatedAt}`,
      [priority, now, now, consumerUuid],
    ),
    stmt(`${EFFECTIVE_PRIORITIES_SQL} AND c.${CONSUMER.uuid} = ? AND cp.${CONSUMER_PRIORITY.priority} IS NOT NULL`, [consumerUuid]),
  ]);
  const row = read!.rows[0];
  return row ? consumerPriorityOf(row) : null;
}

/** Removes a consumer's own priority (its project's default, if any, applies again). False: it had none. */
export async function deleteConsumerPriority(store: DataStore, consumerUuid: string): Promise<boolean> {
  const [deleted] = await commitGuarded(store, [
    stmt(`DELETE FROM ext_consumer_priorities WHERE ${CONSUMER_PRIORITY.consumerUuid} = ?`, [consumerUuid]),
  ]);
  return deleted!.rowsAffected > 0;
}

export async function listProjectPriorities(store: DataStore): Promise<ProjectPriorityView[]> {
  const [read] = await store.readBatch([
    { sql: `SELECT ${PROJECT_COLUMNS} FROM ext_project_priorities ORDER BY ${PROJECT_PRIORITY.projectExternalId}`, args: [] },
  ]);
  return read!.rows.map(projectPriorityOf);
}

export async function getProjectPriority(store: DataStore, projectId: string): Promise<ProjectPriorityView | null> {
  const [read] = await store.readBatch([
    { sql: `SELECT ${PROJECT_COLUMNS} FROM ext_project_priorities WHERE ${PROJECT_PRIORITY.projectExternalId} = ?`, args: [projectId] },
  ]);
  const row = read!.rows[0];
  return row ? projectPriorityOf(row) : null;
}

/** Sets a project's default (a project need not exist yet: Keystone owns projects, placement learns them at first claim). */
export async function putProjectPriority(
  store: DataStore,
  projectId: string,
  priority: number,
  nowMs: number,
): Promise<ProjectPriorityView> {
  const now = new Date(nowMs).toISOString();
  const [, read] = await commitGuarded(store, [
    stmt(
      `INSERT INTO ext_project_priorities (${PROJECT_PRIORITY.projectExternalId}, ${PROJECT_PRIORITY.priority}, ${PROJECT_PRIORITY.createdAt}, ${PROJECT_PRIORITY.updatedAt})
        VALUES (?, ?, ?, ?) ON CONFLICT (${PROJECT_PRIORITY.projectExternalId}) DO UPDATE SET ${PROJECT_PRIORITY.priority} = excluded.${PROJECT_PRIORITY.priority},
          ${PROJECT_PRIORITY.updatedAt} = excluded.${PROJECT_PRIORITY.updatedAt}`,
      [projectId, priority, now, now],
    ),
    stmt(`SELECT ${PROJECT_COLUMNS} FROM ext_project_priorities WHERE ${PROJECT_PRIORITY.projectExternalId} = ?`, [projectId]),
  ]);
  return projectPriorityOf(read!.rows[0]!);
}

export async function deleteProjectPriority(store: DataStore, projectId: string): Promise<boolean> {
  const [deleted] = await commitGuarded(store, [
    stmt(`DELETE FROM ext_project_priorities WHERE ${PROJECT_PRIORITY.projectExternalId} = ?`, [projectId]),
  ]);
  return deleted!.rowsAffected > 0;
}
