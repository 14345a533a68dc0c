// The asynchronous half of bind, run by the bind job: allocate a free attach
// handle of the deployable behind the device RP (or wait for the agent to
// report the requested bitstream), mark the ARQ Bound or BindFailed, write the
// Nova events (one outbox row per instance) and mark the job's outbox row
// done, all in one write batch decided on one read batch. ARQs no longer
// BindStarted are skipped, so a re-delivered job changes nothing. Every
// handle is taken by a compare-and-swap (still free) and every ARQ moves only
// from BindStarted, so two jobs racing for the last free handles cannot both
// win: the loser is decided again on what the winner left.
import type { DataStore } from '../db/client.js';
import type { Deps } from '../deps.js';
import { rowOf } from '../db/rows.js';
import { acceleratorRequests, attachHandles, deployables } from '../db/schema/cyborg.js';
import { commitGuarded, placeholders, stmt, type WriteStatement } from '../db/write-batch.js';
import type { JobMessage, NovaEventPayload } from '../jobs/messages.js';
import { finishOutboxStatement, newOutboxRow, type NewOutboxRow } from '../jobs/outbox.js';
import { ArqState, RESOLVED_EVENT_STATUS } from './arq-state.js';
import type { ArqRow } from './repo/arqs.js';
import { cyborgWrite } from './repo/write.js';
import { readGroup, type ProfileGroup } from './schemas/device-profiles.js';
import { ARQ, ATTACH_HANDLE, DEPLOYABLE, DEVICE } from '../db/columns.js';

type Resolved = { arq: ArqRow; state: 'Bound' | 'BindFailed' };

/** The outbox rows of the Nova events for the resolved ARQs: one per instance. */
export function novaEventRows(resolved: Resolved[], nowMs: number): NewOutboxRow[] {
  const byInstance = new Map<string, NovaEventPayload['events']>();
  for (const { arq, state } of resolved) {
    if (!arq.instanceUuid) continue;
    const events = byInstance.get(arq.instanceUuid) ?? [];
    events.push({ arqUuid: arq.uuid, status: RESOLVED_EVENT_STATUS[state]! });
    byInstance.set(arq.instanceUuid, events);
  }
  return [...byInstance].map(([instanceUuid, events]) => newOutboxRow('nova-event', { instanceUuid, events }, nowMs));
}

/** Commits `statements` plus the outbox rows; returns the rows' queue messages. */
async function commitWithOutbox(store: DataStore, statements: WriteStatement[], rows: NewOutboxRow[], after: WriteStatement[] = []) {
  const results = await commitGuarded(store, [...statements, ...rows.map((r) => r.statement), ...after]);
  return rows.map((row, i) => row.message(results[statements.length + i]!));
}

const stillBindStarted = "state = 'BindStarted'";

/** What a bind needs of the app: its store, and the metrics it counts outcomes into. */
export type BindDeps = Pick<Deps, 'store' | 'metrics'>;

/** Counts the outcomes a committed batch decided, each with its time since the bind started. */
function observeBinds(metrics: BindDeps['metrics'], resolved: Resolved[], nowMs: number): void {
  for (const { arq, state } of resolved) {
    const started = arq.bindStartedAt ? Date.parse(arq.bindStartedAt) : Number.NaN;
    if (Number.isFinite(started)) metrics.bindDuration.observe([state], Math.max(0, nowMs - started) / 1000);
  }
}

/**
 * Binds the given ARQs that are still BindStarted and marks the outbox row
 * `outboxId` done in the same batch; returns the Nova event messages to send
 * after commit.
 */
export async function runBindJob(deps: BindDeps, arqIds: number[], outboxId: number, now: string, nowMs: number): Promise<JobMessage[]> {
  const { store } = deps;
  const ids = { sql: placeholders(arqIds.length), args: arqIds };
  const rpsOfJob = `SELECT ${ARQ.deviceRpUuid} FROM accelerator_requests WHERE ${ARQ.id} IN (${ids.sql}) AND ${stillBindStarted}`;
  let committed: Resolved[] = [];
  const messages = await cyborgWrite(async () => {
    const [arqRows, deployableRows, freeRows] = await store.readBatch([
      {
        sql: `SELECT * FROM accelerator_requests WHERE ${ARQ.id} IN (${ids.sql}) AND ${stillBindStarted} ORDER BY ${ARQ.id}`,
        args: ids.args,
      },
      {
        sql: `SELECT d.*, v.${DEVICE.status} AS device_status FROM deployables d JOIN devices v ON v.${DEVICE.id} = d.${DEPLOYABLE.deviceId}
          WHERE d.${DEPLOYABLE.rpUuid} IN (${rpsOfJob}) ORDER BY d.${DEPLOYABLE.id}`,
        args: ids.args,
      },
      {
        sql: `SELECT * FROM attach_handles WHERE ${ATTACH_HANDLE.arqId} IS NULL
          AND ${ATTACH_HANDLE.deployableId} IN (SELECT ${DEPLOYABLE.id} FROM deployables WHERE ${DEPLOYABLE.rpUuid} IN (${rpsOfJob})) ORDER BY ${ATTACH_HANDLE.id}`,
        args: ids.args,
      },
    ]);
    const found = deployableRows!.rows.map((r) => ({ deployable: rowOf(deployables, r), deviceStatus: String(r.device_status) }));
    const free = freeRows!.rows.map((r) => rowOf(attachHandles, r));
    const taken = new Set<number>();
    const statements: WriteStatement[] = [];
    const resolved: Resolved[] = [];
    for (const arq of arqRows!.rows.map((r) => rowOf(acceleratorRequests, r))) {
      const want = readGroup(JSON.parse(arq.deviceProfileGroup) as ProfileGroup);
      const fail = () => {
        statements.push(
          stmt(
            `UPDATE accelerator_requests SET ${ARQ.state} = ?, ${ARQ.updatedAt} = ? WHERE ${ARQ.id} = ? AND ${stillBindStarted}`,
            [ArqState.BIND_FAILED, now, arq.id],
            {
              mustChange: true,
            },
          ),
        );
        resolved.push({ arq, state: 'BindFailed' });
      };
      if ((want.bitstreamId && want.functionId) || !arq.deviceRpUuid) {
        fail();
        continue;
      }
      const target = found.find((f) => f.deployable.rpUuid === arq.deviceRpUuid);
      // A device an admin disabled (maintaining) is not handed out.
      if (!target || target.deviceStatus !== 'enabled') {
        fail();
        continue;
      }
      const { deployable } = target;
      const needsProgram =
        (want.bitstreamId && deployable.bitstreamId !== want.bitstreamId) || (want.functionId && deployable.functionId !== want.functionId);
      if (needsProgram) continue; // waiting: the programmed report runs the bind again
      const handle = free.find((h) => h.deployableId === deployable.id && !taken.has(h.id));
      if (!handle) {
        fail();
        continue;
      }
      taken.add(handle.id);
      statements.push(
        // Compare-and-swap on the handle (the unique index on arq_id backs it up) and on the ARQ's state.
        stmt(
          `UPDATE attach_handles SET ${ATTACH_HANDLE.arqId} = ?, ${ATTACH_HANDLE.updatedAt} = ? WHERE ${ATTACH_HANDLE.id} = ? AND ${ATTACH_HANDLE.arqId} IS NULL`,
          [arq.id, now, handle.id],
          {
            mustChange: true,
            racing: true,
          },
        ),
        stmt(
          `UPDATE accelerator_requests SET ${ARQ.state} = ?, ${ARQ.deployableId} = ?, ${ARQ.attachHandleId} = ?, ${ARQ.updatedAt} = ? WHERE ${ARQ.id} = ? AND ${stillBindStarted}`,
          [ArqState.BOUND, deployable.id, handle.id, now, arq.id],
          { mustChange: true },
        ),
      );
      resolved.push({ arq, state: 'Bound' });
    }
    const sent = await commitWithOutbox(store, statements, novaEventRows(resolved, nowMs), [
      finishOutboxStatement(outboxId, nowMs, 'done'),
    ]);
    committed = resolved;
    return sent;
  });
  observeBinds(deps.metrics, committed, nowMs);
  return messages;
}

/**
 * Binding timeout: BindStarted since before `cutoff` becomes BindFailed, with
 * a failed event. One read batch, which is all it costs when nothing is stuck,
 * and one write batch.
 */
export async function failStuckBinds(deps: BindDeps, cutoff: string, now: string, nowMs: number): Promise<JobMessage[]> {
  const { store } = deps;
  let committed: Resolved[] = [];
  const messages = await cyborgWrite(async () => {
    const [stuckRows] = await store.readBatch([
      {
        sql: `SELECT * FROM accelerator_requests WHERE ${stillBindStarted} AND ${ARQ.bindStartedAt} <= ? ORDER BY ${ARQ.id}`,
        args: [cutoff],
      },
    ]);
    const stuck = stuckRows!.rows.map((r) => rowOf(acceleratorRequests, r));
    if (!stuck.length) return [];
    const statements = stuck.flatMap((arq) => [
      stmt(`UPDATE attach_handles SET ${ATTACH_HANDLE.arqId} = NULL, ${ATTACH_HANDLE.updatedAt} = ? WHERE ${ATTACH_HANDLE.arqId} = ?`, [
        now,
        arq.id,
      ]),
      stmt(
        `UPDATE accelerator_requests SET ${ARQ.state} = ?, ${ARQ.attachHandleId} = NULL, ${ARQ.updatedAt} = ? WHERE ${ARQ.id} = ? AND ${stillBindStarted}`,
        [ArqState.BIND_FAILED, now, arq.id],
        { mustChange: true },
      ),
    ]);
    const resolved = stuck.map((arq): Resolved => ({ arq, state: 'BindFailed' }));
    const sent = await commitWithOutbox(store, statements, novaEventRows(resolved, nowMs));
    committed = resolved;
    return sent;
  });
  observeBinds(deps.metrics, committed, nowMs);
  return messages;
}
