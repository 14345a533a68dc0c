// Devices, deployables and attach handles as host agents report them. A
// report replaces what the host had, except handles held by an ARQ, which
// stay until unbound.
import type { InValue } from '@libsql/client';
import { and, eq, inArray } from 'drizzle-orm';
import type { DataStore, Db } from '../../db/client.js';
import { rowOf } from '../../db/rows.js';
import { attachHandles, deployables, devices } from '../../db/schema/cyborg.js';
import { commitGuarded, guard, inList, placeholders, stmt, type WriteStatement } from '../../db/write-batch.js';
import type { JobMessage } from '../../jobs/messages.js';
import { newOutboxRow, type NewOutboxRow } from '../../jobs/outbox.js';
import type { HostDevicesReport, ProgrammedReport } from '../schemas/agent.js';
import { cyborgWrite } from './write.js';
import { ARQ, ATTACH_HANDLE, ATTRIBUTE, DEPLOYABLE, DEVICE } from '../../db/columns.js';

export type DeviceRow = typeof devices.$inferSelect;
export type DeployableRow = typeof deployables.$inferSelect;

const canonicalInfo = (info: Record<string, string>) =>
  JSON.stringify(Object.fromEntries(Object.entries(info).sort(([a], [b]) => a.localeCompare(b))));

export async function listDevices(db: Db, filter: { hostname?: string; type?: string } = {}): Promise<DeviceRow[]> {
  const conds = [];
  if (filter.hostname) conds.push(eq(devices.hostname, filter.hostname));
  if (filter.type) conds.push(eq(devices.type, filter.type));
  return db
    .select()
    .from(devices)
    .where(conds.length ? and(...conds) : undefined)
    .orderBy(devices.id);
}

export async function findDevice(db: Db, uuid: string): Promise<DeviceRow | undefined> {
  return db.select().from(devices).where(eq(devices.uuid, uuid)).get();
}

/** POST /devices/{uuid}/enable|disable: `maintaining` devices are not handed to new binds. One write batch. */
export async function setDeviceStatus(
  store: DataStore,
  uuid: string,
  status: 'enabled' | 'maintaining',
  now: string,
): Promise<DeviceRow | undefined> {
  const [updated] = await commitGuarded(store, [
    stmt(`UPDATE devices SET ${DEVICE.status} = ?, ${DEVICE.updatedAt} = ? WHERE ${DEVICE.uuid} = ? RETURNING *`, [status, now, uuid]),
  ]);
  const row = updated!.rows[0];
  return row ? rowOf(devices, row) : undefined;
}

export async function listDeployables(db: Db): Promise<{ deployable: DeployableRow; deviceUuid: string }[]> {
  const rows = await db
    .select({ deployable: deployables, deviceUuid: devices.uuid })
    .from(deployables)
    .innerJoin(devices, eq(devices.id, deployables.deviceId))
    .orderBy(deployables.id);
  return rows;
}

export async function findDeployable(db: Db, uuid: string): Promise<{ deployable: DeployableRow; deviceUuid: string } | undefined> {
  return db
    .select({ deployable: deployables, deviceUuid: devices.uuid })
    .from(deployables)
    .innerJoin(devices, eq(devices.id, deployables.deviceId))
    .where(eq(deployables.uuid, uuid))
    .get();
}

/** What a host last reported, in the report's own shape (handles held by ARQs included). */
export async function currentHostReport(db: Db, hostname: string): Promise<HostDevicesReport> {
  const hostDevices = await listDevices(db, { hostname });
  if (!hostDevices.length) return { devices: [] };
  const deps = await db
    .select()
    .from(deployables)
    .where(
      inArray(
        deployables.deviceId,
        hostDevices.map((d) => d.id),
      ),
    )
    .orderBy(deployables.id);
  const handles = deps.length
    ? await db
        .select()
        .from(attachHandles)
        .where(
          inArray(
            attachHandles.deployableId,
            deps.map((d) => d.id),
          ),
        )
        .orderBy(attachHandles.id)
    : [];
  return {
    devices: hostDevices.map((dev) => ({
      key: dev.hostKey,
      type: dev.type,
      vendor: dev.vendor,
      model: dev.model,
      std_board_info: dev.stdBoardInfo,
      vendor_board_info: dev.vendorBoardInfo,
      status: dev.status === 'maintaining' ? 'maintaining' : 'enabled',
      deployables: deps
        .filter((d) => d.deviceId === dev.id)
        .map((d) => ({
          name: d.name,
          num_accelerators: d.numAccelerators,
          rp_uuid: d.rpUuid,
          driver_name: d.driverName,
          bitstream_id: d.bitstreamId,
          function_id: d.functionId,
          attach_handles: handles
            .filter((h) => h.deployableId === d.id)
            .map((h) => ({
              type: h.attachType as 'PCI' | 'MDEV' | 'TEST_PCI',
              info: JSON.parse(h.attachInfo) as Record<string, string>,
            })),
        })),
    })),
  };
}

/** How a statement names a row: by its id, or by its uuid when this batch inserts it. */
interface Ref {
  sql: string;
  args: InValue[];
}
const byId = (id: number): Ref => ({ sql: '?', args: [id] });
const byUuid = (table: 'devices' | 'deployables', uuid: string): Ref => ({ sql: `(SELECT id FROM ${table} WHERE uuid = ?)`, args: [uuid] });
const refList = (refs: Ref[]): Ref => ({ sql: refs.map((r) => r.sql).join(', '), args: refs.flatMap((r) => r.args) });

interface DeployableModel {
  ref: Ref;
  name: string;
  rpUuid: string | null;
}
interface HandleModel {
  uuid: string;
  attachType: string;
  attachInfo: string;
  arqId: number | null;
}

/**
 * The ids of the ARQs waiting (BindStarted) on the given device RPs, as one
 * string: read before the decision and compared again in the write batch, so
 * a bind that starts waiting meanwhile is not missed by the wake-up.
 */
function waitingSql(rpUuids: Ref): Ref {
  return {
    sql: `(SELECT coalesce(group_concat(id, ','), '') FROM (SELECT ${ARQ.id} FROM accelerator_requests
      WHERE ${ARQ.state} = 'BindStarted' AND ${ARQ.deviceRpUuid} IN (${rpUuids.sql}) ORDER BY ${ARQ.id}))`,
    args: rpUuids.args,
  };
}

const inValues = (values: string[]): Ref => ({ sql: inList(values), args: values });

/**
 * Everything a host report is decided on, as one string: the host's devices,
 * deployables, attach handles with their holders, and the ARQs waiting on the
 * reported RPs. The write batch runs the same query and goes ahead only if it
 * still gives what the read gave (another report or bind got in otherwise).
 */
function hostStateSql(hostname: string, rpUuids: string[]): Ref {
  const waiting = waitingSql(inValues(rpUuids));
  return {
    sql: `(SELECT coalesce(group_concat(x, ' '), '') FROM (
        SELECT 'v' || ${DEVICE.id} AS x, 0 AS k, ${DEVICE.id} AS o FROM devices WHERE ${DEVICE.hostname} = ?
        UNION ALL SELECT 'd' || d.${DEPLOYABLE.id} || '@' || d.${DEPLOYABLE.deviceId}, 1, d.${DEPLOYABLE.id} FROM deployables d
          JOIN devices v ON v.${DEVICE.id} = d.${DEPLOYABLE.deviceId} WHERE v.${DEVICE.hostname} = ?
        UNION ALL SELECT 'h' || h.${ATTACH_HANDLE.id} || '@' || h.${ATTACH_HANDLE.deployableId} || ':' || coalesce(h.${ATTACH_HANDLE.arqId}, '-'), 2, h.${ATTACH_HANDLE.id} FROM attach_handles h
          JOIN deployables d ON d.${DEPLOYABLE.id} = h.${ATTACH_HANDLE.deployableId} JOIN devices v ON v.${DEVICE.id} = d.${DEPLOYABLE.deviceId} WHERE v.${DEVICE.hostname} = ?
        ORDER BY k, o)) || '|' || ${waiting.sql}`,
    args: [hostname, hostname, hostname, ...waiting.args],
  };
}

/**
 * PUT /hosts/{hostname}/devices: the host's devices become those reported
 * (handles held by an ARQ stay until unbound). One read batch (the host's
 * devices, deployables, handles and the ARQs waiting on its RPs), the whole
 * change decided here in the order the interactive transaction used to make it
 * (so ids and uuids come out the same), then one write batch guarded by the
 * host's state as read. Two round trips whatever the size of the report.
 */
export async function applyHostReport(
  store: DataStore,
  hostname: string,
  report: HostDevicesReport,
  newId: () => string,
  now: string,
  nowMs: number,
): Promise<{ devices: DeviceRow[]; jobs: JobMessage[] }> {
  const rpUuids = [...new Set(report.devices.flatMap((d) => d.deployables.map((dep) => dep.rp_uuid ?? null)))].filter(
    (rp): rp is string => rp !== null,
  );
  const state = hostStateSql(hostname, rpUuids);
  return cyborgWrite(async () => {
    const [read, deviceRows, deployableRows, handleRows, waitingRows] = await store.readBatch([
      { sql: `SELECT ${state.sql} AS state`, args: state.args },
      { sql: `SELECT * FROM devices WHERE ${DEVICE.hostname} = ? ORDER BY ${DEVICE.id}`, args: [hostname] },
      {
        sql: `SELECT d.* FROM deployables d JOIN devices v ON v.${DEVICE.id} = d.${DEPLOYABLE.deviceId} WHERE v.${DEVICE.hostname} = ? ORDER BY d.${DEPLOYABLE.id}`,
        args: [hostname],
      },
      {
        sql: `SELECT h.* FROM attach_handles h JOIN deployables d ON d.${DEPLOYABLE.id} = h.${ATTACH_HANDLE.deployableId}
          JOIN devices v ON v.${DEVICE.id} = d.${DEPLOYABLE.deviceId} WHERE v.${DEVICE.hostname} = ? ORDER BY h.${ATTACH_HANDLE.id}`,
        args: [hostname],
      },
      {
        sql: `SELECT ${ARQ.id}, ${ARQ.deviceRpUuid} FROM accelerator_requests
          WHERE ${ARQ.state} = 'BindStarted' AND ${ARQ.deviceRpUuid} IN (${inList(rpUuids)}) ORDER BY ${ARQ.id}`,
        args: rpUuids,
      },
    ]);
    const existing = deviceRows!.rows.map((r) => rowOf(devices, r));
    // The host as the old transaction would see it at each step: deployables per device, handles per deployable.
    const deployablesOf = new Map<number, DeployableModel[]>(existing.map((d) => [d.id, []]));
    const handlesOf = new Map<string, HandleModel[]>();
    const keyOf = (ref: Ref) => `${ref.sql}:${ref.args.join(',')}`;
    for (const row of deployableRows!.rows) {
      const dep = rowOf(deployables, row);
      deployablesOf.get(dep.deviceId)?.push({ ref: byId(dep.id), name: dep.name, rpUuid: dep.rpUuid });
      handlesOf.set(keyOf(byId(dep.id)), []);
    }
    for (const row of handleRows!.rows) {
      const h = rowOf(attachHandles, row);
      handlesOf
        .get(keyOf(byId(h.deployableId)))
        ?.push({ uuid: h.uuid, attachType: h.attachType, attachInfo: h.attachInfo, arqId: h.arqId });
    }
    const waiting = waitingRows!.rows.map((r) => ({ id: Number(r.id), rpUuid: String(r.device_rp_uuid) }));
    const isHeld = (dep: DeployableModel) => (handlesOf.get(keyOf(dep.ref)) ?? []).some((h) => h.arqId !== null);

    const statements: WriteStatement[] = [guard(`${state.sql} = ?`, [...state.args, String(read!.rows[0]!.state)])];
    const outboxAt: { index: number; row: NewOutboxRow }[] = [];
    const dropDeployables = (refs: Ref[]) => {
      const list = refList(refs);
      statements.push(
        stmt(`DELETE FROM attach_handles WHERE ${ATTACH_HANDLE.deployableId} IN (${list.sql})`, list.args),
        stmt(`DELETE FROM attributes WHERE ${ATTRIBUTE.deployableId} IN (${list.sql})`, list.args),
      );
    };
    const keep = new Set<number>();
    for (const dev of report.devices) {
      const values: InValue[] = [dev.type, dev.vendor, dev.model, dev.std_board_info ?? null, dev.vendor_board_info ?? null];
      const row = existing.find((d) => d.hostKey === dev.key);
      let deviceRef: Ref;
      if (row) {
        // A report without a status keeps the one an admin set (enable/disable).
        statements.push(
          stmt(
            `UPDATE devices SET ${DEVICE.type} = ?, ${DEVICE.vendor} = ?, ${DEVICE.model} = ?, ${DEVICE.stdBoardInfo} = ?, ${DEVICE.vendorBoardInfo} = ?${dev.status ? ', status = ?' : ''},
              ${DEVICE.updatedAt} = ? WHERE ${DEVICE.id} = ?`,
            [...values, ...(dev.status ? [dev.status] : []), now, row.id],
          ),
        );
        deviceRef = byId(row.id);
        keep.add(row.id);
      } else {
        const uuid = newId();
        statements.push(
          stmt(
            `INSERT INTO devices (${DEVICE.type}, ${DEVICE.vendor}, ${DEVICE.model}, ${DEVICE.stdBoardInfo}, ${DEVICE.vendorBoardInfo}, ${DEVICE.status}, ${DEVICE.uuid}, ${DEVICE.hostname}, ${DEVICE.hostKey}, ${DEVICE.createdAt})
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [...values, dev.status ?? 'enabled', uuid, hostname, dev.key, now],
          ),
        );
        deviceRef = byUuid('devices', uuid);
      }
      const oldDeployables = row ? [...(deployablesOf.get(row.id) ?? [])] : [];
      const keepDeployables = new Set<DeployableModel>();
      for (const dep of dev.deployables) {
        const depValues: InValue[] = [
          dep.num_accelerators,
          dep.rp_uuid ?? null,
          dep.driver_name ?? null,
          dep.bitstream_id ?? null,
          dep.function_id ?? null,
        ];
        let model = oldDeployables.find((d) => d.name === dep.name);
        if (model) {
          const ref = model.ref;
          statements.push(
            stmt(
              `UPDATE deployables SET ${DEPLOYABLE.numAccelerators} = ?, ${DEPLOYABLE.rpUuid} = ?, ${DEPLOYABLE.driverName} = ?, ${DEPLOYABLE.bitstreamId} = ?, ${DEPLOYABLE.functionId} = ?, ${DEPLOYABLE.updatedAt} = ?
                WHERE ${DEPLOYABLE.id} = ${ref.sql}`,
              [...depValues, now, ...ref.args],
            ),
          );
          model.rpUuid = dep.rp_uuid ?? null;
        } else {
          const uuid = newId();
          statements.push(
            stmt(
              `INSERT INTO deployables (${DEPLOYABLE.numAccelerators}, ${DEPLOYABLE.rpUuid}, ${DEPLOYABLE.driverName}, ${DEPLOYABLE.bitstreamId}, ${DEPLOYABLE.functionId}, ${DEPLOYABLE.uuid}, ${DEPLOYABLE.deviceId}, ${DEPLOYABLE.name}, ${DEPLOYABLE.createdAt})
                VALUES (?, ?, ?, ?, ?, ?, ${deviceRef.sql}, ?, ?)`,
              [...depValues, uuid, ...deviceRef.args, dep.name, now],
            ),
          );
          model = { ref: byUuid('deployables', uuid), name: dep.name, rpUuid: dep.rp_uuid ?? null };
          if (row) deployablesOf.get(row.id)!.push(model);
          handlesOf.set(keyOf(model.ref), []);
        }
        keepDeployables.add(model);
        const handles = handlesOf.get(keyOf(model.ref))!;
        const oldHandles = [...handles];
        const reported = new Set<string>();
        for (const h of dep.attach_handles) {
          const info = canonicalInfo(h.info);
          reported.add(`${h.type}|${info}`);
          if (!oldHandles.some((o) => o.attachType === h.type && o.attachInfo === info)) {
            const uuid = newId();
            statements.push(
              stmt(
                `INSERT INTO attach_handles (${ATTACH_HANDLE.uuid}, ${ATTACH_HANDLE.deployableId}, ${ATTACH_HANDLE.attachType}, ${ATTACH_HANDLE.attachInfo}, ${ATTACH_HANDLE.createdAt}) VALUES (?, ${model.ref.sql}, ?, ?, ?)`,
                [uuid, ...model.ref.args, h.type, info, now],
              ),
            );
            handles.push({ uuid, attachType: h.type, attachInfo: info, arqId: null });
          }
        }
        const gone = oldHandles.filter((o) => !reported.has(`${o.attachType}|${o.attachInfo}`) && o.arqId === null);
        if (gone.length) {
          statements.push(
            stmt(
              `DELETE FROM attach_handles WHERE ${ATTACH_HANDLE.uuid} IN (${placeholders(gone.length)})`,
              gone.map((h) => h.uuid),
            ),
          );
          handlesOf.set(
            keyOf(model.ref),
            handles.filter((h) => !gone.includes(h)),
          );
        }
        // Binds waiting on this deployable's programming get another try.
        const ids = model.rpUuid === null ? [] : waiting.filter((a) => a.rpUuid === model.rpUuid).map((a) => a.id);
        if (ids.length) {
          const wake = newOutboxRow('bind', { arqIds: ids }, nowMs);
          outboxAt.push({ index: statements.length, row: wake });
          statements.push(wake.statement);
        }
      }
      const drop = oldDeployables.filter((d) => !keepDeployables.has(d) && !isHeld(d));
      if (drop.length) {
        dropDeployables(drop.map((d) => d.ref));
        const list = refList(drop.map((d) => d.ref));
        statements.push(stmt(`DELETE FROM deployables WHERE ${DEPLOYABLE.id} IN (${list.sql})`, list.args));
        deployablesOf.set(
          row!.id,
          oldDeployables.filter((d) => !drop.includes(d)),
        );
      }
    }
    for (const old of existing.filter((d) => !keep.has(d.id))) {
      const deps = deployablesOf.get(old.id) ?? [];
      if (deps.some(isHeld)) continue; // still in use: removed by a later report once unbound
      if (deps.length) {
        dropDeployables(deps.map((d) => d.ref));
        statements.push(stmt(`DELETE FROM deployables WHERE ${DEPLOYABLE.deviceId} = ?`, [old.id]));
      }
      statements.push(stmt(`DELETE FROM devices WHERE ${DEVICE.id} = ?`, [old.id]));
    }
    statements.push(stmt(`SELECT * FROM devices WHERE ${DEVICE.hostname} = ? ORDER BY ${DEVICE.id}`, [hostname]));
    const results = await commitGuarded(store, statements);
    return {
      devices: results.at(-1)!.rows.map((r) => rowOf(devices, r)),
      jobs: outboxAt.map(({ index, row }) => row.message(results[index]!)),
    };
  });
}

/**
 * PUT /deployables/{uuid}/programmed: records what the FPGA now carries and
 * wakes the binds waiting on it, in one read batch and one write batch.
 * Undefined when there is no such deployable.
 */
export async function recordProgrammed(
  store: DataStore,
  uuid: string,
  report: ProgrammedReport,
  now: string,
  nowMs: number,
): Promise<{ deployable: DeployableRow; deviceUuid: string; job?: JobMessage } | undefined> {
  const findSql = `SELECT d.*, v.${DEVICE.uuid} AS device_uuid FROM deployables d JOIN devices v ON v.${DEVICE.id} = d.${DEPLOYABLE.deviceId} WHERE d.${DEPLOYABLE.uuid} = ?`;
  const waiting = waitingSql({ sql: `SELECT ${DEPLOYABLE.rpUuid} FROM deployables WHERE ${DEPLOYABLE.uuid} = ?`, args: [uuid] });
  return cyborgWrite(async () => {
    const [found, waitingRead] = await store.readBatch([
      { sql: findSql, args: [uuid] },
      { sql: `SELECT ${waiting.sql} AS ids`, args: waiting.args },
    ]);
    const row = found!.rows[0];
    if (!row) return undefined;
    const deployable = rowOf(deployables, row);
    const waitingIds = String(waitingRead!.rows[0]!.ids);
    const statements = [
      guard(`${waiting.sql} = ?`, [...waiting.args, waitingIds]),
      stmt(
        `UPDATE deployables SET ${DEPLOYABLE.bitstreamId} = ?, ${DEPLOYABLE.functionId} = ?, ${DEPLOYABLE.updatedAt} = ? WHERE ${DEPLOYABLE.id} = ?`,
        [report.bitstream_id ?? null, report.function_id ?? null, now, deployable.id],
        { mustChange: true },
      ),
    ];
    const wake = waitingIds ? newOutboxRow('bind', { arqIds: waitingIds.split(',').map(Number) }, nowMs) : undefined;
    if (wake) statements.push(wake.statement);
    statements.push(stmt(findSql, [uuid]));
    const results = await commitGuarded(store, statements);
    const after = results.at(-1)!.rows[0]!;
    return {
      deployable: rowOf(deployables, after),
      deviceUuid: String(after.device_uuid),
      job: wake ? wake.message(results[2]!) : undefined,
    };
  });
}
