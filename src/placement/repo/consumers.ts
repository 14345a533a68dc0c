// Consumers and the project, user and consumer-type records they point at,
// as read; writes/claims.ts writes them with the allocations.
import { eq, inArray } from 'drizzle-orm';
import type { SQLiteSelect } from 'drizzle-orm/sqlite-core';
import type { Db } from '../../db/client.js';
import { consumers, consumerTypes, projects, users } from '../../db/schema/index.js';

/**
 * Project and user recorded for allocations written before 1.8, when the
 * body carried neither: upstream's "incomplete consumer" placeholders
 * ([placement] incomplete_consumer_project_id / _user_id defaults).
 */
export const INCOMPLETE_CONSUMER_PROJECT_ID = '00000000-0000-0000-0000-000000000000';
export const INCOMPLETE_CONSUMER_USER_ID = '00000000-0000-0000-0000-000000000000';

/** The consumer type shown for consumers written before 1.38. */
export const UNKNOWN_CONSUMER_TYPE = 'unknown';

export type ConsumerRow = typeof consumers.$inferSelect;

export interface ConsumerView {
  id: number;
  uuid: string;
  generation: number;
  projectId: string;
  userId: string;
  consumerType: string;
}

/** A consumer's owners by name (joined by withOwners): project, user and type (null before 1.38). */
export const OWNER_FIELDS = { projectId: projects.externalId, userId: users.externalId, consumerType: consumerTypes.name };

/** A select from consumers, joined with their project, user and (optional) consumer type. */
export function withOwners<T extends SQLiteSelect>(query: T) {
  return query
    .innerJoin(projects, eq(projects.id, consumers.projectId))
    .innerJoin(users, eq(users.id, consumers.userId))
    .leftJoin(consumerTypes, eq(consumerTypes.id, consumers.consumerTypeId));
}

/** Consumers with their project, user and type names, keyed by uuid. */
export async function consumerViews(db: Db, uuids: string[]): Promise<Map<string, ConsumerView>> {
  if (uuids.length === 0) return new Map();
  const rows = await withOwners(
    db
      .select({ id: consumers.id, uuid: consumers.uuid, generation: consumers.generation, ...OWNER_FIELDS })
      .from(consumers)
      .$dynamic(),
  ).where(inArray(consumers.uuid, uuids));
  return new Map(rows.map((r) => [r.uuid, { ...r, consumerType: r.consumerType ?? UNKNOWN_CONSUMER_TYPE }]));
}

export interface ConsumerClaimIdentity {
  uuid: string;
  /** undefined before 1.8: the incomplete-consumer placeholders are used. */
  projectId?: string;
  userId?: string;
  /** Only compared when the microversion requires it (1.28+); null = "I expect no consumer". */
  generation?: number | null;
  /** Only applied from 1.38. */
  consumerType?: string;
}
