// Device profiles: rows hold the validated groups as JSON.
import { DomainError } from '../../errors.js';
import { eq, inArray } from 'drizzle-orm';
import type { DataStore, Db } from '../../db/client.js';
import { commitGuarded, placeholders, stmt } from '../../db/write-batch.js';
import { deviceProfiles } from '../../db/schema/cyborg.js';
import type { ProfileGroup } from '../schemas/device-profiles.js';
import { rowOf } from '../../db/rows.js';
import { cyborgWrite } from './write.js';
import { DEVICE_PROFILE } from '../../db/columns.js';

export type DeviceProfileRow = typeof deviceProfiles.$inferSelect;
export const profileGroups = (row: DeviceProfileRow): ProfileGroup[] => JSON.parse(row.groups) as ProfileGroup[];

/** One read batch (name and uuid taken?), one write batch. */
export async function createDeviceProfile(
  store: DataStore,
  input: { uuid: string; name: string; description: string | null; groups: ProfileGroup[] },
  now: string,
): Promise<DeviceProfileRow> {
  return cyborgWrite(async () => {
    const [byName, byUuid] = await store.readBatch([
      { sql: `SELECT ${DEVICE_PROFILE.id} FROM device_profiles WHERE ${DEVICE_PROFILE.name} = ?`, args: [input.name] },
      { sql: `SELECT ${DEVICE_PROFILE.id} FROM device_profiles WHERE ${DEVICE_PROFILE.uuid} = ?`, args: [input.uuid] },
    ]);
    if (byName!.rows.length) throw new DomainError('conflict', `Device Profile with name ${input.name} already exists.`);
    if (byUuid!.rows.length) throw new DomainError('conflict', `Device Profile with uuid ${input.uuid} already exists.`);
    // Inserted only if the name and uuid are still free: a concurrent creator makes it a lost race.
    const [inserted] = await commitGuarded(store, [
      stmt(
        `INSERT INTO device_profiles (${DEVICE_PROFILE.uuid}, ${DEVICE_PROFILE.name}, ${DEVICE_PROFILE.description}, ${DEVICE_PROFILE.groups}, ${DEVICE_PROFILE.createdAt}) SELECT ?, ?, ?, ?, ?
          WHERE NOT EXISTS (SELECT 1 FROM device_profiles WHERE ${DEVICE_PROFILE.name} = ? OR ${DEVICE_PROFILE.uuid} = ?) RETURNING *`,
        [input.uuid, input.name, input.description, JSON.stringify(input.groups), now, input.name, input.uuid],
        { mustChange: true },
      ),
    ]);
    return rowOf(deviceProfiles, inserted!.rows[0]!);
  });
}

export async function listDeviceProfiles(db: Db, names?: string[]): Promise<DeviceProfileRow[]> {
  const q = db.select().from(deviceProfiles);
  return (names ? q.where(inArray(deviceProfiles.name, names)) : q).orderBy(deviceProfiles.id);
}

export async function findDeviceProfile(db: Db, by: { uuid?: string; name?: string }): Promise<DeviceProfileRow | undefined> {
  if (by.uuid) return db.select().from(deviceProfiles).where(eq(deviceProfiles.uuid, by.uuid)).get();
  if (by.name) return db.select().from(deviceProfiles).where(eq(deviceProfiles.name, by.name)).get();
  return undefined;
}

/**
 * Deletes the profiles found by `by` (each key a name, or a uuid when `by` is
 * 'uuid'), all or none: returns the keys not found, and deletes nothing then.
 */
export async function deleteDeviceProfiles(store: DataStore, by: 'name' | 'uuid', keys: string[]): Promise<string[]> {
  return cyborgWrite(async () => {
    const [found] = await store.readBatch([
      {
        sql: `SELECT ${DEVICE_PROFILE.id}, ${DEVICE_PROFILE.name}, ${DEVICE_PROFILE.uuid} FROM device_profiles WHERE ${by} IN (${placeholders(keys.length)})`,
        args: keys,
      },
    ]);
    const rows = found!.rows.map((r) => ({ id: Number(r.id), key: String(r[by]) }));
    const missing = keys.filter((k) => !rows.some((r) => r.key === k));
    if (missing.length) return missing;
    // Each delete must find its row: one deleted meanwhile is decided again (then not found).
    await commitGuarded(
      store,
      rows.map((r) => stmt(`DELETE FROM device_profiles WHERE ${DEVICE_PROFILE.id} = ?`, [r.id], { mustChange: true })),
    );
    return [];
  });
}
