// Edge sites on the primary (docs/sites.md): which providers are members of an aggregate;
// what a site keeps of its slice (readSiteView); the replayed journal entries (ext_site_replays).
import type { BatchReader } from '../../db/client.js';
import {
  ALLOC,
  CONSUMER,
  CONSUMER_TYPE,
  HOLD,
  HOLD_AMOUNT,
  HOLD_DRAW,
  INV,
  LIMIT,
  PROJECT,
  RC,
  RP,
  SITE_LIMIT_SLICE,
  SITE_REPLAY,
  USER,
} from '../../db/columns.js';
import { stmt, type WriteStatement } from '../../db/write-batch.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { SITE_HOLD_PREFIX } from '../holds/model.js';
import type { SiteConsumer, SiteView } from './local.js';

/** Of `providers` (uuids), those that are not members of `aggregate` (a uuid), unknown ones included. */
export async function providersOutside(reader: BatchReader, aggregate: string, providers: readonly string[]): Promise<string[]> {
  if (providers.length === 0) return [];
  const [rows] = await reader.readBatch([
    {
      sql: `SELECT p.uuid AS uuid FROM resource_providers p
        JOIN resource_provider_aggregates ra ON ra.resource_provider_id = p.id
        JOIN placement_aggregates a ON a.id = ra.aggregate_id
        WHERE a.uuid = ? AND p.uuid IN (${providers.map(() => '?').join(', ')})`,
      args: [aggregate, ...providers],
    },
  ]);
  const inside = new Set(rows!.rows.map((r) => String(r.uuid)));
  return providers.filter((p) => !inside.has(p));
}

/** The site's limit slices, and which (project, class) pairs have a limit (limits on; '' is every project's default). */
const limitStatements = (site: string) => [
  {
    sql: `SELECT ${SITE_LIMIT_SLICE.project} AS project, ${SITE_LIMIT_SLICE.resourceClass} AS rc, ${SITE_LIMIT_SLICE.amount} AS amount
      FROM ext_site_limit_slices WHERE ${SITE_LIMIT_SLICE.site} = ?`,
    args: [site],
  },
  {
    sql: `SELECT ${LIMIT.project} AS project, ${LIMIT.resourceClass} AS rc FROM ext_limits`,
    args: [],
  },
];

/**
 * The slice's hold, what it holds as the holds' declaration `held` counts it (what its draws may
 * reach on the primary; with the inventories' unit constraints), the consumers drawn
 * from it and (`limitsOn`) its limit slices and which pairs have limits, in one snapshot.
 */
export async function readSiteView(reader: BatchReader, held: SetAsideConstraint, owner: string, limitsOn = false): Promise<SiteView> {
  const amount = held.setAside.amount('ha');
  const site = owner.slice(SITE_HOLD_PREFIX.length);
  const [hold, amounts, drawn, limitSlices, limited] = await reader.readBatch([
    {
      sql: `SELECT ${HOLD.uuid} AS uuid, ${HOLD.generation} AS generation FROM ext_holds WHERE ${HOLD.projectId} = ? LIMIT 1`,
      args: [owner],
    },
    {
      sql: `SELECT p.${RP.uuid} AS provider, rc.${RC.name} AS rc, ${amount} AS amount,
          COALESCE(i.${INV.minUnit}, 1) AS min_unit, COALESCE(i.${INV.maxUnit}, ${amount}) AS max_unit, COALESCE(i.${INV.stepSize}, 1) AS step_size
        FROM ext_holds h JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid}
        JOIN resource_providers p ON p.${RP.id} = ha.${HOLD_AMOUNT.resourceProviderId}
        JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}
        LEFT JOIN inventories i ON i.${INV.resourceProviderId} = ha.${HOLD_AMOUNT.resourceProviderId} AND i.${INV.resourceClassId} = ha.${HOLD_AMOUNT.resourceClassId}
        WHERE h.${HOLD.projectId} = ?`,
      args: [owner],
    },
    // A draw counts while it is the consumer's as written (same generation), as the holds rule reads it.
    {
      sql: `SELECT c.${CONSUMER.uuid} AS consumer, pr.${PROJECT.externalId} AS project, u.${USER.externalId} AS user_id, ct.${CONSUMER_TYPE.name} AS consumer_type,
          c.${CONSUMER.generation} AS generation, p.${RP.uuid} AS provider, rc.${RC.name} AS rc, a.${ALLOC.used} AS used
        FROM ext_holds h JOIN ext_hold_draws d ON d.${HOLD_DRAW.holdUuid} = h.${HOLD.uuid}
        JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid} AND c.${CONSUMER.generation} = d.${HOLD_DRAW.consumerGeneration}
        JOIN projects pr ON pr.${PROJECT.id} = c.${CONSUMER.projectId}
        JOIN users u ON u.${USER.id} = c.${CONSUMER.userId}
        LEFT JOIN consumer_types ct ON ct.${CONSUMER_TYPE.id} = c.${CONSUMER.consumerTypeId}
        JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
        JOIN resource_providers p ON p.${RP.id} = a.${ALLOC.resourceProviderId}
        JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
        WHERE h.${HOLD.projectId} = ?`,
      args: [owner],
    },
    ...(limitsOn ? limitStatements(site) : []),
  ]);
  const h = hold!.rows[0];
  const consumers = new Map<string, SiteConsumer>();
  for (const r of drawn!.rows) {
    const uuid = String(r.consumer);
    let c = consumers.get(uuid);
    if (!c) {
      c = {
        uuid,
        project: String(r.project),
        user: String(r.user_id),
        consumerType: r.consumer_type === null ? null : String(r.consumer_type),
        generation: Number(r.generation),
        allocations: {},
      };
      consumers.set(uuid, c);
    }
    (c.allocations[String(r.provider)] ??= {})[String(r.rc)] = Number(r.used);
  }
  return {
    holdUuid: h ? String(h.uuid) : null,
    holdGeneration: h ? Number(h.generation) : null,
    slice: amounts!.rows.map((r) => ({
      provider: String(r.provider),
      resourceClass: String(r.rc),
      amount: Number(r.amount),
      minUnit: Number(r.min_unit),
      maxUnit: Number(r.max_unit),
      stepSize: Number(r.step_size),
    })),
    consumers: [...consumers.values()],
    limitSlices: (limitSlices?.rows ?? []).map((r) => ({
      project: String(r.project),
      resourceClass: String(r.rc),
      amount: Number(r.amount),
    })),
    limited: (limited?.rows ?? []).map((r) => ({ project: String(r.project), resourceClass: String(r.rc) })),
  };
}

/** Whether the primary has applied entry `seq` of `site`'s journal. */
export async function replayApplied(reader: BatchReader, site: string, seq: number): Promise<boolean> {
  const [rs] = await reader.readBatch([
    { sql: `SELECT 1 FROM ext_site_replays WHERE ${SITE_REPLAY.site} = ? AND ${SITE_REPLAY.seq} = ?`, args: [site, seq] },
  ]);
  return rs!.rows.length > 0;
}

/** The entries of `site`'s journal from `seq` on that the primary has applied. */
export async function appliedSince(reader: BatchReader, site: string, seq: number): Promise<Set<number>> {
  const [rs] = await reader.readBatch([
    {
      sql: `SELECT ${SITE_REPLAY.seq} AS seq FROM ext_site_replays WHERE ${SITE_REPLAY.site} = ? AND ${SITE_REPLAY.seq} >= ?`,
      args: [site, seq],
    },
  ]);
  return new Set(rs!.rows.map((r) => Number(r.seq)));
}

/** The statement that records entry `seq` applied, in the entry's own write batch (a second one fails the batch: primary key). */
export const replayRecord = (site: string, seq: number, idemKey: string, now: string): WriteStatement =>
  stmt(
    `INSERT INTO ext_site_replays (${SITE_REPLAY.site}, ${SITE_REPLAY.seq}, ${SITE_REPLAY.idemKey}, ${SITE_REPLAY.appliedAt}) VALUES (?, ?, ?, ?)`,
    [site, seq, idemKey, now],
  );
