// Syncs the standard resource classes and traits into the database: the
// analogue of `placement-manage os-traits sync`, run at every start.
// Idempotent: existing rows are left alone, missing ones are inserted.
import type { Client } from '@libsql/client';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../../../src/placement/standard-names.generated.js';

export async function syncStandards(client: Client): Promise<{ resourceClasses: number; traits: number }> {
  const before = await client.execute('SELECT (SELECT count(*) FROM resource_classes), (SELECT count(*) FROM traits)');
  const statements = [
    ...STANDARD_RESOURCE_CLASSES.map((name, id) => ({
      sql: 'INSERT INTO resource_classes (id, name) VALUES (?, ?) ON CONFLICT DO NOTHING',
      args: [id, name],
    })),
    ...STANDARD_TRAITS.map((name) => ({
      sql: 'INSERT INTO traits (name) VALUES (?) ON CONFLICT (name) DO NOTHING',
      args: [name],
    })),
  ];
  await client.batch(statements, 'write');
  const after = await client.execute('SELECT (SELECT count(*) FROM resource_classes), (SELECT count(*) FROM traits)');
  const count = (rs: typeof before, i: number) => Number(rs.rows[0]![i]);
  return { resourceClasses: count(after, 0) - count(before, 0), traits: count(after, 1) - count(before, 1) };
}
