// POST /ext/preemptions: evicting the chosen victims and nominating what they
// free to the preemptor, in ONE write batch conditioned on what was read:
//   - every victim still at the generation read (nobody rewrote it since),
//   - the preemptor's providers still at the generations read (no claim since),
//   - the victims not yet victims of another preemption (primary key: a
//     second preemption over one of them loses; no consumer is evicted twice);
// and in it: the preemption and its victims, each victim's lease ending at
// now + grace (ext/leases: the sweep releases what its owner has not by
// then), and a hold of the preemptor's allocations for its project from now
// (ext/holds: a nomination, so no third claim takes the freed capacity; the
// preemptor claims with ext_hold once the victims are gone).
import type { ResultSet } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { CONSUMER, PREEMPTION, PREEMPTION_VICTIM, RC, RP } from '../../db/columns.js';
import { commitGuarded, guard, LostRace, stmt, WriteContention, type WriteStatement, withRaceRetries } from '../../db/write-batch.js';
import { conflict, invalid, notFound } from '../../errors.js';
import { capacityOf } from '../../placement/capacity.js';
import { holdInsertStatements } from '../holds/repo.js';
import { keyOf } from '../holds/model.js';
import { leaseExpiryMs, leaseStatement } from '../allocation-ends.js';
import { EFFECTIVE_PRIORITIES_SQL } from './priorities.js';
import type { PostPreemptionBody } from './schemas.js';

export const PREEMPTION_CONFLICT = 'placement.ext.preemption_conflict';

/** How long a nomination outlives the victims' grace: the preemptor's time to claim once they are gone. */
export const NOMINATION_SECONDS = 600;

type Resources = Record<string, { resources: Record<string, number> }>;

export interface PreemptionView {
  id: string;
  preemptor: { consumer_uuid: string; project_id: string; priority: number };
  hold_uuid: string;
  grace_seconds: number;
  victims_leased_until: string;
  nomination_until: string;
  victims: { consumer_uuid: string; consumer_generation: number; priority: number; frees: Resources }[];
  created_at: string;
}

interface VictimRead {
  uuid: string;
  exists: boolean;
  priority: number | null;
  generation: number;
  alreadyVictim: boolean;
  frees: Resources;
}

interface PairRead {
  providerUuid: string;
  className: string;
  capacity: number;
  used: number;
  /** Held by victims of earlier preemptions: going, their capacity already nominated. */
  going: number;
  /** Held by holds not yet over (earlier nominations among them). */
  held: number;
  generation: number;
}

/**
 * What holds not yet over hold on the pair of provider p and class rc (an
 * earlier nomination among them): its amount counts beside the allocations
 * that stay, conservatively (a claim drawn from it counts twice).
 */
const HELD_SQL = `(SELECT COALESCE(SUM(x.amount), 0) FROM ext_hold_amounts x JOIN ext_holds h ON h.uuid = x.hold_uuid
  WHERE h.end_ms > ? AND x.resource_provider_id = p.${RP.id} AND x.resource_class_id = rc.${RC.id})`;

const rowsOf = (r: ResultSet | undefined) => r?.rows ?? [];

async function readFor(store: DataStore, body: PostPreemptionBody, nowMs: number): Promise<{ victims: VictimRead[]; pairs: PairRead[] }> {
  const victims = body.victims;
  const pairs = Object.entries(body.preemptor.allocations).flatMap(([rp, { resources }]) => Object.keys(resources).map((cls) => [rp, cls]));
  const [consumers, effective, taken, allocations, capacities] = await store.readBatch([
    {
      sql: `SELECT c.${CONSUMER.uuid} AS uuid, c.${CONSUMER.generation} AS generation FROM consumers c WHERE c.${CONSUMER.uuid} IN (SELECT value FROM json_each(?))`,
      args: [JSON.stringify(victims)],
    },
    { sql: `${EFFECTIVE_PRIORITIES_SQL} AND c.${CONSUMER.uuid} IN (SELECT value FROM json_each(?))`, args: [JSON.stringify(victims)] },
    {
      sql: `SELECT ${PREEMPTION_VICTIM.consumerUuid} AS uuid FROM ext_preemption_victims WHERE ${PREEMPTION_VICTIM.consumerUuid} IN (SELECT value FROM json_each(?))`,
      args: [JSON.stringify(victims)],
    },
    {
      sql: `SELECT a.consumer_id AS consumer, p.${RP.uuid} AS rp, rc.${RC.name} AS cls, a.used AS used FROM allocations a
        JOIN resource_providers p ON p.${RP.id} = a.resource_provider_id JOIN resource_classes rc ON rc.${RC.id} = a.resource_class_id
        WHERE a.consumer_id IN (SELECT value FROM json_each(?)) ORDER BY a.id`,
      args: [JSON.stringify(victims)],
    },
    {
      sql: `SELECT p.${RP.uuid} AS rp, rc.${RC.name} AS cls, p.${RP.generation} AS generation, i.total, i.reserved, i.allocation_ratio AS ratio,
          (SELECT COALESCE(SUM(a.used), 0) FROM allocations a WHERE a.resource_provider_id = p.${RP.id} AND a.resource_class_id = rc.${RC.id}) AS used,
          (SELECT COALESCE(SUM(a.used), 0) FROM allocations a JOIN ext_preemption_victims v ON v.${PREEMPTION_VICTIM.consumerUuid} = a.consumer_id
            WHERE a.resource_provider_id = p.${RP.id} AND a.resource_class_id = rc.${RC.id}) AS going,
          ${HELD_SQL} AS held
        FROM json_each(?) w JOIN resource_providers p ON p.${RP.uuid} = json_extract(w.value, '$[0]')
        JOIN resource_classes rc ON rc.${RC.name} = json_extract(w.value, '$[1]')
        JOIN inventories i ON i.resource_provider_id = p.${RP.id} AND i.resource_class_id = rc.${RC.id}`,
      args: [nowMs, JSON.stringify(pairs)],
    },
  ]);
  const generations = new Map(rowsOf(consumers).map((r) => [String(r.uuid), Number(r.generation)]));
  const priorities = new Map(rowsOf(effective).map((r) => [String(r.uuid), Number(r.priority)]));
  const takenSet = new Set(rowsOf(taken).map((r) => String(r.uuid)));
  const frees = new Map<string, Resources>();
  for (const r of rowsOf(allocations)) {
    const of = frees.get(String(r.consumer)) ?? {};
    frees.set(String(r.consumer), of);
    const res = (of[String(r.rp)] ??= { resources: {} }).resources;
    res[String(r.cls)] = (res[String(r.cls)] ?? 0) + Number(r.used);
  }
  return {
    victims: victims.map((uuid) => ({
      uuid,
      exists: generations.has(uuid),
      priority: priorities.get(uuid) ?? null,
      generation: generations.get(uuid) ?? 0,
      alreadyVictim: takenSet.has(uuid),
      frees: frees.get(uuid) ?? {},
    })),
    pairs: rowsOf(capacities).map((r) => ({
      providerUuid: String(r.rp),
      className: String(r.cls),
      capacity: capacityOf({
        total: Number(r.total),
        reserved: Number(r.reserved),
        allocationRatio: Number(r.ratio),
        minUnit: 1,
        maxUnit: Number(r.total),
        stepSize: 1,
      }),
      used: Number(r.used),
      going: Number(r.going),
      held: Number(r.held),
      generation: Number(r.generation),
    })),
  };
}

/** Refuses (4xx, nothing written) what cannot be a preemption; returns the providers' generations read. */
function decide(body: PostPreemptionBody, priority: number, read: { victims: VictimRead[]; pairs: PairRead[] }): Map<string, number> {
  for (const v of read.victims) {
    if (!v.exists) throw notFound(`No consumer '${v.uuid}'`);
    if (v.priority === null) throw invalid(`Consumer '${v.uuid}' has no priority: it is not preemptible`);
    if (v.priority >= priority) throw invalid(`Consumer '${v.uuid}' has priority ${v.priority}, not below the preemptor's ${priority}`);
    if (v.alreadyVictim) throw conflict(`Consumer '${v.uuid}' is already a victim of another preemption`, PREEMPTION_CONFLICT);
  }
  const pairOf = new Map(read.pairs.map((p) => [keyOf(p.providerUuid, p.className), p]));
  const generations = new Map<string, number>();
  for (const [rp, { resources }] of Object.entries(body.preemptor.allocations)) {
    for (const [cls, amount] of Object.entries(resources)) {
      const pair = pairOf.get(keyOf(rp, cls));
      if (!pair) throw invalid(`Provider '${rp}' has no inventory of ${cls}`);
      generations.set(rp, pair.generation);
      let freed = 0;
      for (const v of read.victims) freed += v.frees[rp]?.resources[cls] ?? 0;
      const free = pair.capacity - (pair.used - pair.going - freed + pair.held);
      if (amount > free)
        throw invalid(`The preemptor does not fit even with its victims gone: ${cls} on ${rp} needs ${amount}, ${free} would be free`);
    }
  }
  // A victim that frees nothing the preemptor uses would be evicted for nothing.
  for (const v of read.victims) {
    const useful = Object.entries(v.frees).some(([rp, { resources }]) =>
      Object.keys(resources).some((cls) => body.preemptor.allocations[rp]?.resources[cls] !== undefined),
    );
    if (!useful) throw invalid(`Consumer '${v.uuid}' frees nothing the preemptor asks for`);
  }
  return generations;
}

export interface PreemptionDeps {
  store: DataStore;
  nowMs: () => number;
  newId: () => string;
  /** The statements that report an event in the preemption's batch (none where no event log is installed). */
  reported: (kind: string, body: Record<string, unknown>, nowMs: number) => WriteStatement[];
}

export async function createPreemption(deps: PreemptionDeps, body: PostPreemptionBody, priority: number): Promise<PreemptionView> {
  if (new Set(body.victims).size !== body.victims.length) throw invalid('A victim is named twice');
  if (body.victims.includes(body.preemptor.consumer_uuid)) throw invalid('The preemptor cannot be its own victim');
  const id = deps.newId();
  const holdUuid = deps.newId();
  try {
    await withRaceRetries(async () => {
      const nowMs = deps.nowMs();
      const read = await readFor(deps.store, body, nowMs);
      const generations = decide(body, priority, read);
      const now = new Date(nowMs).toISOString();
      const leasedUntil = leaseExpiryMs(body.grace_seconds, nowMs);
      const amounts = new Map<string, number>();
      for (const [rp, { resources }] of Object.entries(body.preemptor.allocations))
        for (const [cls, amount] of Object.entries(resources)) amounts.set(keyOf(rp, cls), amount);
      const statements: WriteStatement[] = [
        ...read.victims.map((v) =>
          guard(`(SELECT ${CONSUMER.generation} FROM consumers WHERE ${CONSUMER.uuid} = ?) = ?`, [v.uuid, v.generation]),
        ),
        ...[...generations].map(([rp, generation]) =>
          guard(`(SELECT ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?) = ?`, [rp, generation]),
        ),
        // No hold written on these pairs since the read (a nomination of a concurrent preemption).
        ...read.pairs.map((pair) =>
          guard(
            `(SELECT COALESCE(SUM(x.amount), 0) FROM ext_hold_amounts x JOIN ext_holds h ON h.uuid = x.hold_uuid
              JOIN resource_providers p ON p.${RP.id} = x.resource_provider_id JOIN resource_classes rc ON rc.${RC.id} = x.resource_class_id
              WHERE h.end_ms > ? AND p.${RP.uuid} = ? AND rc.${RC.name} = ?) = ?`,
            [nowMs, pair.providerUuid, pair.className, pair.held],
          ),
        ),
        stmt(
          `INSERT INTO ext_preemptions (${PREEMPTION.id}, ${PREEMPTION.preemptorConsumerUuid}, ${PREEMPTION.preemptorProject}, ${PREEMPTION.priority},
            ${PREEMPTION.holdId}, ${PREEMPTION.graceSeconds}, ${PREEMPTION.createdAt}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
          [id, body.preemptor.consumer_uuid, body.preemptor.project_id, priority, holdUuid, body.grace_seconds, now],
        ),
        ...read.victims.map((v) =>
          stmt(
            `INSERT INTO ext_preemption_victims (${PREEMPTION_VICTIM.consumerUuid}, ${PREEMPTION_VICTIM.preemptionId}, ${PREEMPTION_VICTIM.consumerGeneration},
              ${PREEMPTION_VICTIM.priority}, ${PREEMPTION_VICTIM.resources}) VALUES (?, ?, ?, ?, ?)`,
            [v.uuid, id, v.generation, v.priority!, JSON.stringify(v.frees)],
            { racing: true },
          ),
        ),
        ...read.victims.map((v) => leaseStatement(v.uuid, body.grace_seconds, nowMs, leasedUntil)),
        ...holdInsertStatements(
          {
            uuid: holdUuid,
            projectId: body.preemptor.project_id,
            startMs: nowMs,
            endMs: leasedUntil + NOMINATION_SECONDS * 1000,
            endAction: 'keep',
            ignoreAllocations: false,
            amounts,
          },
          now,
        ),
        // Reported to the operator's reaper (GET /ext/events) only if all of the above commits.
        ...deps.reported(
          'preemption.created',
          {
            preemption_id: id,
            preemptor: { consumer_uuid: body.preemptor.consumer_uuid, project_id: body.preemptor.project_id, priority },
            hold_uuid: holdUuid,
            grace_seconds: body.grace_seconds,
            victims_leased_until: new Date(leasedUntil).toISOString(),
            nomination_until: new Date(leasedUntil + NOMINATION_SECONDS * 1000).toISOString(),
            victims: read.victims.map((v) => ({ consumer_uuid: v.uuid, priority: v.priority, frees: v.frees })),
          },
          nowMs,
        ),
      ];
      await commitGuarded(deps.store, statements);
    });
  } catch (err) {
    if (err instanceof LostRace || err instanceof WriteContention) throw conflict('The victims changed meanwhile', PREEMPTION_CONFLICT);
    throw err;
  }
  const view = await findPreemption(deps.store, id);
  if (!view) throw conflict(`Preemption ${id} was removed meanwhile`, PREEMPTION_CONFLICT);
  return view;
}

export async function findPreemption(store: DataStore, id: string): Promise<PreemptionView | null> {
  const [preemptions, victims, holds] = await store.readBatch([
    { sql: `SELECT * FROM ext_preemptions WHERE ${PREEMPTION.id} = ?`, args: [id] },
    {
      sql: `SELECT * FROM ext_preemption_victims WHERE ${PREEMPTION_VICTIM.preemptionId} = ? ORDER BY ${PREEMPTION_VICTIM.consumerUuid}`,
      args: [id],
    },
    {
      sql: `SELECT h.end_ms AS end_ms FROM ext_holds h JOIN ext_preemptions p ON p.${PREEMPTION.holdId} = h.uuid WHERE p.${PREEMPTION.id} = ?`,
      args: [id],
    },
  ]);
  const row = preemptions!.rows[0];
  if (!row) return null;
  const grace = Number(row[PREEMPTION.graceSeconds]);
  const createdAt = String(row[PREEMPTION.createdAt]);
  const leasedUntil = leaseExpiryMs(grace, Date.parse(createdAt));
  const holdEnd = holds!.rows[0] ? Number(holds!.rows[0].end_ms) : leasedUntil + NOMINATION_SECONDS * 1000;
  return {
    id,
    preemptor: {
      consumer_uuid: String(row[PREEMPTION.preemptorConsumerUuid]),
      project_id: String(row[PREEMPTION.preemptorProject]),
      priority: Number(row[PREEMPTION.priority]),
    },
    hold_uuid: String(row[PREEMPTION.holdId]),
    grace_seconds: grace,
    victims_leased_until: new Date(leasedUntil).toISOString(),
    nomination_until: new Date(holdEnd).toISOString(),
    victims: victims!.rows.map((v) => ({
      consumer_uuid: String(v[PREEMPTION_VICTIM.consumerUuid]),
      consumer_generation: Number(v[PREEMPTION_VICTIM.consumerGeneration]),
      priority: Number(v[PREEMPTION_VICTIM.priority]),
      frees: JSON.parse(String(v[PREEMPTION_VICTIM.resources])) as Resources,
    })),
    created_at: createdAt,
  };
}
