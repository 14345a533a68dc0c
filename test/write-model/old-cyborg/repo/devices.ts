// Devices, deployables and attach handles as host agents report them. A
// report replaces what the host had, except handles held by an ARQ, which
// stay until unbound.
import { and, eq, inArray, isNotNull } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { attachHandles, deployables, devices } from '../../../../src/db/schema/cyborg.js';
import type { JobMessage } from '../../../../src/jobs/messages.js';
import { addOutbox } from '../jobs/outbox.js';
import { arqsWaitingOn } from '../bind.js';
import type { HostDevicesReport, ProgrammedReport } from '../../../../src/cyborg/schemas/agent.js';
import { deleteAttributesOf } from './attributes.js';

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

/** POST /devices/{uuid}/enable|disable: `maintaining` devices are not handed to new binds. */
export async function setDeviceStatus(
  db: Db,
  uuid: string,
  status: 'enabled' | 'maintaining',
  now: string,
): Promise<DeviceRow | undefined> {
  const [row] = await db.update(devices).set({ status, updatedAt: now }).where(eq(devices.uuid, uuid)).returning();
  return row;
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

async function heldHandleDeployables(db: Db, deployableIds: number[]): Promise<Set<number>> {
  if (!deployableIds.length) return new Set();
  const held = await db
    .select({ id: attachHandles.deployableId })
    .from(attachHandles)
    .where(and(inArray(attachHandles.deployableId, deployableIds), isNotNull(attachHandles.arqId)));
  return new Set(held.map((h) => h.id));
}

/** A bind job for ARQs waiting on a deployable's programming, if any. */
async function wakeWaitingBinds(db: Db, rpUuid: string | null, nowMs: number): Promise<JobMessage | undefined> {
  if (!rpUuid) return undefined;
  const ids = await arqsWaitingOn(db, rpUuid);
  return ids.length ? addOutbox(db, 'bind', { arqIds: ids }, nowMs) : undefined;
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

export async function applyHostReport(
  db: Db,
  hostname: string,
  report: HostDevicesReport,
  newId: () => string,
  now: string,
  nowMs: number,
): Promise<{ devices: DeviceRow[]; jobs: JobMessage[] }> {
  const existing = await listDevices(db, { hostname });
  const keep = new Set<number>();
  const jobs: JobMessage[] = [];
  for (const dev of report.devices) {
    const values = {
      type: dev.type,
      vendor: dev.vendor,
      model: dev.model,
      stdBoardInfo: dev.std_board_info ?? null,
      vendorBoardInfo: dev.vendor_board_info ?? null,
      // A report without a status keeps the one an admin set (enable/disable).
      ...(dev.status ? { status: dev.status } : {}),
    };
    let row = existing.find((d) => d.hostKey === dev.key);
    if (row) {
      [row] = await db
        .update(devices)
        .set({ ...values, updatedAt: now })
        .where(eq(devices.id, row.id))
        .returning();
    } else {
      [row] = await db
        .insert(devices)
        .values({ status: 'enabled', ...values, uuid: newId(), hostname, hostKey: dev.key, createdAt: now })
        .returning();
    }
    keep.add(row!.id);
    const oldDeployables = await db.select().from(deployables).where(eq(deployables.deviceId, row!.id));
    const keepDeployables = new Set<number>();
    for (const dep of dev.deployables) {
      const depValues = {
        numAccelerators: dep.num_accelerators,
        rpUuid: dep.rp_uuid ?? null,
        driverName: dep.driver_name ?? null,
        bitstreamId: dep.bitstream_id ?? null,
        functionId: dep.function_id ?? null,
      };
      let depRow = oldDeployables.find((d) => d.name === dep.name);
      if (depRow) {
        [depRow] = await db
          .update(deployables)
          .set({ ...depValues, updatedAt: now })
          .where(eq(deployables.id, depRow.id))
          .returning();
      } else {
        [depRow] = await db
          .insert(deployables)
          .values({ ...depValues, uuid: newId(), deviceId: row!.id, name: dep.name, createdAt: now })
          .returning();
      }
      keepDeployables.add(depRow!.id);
      const oldHandles = await db.select().from(attachHandles).where(eq(attachHandles.deployableId, depRow!.id));
      const reported = new Set<string>();
      for (const h of dep.attach_handles) {
        const info = canonicalInfo(h.info);
        reported.add(`${h.type}|${info}`);
        if (!oldHandles.some((o) => o.attachType === h.type && o.attachInfo === info)) {
          await db
            .insert(attachHandles)
            .values({ uuid: newId(), deployableId: depRow!.id, attachType: h.type, attachInfo: info, createdAt: now });
        }
      }
      const gone = oldHandles.filter((o) => !reported.has(`${o.attachType}|${o.attachInfo}`) && o.arqId === null).map((o) => o.id);
      if (gone.length) await db.delete(attachHandles).where(inArray(attachHandles.id, gone));
      const job = await wakeWaitingBinds(db, depRow!.rpUuid, nowMs);
      if (job) jobs.push(job);
    }
    const held = await heldHandleDeployables(
      db,
      oldDeployables.map((d) => d.id),
    );
    const dropDeployables = oldDeployables.filter((d) => !keepDeployables.has(d.id) && !held.has(d.id)).map((d) => d.id);
    if (dropDeployables.length) {
      await db.delete(attachHandles).where(inArray(attachHandles.deployableId, dropDeployables));
      await deleteAttributesOf(db, dropDeployables);
      await db.delete(deployables).where(inArray(deployables.id, dropDeployables));
    }
  }
  for (const old of existing.filter((d) => !keep.has(d.id))) {
    const deps = await db.select().from(deployables).where(eq(deployables.deviceId, old.id));
    const held = await heldHandleDeployables(
      db,
      deps.map((d) => d.id),
    );
    if (held.size) continue; // still in use: removed by a later report once unbound
    if (deps.length) {
      await db.delete(attachHandles).where(
        inArray(
          attachHandles.deployableId,
          deps.map((d) => d.id),
        ),
      );
      await deleteAttributesOf(
        db,
        deps.map((d) => d.id),
      );
      await db.delete(deployables).where(eq(deployables.deviceId, old.id));
    }
    await db.delete(devices).where(eq(devices.id, old.id));
  }
  return { devices: await listDevices(db, { hostname }), jobs };
}

export async function recordProgrammed(
  db: Db,
  deployable: DeployableRow,
  report: ProgrammedReport,
  now: string,
  nowMs: number,
): Promise<JobMessage | undefined> {
  await db
    .update(deployables)
    .set({
      bitstreamId: report.bitstream_id ?? null,
      functionId: report.function_id ?? null,
      updatedAt: now,
    })
    .where(eq(deployables.id, deployable.id));
  return wakeWaitingBinds(db, deployable.rpUuid, nowMs);
}
