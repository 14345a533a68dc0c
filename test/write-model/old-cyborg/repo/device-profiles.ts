// Device profiles: rows hold the validated groups as JSON.
import { DomainError } from '../../../../src/errors.js';
import { eq, inArray } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { deviceProfiles } from '../../../../src/db/schema/cyborg.js';
import type { ProfileGroup } from '../../../../src/cyborg/schemas/device-profiles.js';

export type DeviceProfileRow = typeof deviceProfiles.$inferSelect;
export const profileGroups = (row: DeviceProfileRow): ProfileGroup[] => JSON.parse(row.groups) as ProfileGroup[];

export async function createDeviceProfile(
  db: Db,
  input: { uuid: string; name: string; description: string | null; groups: ProfileGroup[] },
  now: string,
): Promise<DeviceProfileRow> {
  const clash = await db.select({ id: deviceProfiles.id }).from(deviceProfiles).where(eq(deviceProfiles.name, input.name)).get();
  if (clash) throw new DomainError('conflict', `Device Profile with name ${input.name} already exists.`);
  const sameUuid = await db.select({ id: deviceProfiles.id }).from(deviceProfiles).where(eq(deviceProfiles.uuid, input.uuid)).get();
  if (sameUuid) throw new DomainError('conflict', `Device Profile with uuid ${input.uuid} already exists.`);
  const [row] = await db
    .insert(deviceProfiles)
    .values({
      uuid: input.uuid,
      name: input.name,
      description: input.description,
      groups: JSON.stringify(input.groups),
      createdAt: now,
    })
    .returning();
  return row!;
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

export async function deleteDeviceProfiles(db: Db, ids: number[]): Promise<void> {
  if (ids.length) await db.delete(deviceProfiles).where(inArray(deviceProfiles.id, ids));
}
