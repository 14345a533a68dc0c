// Applies drizzle-kit's generated migrations. Runtime-neutral: the caller
// supplies the migration files (Node reads drizzle/ from disk, the Worker
// bundles them), and the bookkeeping table is drizzle's own, so drizzle-kit
// and this runner agree on what has been applied.
import type { Client } from '@libsql/client';

export interface MigrationFile {
  tag: string;
  /** drizzle-kit's journal timestamp, used as the applied-marker. */
  when: number;
  sql: string;
}

const TABLE = '__drizzle_migrations';

export async function applyMigrations(client: Client, migrations: MigrationFile[]): Promise<number> {
  await client.execute(`CREATE TABLE IF NOT EXISTS ${TABLE} (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  // One write transaction reads the journal and applies what is missing, so
  // several processes or Worker isolates starting at once on a new database
  // queue up behind each other instead of racing to create the same tables.
  const tx = await client.transaction('write');
  try {
    const last = await tx.execute(`SELECT created_at FROM ${TABLE} ORDER BY created_at DESC LIMIT 1`);
    const lastApplied = last.rows.length ? Number(last.rows[0]![0]) : -1;
    const pending = migrations.filter((m) => m.when > lastApplied).sort((a, b) => a.when - b.when);
    for (const m of pending) {
      const statements = m.sql
        .split('--> statement-breakpoint')
        .map((s) => s.trim())
        .filter(Boolean);
      await tx.batch([...statements, { sql: `INSERT INTO ${TABLE} (hash, created_at) VALUES (?, ?)`, args: [m.tag, m.when] }]);
    }
    await tx.commit();
    return pending.length;
  } finally {
    tx.close();
  }
}
