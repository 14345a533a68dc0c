// Syncs the standard resource classes and traits into the database: the
// analogue of `placement-manage os-traits sync`, run at every start.
// Idempotent: existing rows are left alone, missing ones are inserted.
// At most two round trips (a network hop each in Worker mode): one read of
// the names there, and only when some are missing, one write batch inserting
// those. Isolates starting together may both insert: ON CONFLICT makes the
// later one a no-op.
import type { Client } from '@libsql/client';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from './standard-names.generated.js';
import { RC, TRAIT } from '../db/columns.js';

export async function syncStandards(client: Client): Promise<{ resourceClasses: number; traits: number }> {
  const [classRows, traitRows] = await client.batch(
    [`SELECT ${RC.name} FROM resource_classes`, `SELECT ${TRAIT.name} FROM traits`],
    'read',
  );
  const presentClasses = new Set(classRows!.rows.map((r) => String(r.name)));
  const presentTraits = new Set(traitRows!.rows.map((r) => String(r.name)));
  // Standard classes keep their positional ids.
  const classes = STANDARD_RESOURCE_CLASSES.map((name, id) => ({ name, id })).filter((rc) => !presentClasses.has(rc.name));
  const traits = STANDARD_TRAITS.filter((name) => !presentTraits.has(name));
  if (classes.length === 0 && traits.length === 0) return { resourceClasses: 0, traits: 0 };
  const statements = [
    ...classes.map(({ id, name }) => ({
      sql: `INSERT INTO resource_classes (${RC.id}, ${RC.name}) VALUES (?, ?) ON CONFLICT DO NOTHING`,
      args: [id, name],
    })),
    ...traits.map((name) => ({
      sql: `INSERT INTO traits (${TRAIT.name}) VALUES (?) ON CONFLICT (${TRAIT.name}) DO NOTHING`,
      args: [name],
    })),
  ];
  const results = await client.batch(statements, 'write');
  const added = (from: number, to: number) => results.slice(from, to).reduce((sum, rs) => sum + rs.rowsAffected, 0);
  return { resourceClasses: added(0, classes.length), traits: added(classes.length, results.length) };
}
