// What availability reads (docs/holds.md), in ONE read batch (one snapshot):
// the provider trees with their inventories (the candidates engine's warm tree
// model, moved on by the same refresh statement a request's batch carries; a
// cloud over the cache's cap, or a cache switched off, read whole into a model
// of this request's own), every class, trait and aggregate name, the
// allocations summed by (provider, class, end, hold drawn from), the holds not
// over (their amounts, and the bound of what they hold, as the holds'
// declaration counts them), and the statements of the read hooks the caller passes (their state as
// of now: device taints, shared counters' bounds). No HTTP here.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { AGG, ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, INV, RC, TRAIT } from '../../db/columns.js';
import { capacitySql, type SetAsideConstraint } from '../../placement/capacity.js';
import { CloudModel, type Lookups } from '../../placement/candidates/cloud-model.js';
import type { CandidateOptions, CandidateReadHook } from '../../placement/candidates/index.js';
import { type Columns, columns, packedArray, type PackedRow } from '../../db/rows.js';
import { type Calendar, calendarOf, pairKey } from './calendar.js';
import { type Allocation, drawnEndMs, FOREVER, type Hold } from './model.js';
import { coverJoins, DRAWN_HOLD_SQL, HELD, heldOf, heldSql, LEASE_END_SQL } from './repo.js';

const ALLOCATED = columns(['rp', 'cls', 'used', 'ends', 'hold']);

const packed = (cols: Columns<string>, from: string, args: InValue[] = []): InStatement => ({
  sql: `SELECT ${packedArray(cols)} FROM (${from})`,
  args,
});

/**
 * Per held (provider id, class id) pair, how much the holds' declaration `d`
 * bounds it above the inventory's capacity (placement's own: what the model
 * offers); only pairs where it differs.
 */
const slackSql = (d: SetAsideConstraint) => `SELECT rp, cls, slack FROM (
    SELECT ha.rp AS rp, ha.cls AS cls, ${d.keys.bound(['ha.rp', 'ha.cls'])} - ${capacitySql('inv')} AS slack
    FROM (SELECT DISTINCT ${HOLD_AMOUNT.resourceProviderId} AS rp, ${HOLD_AMOUNT.resourceClassId} AS cls FROM ext_hold_amounts) ha
    JOIN inventories inv ON inv.${INV.resourceProviderId} = ha.rp AND inv.${INV.resourceClassId} = ha.cls)
  WHERE slack <> 0`;

function statements(d: SetAsideConstraint, model: CloudModel, nowMs: number): InStatement[] {
  return [
    model.refreshStatement(),
    // A lease or a draw counts while it covers the consumer as it is (a rewrite since makes the claim lasting and undrawn), as repo.ts reads them.
    packed(
      ALLOCATED,
      `SELECT rp, cls, SUM(used) AS used, ends, hold FROM (
        SELECT a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, a.${ALLOC.used} AS used,
          ${LEASE_END_SQL} AS ends, ${DRAWN_HOLD_SQL} AS hold
        FROM allocations a JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId}
        ${coverJoins(`a.${ALLOC.consumerId}`)})
      GROUP BY rp, cls, ends, hold`,
    ),
    packed(HELD, heldSql(`WHERE h.${HOLD.endMs} > ?`, d.setAside.amount('ha')), [nowMs]),
    { sql: `SELECT ${RC.id} AS id, ${RC.name} AS name FROM resource_classes`, args: [] },
    { sql: `SELECT ${TRAIT.id} AS id, ${TRAIT.name} AS name FROM traits`, args: [] },
    { sql: `SELECT ${AGG.id} AS id, ${AGG.uuid} AS uuid FROM placement_aggregates`, args: [] },
    { sql: slackSql(d), args: [] },
  ];
}

/** The cloud over time: the engine's model and names, and the calendar of its usage (pairs keyed by ids). */
export interface CloudCalendar {
  model: CloudModel;
  lookups: Lookups;
  calendar: Calendar;
  /** What each hook passed read in the same snapshot. */
  hookResults: Map<CandidateReadHook, ResultSet | undefined>;
}

const rowsOf = (result: ResultSet | undefined): PackedRow[] => JSON.parse(String(result?.rows[0]?.[0] ?? '[]')) as PackedRow[];

/** The holds read, their amounts keyed by (provider id, class id). */
const holdsOf = (result: ResultSet | undefined): Hold[] =>
  heldOf(rowsOf(result)).map(({ id, project, startMs, endMs, endAction, amounts }) => ({
    id,
    project,
    startMs,
    endMs,
    endAction,
    amounts: new Map(amounts.map((a) => [pairKey(a.providerId, a.classId), a.amount])),
  }));

/**
 * Reads the cloud over time as of `nowMs`, what holds hold and bound as the holds' declaration `d`
 * counts them, and the statements of `hooks` (given the request's class names), in one batch.
 */
export async function readCloudCalendar(
  reader: BatchReader,
  d: SetAsideConstraint,
  nowMs: number,
  hooks: readonly CandidateReadHook[],
  classNames: readonly string[],
  options: CandidateOptions,
): Promise<CloudCalendar> {
  const cached = options.treeCacheProviders > 0 ? (options.trees?.modelFor(reader, options.treeCacheProviders) ?? null) : null;
  let model = cached?.usable(options.now) ? cached : wholeCloudModel();
  for (;;) {
    const own = statements(d, model, nowMs);
    const results = await reader.readBatch([...own, ...hooks.map((hook) => hook.statement(classNames))]);
    const [refresh, allocated, held, classes, traits, aggregates, slack] = results;
    const changed = model.apply(String(refresh!.rows[0]![0]), options.now);
    if (changed === 'oversize') {
      model = wholeCloudModel();
      continue;
    }
    if (changed === 'reload') continue;
    const holds = holdsOf(held);
    const hookResults = new Map<CandidateReadHook, ResultSet | undefined>();
    hooks.forEach((hook, i) => {
      hookResults.set(hook, results[own.length + i]);
    });
    const rootIdByProviderUuid = new Map<string, number>();
    for (const root of model.roots()) for (const p of model.tree(root)) rootIdByProviderUuid.set(p.uuid, root);
    return {
      model,
      lookups: {
        classIdByName: new Map(classes!.rows.map((r) => [String(r.name), Number(r.id)])),
        traitIdByName: new Map(traits!.rows.map((r) => [String(r.name), Number(r.id)])),
        aggregateIdByUuid: new Map(aggregates!.rows.map((r) => [String(r.uuid), Number(r.id)])),
        rootIdByProviderUuid,
      },
      calendar: calendarOf(
        allocationsOf(allocated, holds),
        holds,
        nowMs,
        new Map(slack!.rows.map((r) => [pairKey(Number(r.rp), Number(r.cls)), Number(r.slack)])),
      ),
      hookResults,
    };
  }
}

/** A model of this request's own, read whole (the cache is off, or the cloud is over its cap). */
const wholeCloudModel = () => new CloudModel(Number.MAX_SAFE_INTEGER);

/** The allocations read, each ending at its lease's expiry, or at its hold's end where that releases it. */
function allocationsOf(result: ResultSet | undefined, holds: readonly Hold[]): Allocation[] {
  const byId = new Map(holds.map((h) => [h.id, h]));
  const a = ALLOCATED.at;
  return rowsOf(result).map((r) => {
    const holdId = r[a.hold] === null ? null : String(r[a.hold]);
    const leased = r[a.ends] === null ? FOREVER : Number(r[a.ends]);
    const from = holdId === null ? undefined : byId.get(holdId);
    return {
      consumer: '',
      project: '',
      key: pairKey(Number(r[a.rp]), Number(r[a.cls])),
      amount: Number(r[a.used]),
      endsAtMs: from ? drawnEndMs(from, leased) : leased,
      holdId,
    };
  });
}
