// A database made ready for this build, by either entry: the bundled
// migrations applied and the standard names synced, safe when several
// processes or Worker isolates start at once on a new database. A database
// already prepared is recognised in one read-only round trip (the write
// transaction of the migrations check and the read of every name took
// several, and the transaction queued starting processes behind each other
// and behind any writer holding the database's lock).
import type { Client } from '@libsql/client';
import { RC, TRAIT } from '../db/columns.js';
import { databaseTimeoutIn, isDatabaseTimeout } from '../db/deadline.js';
import { applyMigrations } from '../db/migrate.js';
import { MIGRATIONS } from '../db/migrations.generated.js';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../placement/standard-names.generated.js';
import { syncStandards } from '../placement/sync-standards.js';

export async function prepareDatabase(client: Client): Promise<void> {
  if (await alreadyPrepared(client)) return;
  // The bundled copy of drizzle/ (a test keeps it current): the built
  // dist/server.mjs and the Worker need no migrations folder.
  await applyMigrations(client, MIGRATIONS);
  await syncStandards(client);
}

const LATEST_MIGRATION = Math.max(...MIGRATIONS.map((m) => m.when));

/**
 * Every bundled migration applied, and the standard names all there: the
 * classes by their positional ids, the traits by count (standard names are
 * only ever added upstream, so a database with exactly as many non-custom
 * traits holds exactly these; one with more came from a newer release and
 * takes the full check). False when in doubt: the full check is idempotent.
 */
async function alreadyPrepared(client: Client): Promise<boolean> {
  try {
    const [migration, classes, traits] = await client.batch(
      [
        'SELECT max(created_at) FROM __drizzle_migrations',
        { sql: `SELECT count(*) FROM resource_classes WHERE ${RC.id} < ?`, args: [STANDARD_RESOURCE_CLASSES.length] },
        `SELECT count(*) FROM traits WHERE ${TRAIT.name} NOT LIKE 'CUSTOM\\_%' ESCAPE '\\'`,
      ],
      'read',
    );
    return (
      Number(migration!.rows[0]![0] ?? -1) >= LATEST_MIGRATION &&
      Number(classes!.rows[0]![0]) === STANDARD_RESOURCE_CLASSES.length &&
      Number(traits!.rows[0]![0]) === STANDARD_TRAITS.length
    );
  } catch (err) {
    // A database that does not answer is not a new one: the start stops here, within the read deadline.
    if (isDatabaseTimeout(err)) throw err;
    // No bookkeeping table yet: a new database.
    return false;
  }
}

/** Who hears that the start waits for a database that does not answer. */
export interface SilenceLog {
  warn(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
}

/**
 * Runs `prepare` until the database answers: each attempt ends at the
 * deadlines (db/deadline.ts), and one that got no answer is tried again
 * after `pauseMs`, told once per episode (/readyz names the database
 * meanwhile: it probes it itself). Any other failure (a refused connection, a refused token) is
 * thrown: that start stops with its line.
 */
export async function prepareWhenAnswered(prepare: () => Promise<void>, log: SilenceLog, pauseMs = 1_000): Promise<void> {
  let silentSince: number | undefined;
  for (;;) {
    try {
      await prepare();
      if (silentSince !== undefined) log.info('the database answers again: the start goes on', { silent_ms: Date.now() - silentSince });
      return;
    } catch (err) {
      const silent = databaseTimeoutIn(err);
      if (!silent) throw err;
      if (silentSince === undefined) {
        silentSince = Date.now();
        log.warn(`the database does not answer: the start waits for it; / and /readyz answer, other requests get 503`, {
          database: silent.database,
          err: silent.message,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}
