// Provider creation (POST /resource_providers) in the write model of
// db/write-batch.ts: the uuid, the name and the parent in one read batch,
// the insert in one write batch. The uuid and name are UNIQUE, so a
// concurrent creator makes the insert fail (a lost race, decided again on a
// fresh read, which then answers the duplicate); a child is inserted from
// its parent's row, so a parent deleted meanwhile inserts nothing (a lost race too).
import type { DataStore } from '../../db/client.js';
import { commitGuarded, stmt, withRaceRetries } from '../../db/write-batch.js';
import { DuplicateProvider, InvalidNewProvider } from '../write-errors.js';
import type { NewProvider, ProviderView } from './providers.js';

export async function createProviderBatched(store: DataStore, input: NewProvider, now: string): Promise<ProviderView> {
  return withRaceRetries(async () => {
    const [byUuid, byName, parents] = await store.readBatch([
      { sql: 'SELECT id FROM resource_providers WHERE uuid = ?', args: [input.uuid] },
      { sql: 'SELECT id FROM resource_providers WHERE name = ?', args: [input.name] },
      { sql: 'SELECT id FROM resource_providers WHERE uuid = ?', args: [input.parentUuid ?? ''] },
    ]);
    if (byUuid!.rows.length > 0) throw new DuplicateProvider('uuid', input.uuid);
    if (byName!.rows.length > 0) throw new DuplicateProvider('name', input.name);
    let parentId: number | null = null;
    if (input.parentUuid !== null) {
      if (input.parentUuid === input.uuid) {
        throw new InvalidNewProvider('parent provider UUID cannot be same as UUID. Please choose a different parent provider UUID.');
      }
      const parent = parents!.rows[0];
      if (!parent) throw new InvalidNewProvider('The specified parent provider UUID does not exist: parent provider UUID does not exist.');
      parentId = Number(parent.id);
    }
    const insert =
      parentId === null
        ? [
            stmt(
              `INSERT INTO resource_providers (uuid, name, generation, parent_provider_id, root_provider_id, created_at, updated_at)
          VALUES (?, ?, 0, NULL, NULL, ?, ?)`,
              [input.uuid, input.name, now, now],
              { racing: true },
            ),
            stmt('UPDATE resource_providers SET root_provider_id = id WHERE uuid = ?', [input.uuid]),
          ]
        : [
            // The root is the parent's as of the write, whatever moved since the read.
            stmt(
              `INSERT INTO resource_providers (uuid, name, generation, parent_provider_id, root_provider_id, created_at, updated_at)
          SELECT ?, ?, 0, p.id, COALESCE(p.root_provider_id, p.id), ?, ? FROM resource_providers p WHERE p.id = ?`,
              [input.uuid, input.name, now, now, parentId],
              { racing: true, mustChange: true },
            ),
          ];
    const results = await commitGuarded(store, [
      ...insert,
      stmt(
        `SELECT p.id, COALESCE(r.uuid, p.uuid) AS root_uuid FROM resource_providers p
        LEFT JOIN resource_providers r ON r.id = p.root_provider_id WHERE p.uuid = ?`,
        [input.uuid],
      ),
    ]);
    const created = results.at(-1)!.rows[0]!;
    return {
      id: Number(created.id),
      uuid: input.uuid,
      name: input.name,
      generation: 0,
      parentProviderUuid: input.parentUuid,
      rootProviderUuid: String(created.root_uuid),
      createdAt: now,
      updatedAt: now,
    };
  });
}
