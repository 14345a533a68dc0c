// GET /readyz's answer:
//  - ProcessReadiness: what this process knows keeps it from serving well,
//    as named holds (`warming` from a Node start until the database is
//    prepared and the warm-up is done; any other part may add its own).
//    Checked first, without I/O; the first hold's reason is the answer.
//  - then the active checks (the route runs them together: this database
//    check, and Keystone's sign-in where it is used).
//  - checkReadiness: the database, in one read batch (one round trip): it
//    answers, every migration this build bundles is applied, and the
//    standard resource classes and traits are synced. Each failure names its reason.
import type { InStatement, ResultSet } from '@libsql/client';
import type { BatchReader } from '../db/client.js';
import { databaseTimeoutIn } from '../db/deadline.js';
import type { MigrationFile } from '../db/migrate.js';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../placement/standard-names.generated.js';

export type Readiness = { ready: true } | { ready: false; reason: string; silent?: true };

/**
 * /readyz answers within a second, whatever its checks wait on: a load
 * balancer's probe must come back to take an instance whose database (or
 * Keystone) does not answer out of rotation.
 */
export const READINESS_WITHIN_MS = 500;

/** `check`'s verdict, or `late()`'s once `ms` have passed without one. */
export async function verdictWithin(check: Promise<Readiness>, ms: number, late: () => Readiness): Promise<Readiness> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expiry = new Promise<Readiness>((resolve) => {
    timer = setTimeout(() => resolve(late()), ms);
  });
  try {
    return await Promise.race([check, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the database's deadlines know of it (db/deadline.ts), for the reason of a check that got no answer. */
export interface DatabaseAnswers {
  database: string;
  answeredAt: number | undefined;
}

/** The reason /readyz gives when the database check got no answer within `ms`: which database, and when it last answered. */
export function databaseSilent(answers: DatabaseAnswers | undefined, ms: number, now = Date.now()): Readiness {
  const database = answers?.database ?? 'PLACEMENT_DB_URL';
  const last = answers?.answeredAt;
  const since =
    last === undefined ? 'it has not answered since this process started' : `it last answered ${((now - last) / 1000).toFixed(1)} s ago`;
  return { ready: false, reason: `the database does not answer: ${database} gave no answer within ${ms} ms; ${since}`, silent: true };
}

/** The reason /readyz gives while a Node process starts (until its database is prepared and its warm-up is done). */
export const WARMING = 'warming';

/**
 * A process's own holds on readiness, by name: `hold(name, reason)` sets or
 * replaces one, `release(name)` lifts it. Ready when none is held; the
 * reason given is the earliest hold's. A new one holds nothing (a test app,
 * a Worker isolate): the entry that starts a process adds `warming`.
 */
export class ProcessReadiness {
  readonly #holds = new Map<string, string>();

  hold(name: string, reason: string): void {
    this.#holds.set(name, reason);
  }

  release(name: string): void {
    this.#holds.delete(name);
  }

  now(): Readiness {
    for (const reason of this.#holds.values()) return { ready: false, reason };
    return { ready: true };
  }
}

const CLASSES_JSON = JSON.stringify(STANDARD_RESOURCE_CLASSES);
const TRAITS_JSON = JSON.stringify(STANDARD_TRAITS);
const PRESENT = (table: string) => `SELECT count(*) AS n FROM ${table} WHERE name IN (SELECT value FROM json_each(?))`;

/** The error's message, with its cause where it has one ("fetch failed" alone says nothing of why). */
const messageOf = (err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !message.includes(cause) ? `${message} (${cause})` : message;
};

/** A part's own check, read in the same batch (so readiness stays one round trip): its statement and its judgement of the result. */
export interface ReadinessRead {
  statement: InStatement;
  judge(result: ResultSet): Readiness;
}

export async function checkReadiness(
  reader: BatchReader,
  migrations: readonly MigrationFile[],
  also: readonly ReadinessRead[] = [],
  answers?: DatabaseAnswers,
): Promise<Readiness> {
  const needed = Math.max(...migrations.map((m) => m.when));
  let applied: number | null;
  let classes: number;
  let traits: number;
  let others: ResultSet[];
  try {
    const [journal, classRows, traitRows, ...rest] = await reader.readBatch([
      'SELECT MAX(created_at) AS applied FROM __drizzle_migrations',
      { sql: PRESENT('resource_classes'), args: [CLASSES_JSON] },
      { sql: PRESENT('traits'), args: [TRAITS_JSON] },
      ...also.map((a) => a.statement),
    ]);
    others = rest;
    const last = journal!.rows[0]?.applied;
    applied = last === null || last === undefined ? null : Number(last);
    classes = Number(classRows!.rows[0]!.n);
    traits = Number(traitRows!.rows[0]!.n);
  } catch (err) {
    const silent = databaseTimeoutIn(err);
    if (silent) return databaseSilent(answers, silent.timeoutMs);
    const message = messageOf(err);
    // A table of the schema is missing: the statement naming it failed the batch.
    if (/no such table/i.test(message))
      return { ready: false, reason: `the database schema is not there (${message}): migrations were not applied` };
    return { ready: false, reason: `the database does not answer: ${message}` };
  }
  const pending = migrations.filter((m) => applied === null || m.when > applied).length;
  if (applied === null || applied < needed) {
    return { ready: false, reason: `${pending} database migration(s) of this build are not applied` };
  }
  if (classes < STANDARD_RESOURCE_CLASSES.length || traits < STANDARD_TRAITS.length) {
    return {
      ready: false,
      reason: `the standard names are not synced: ${classes} of ${STANDARD_RESOURCE_CLASSES.length} resource classes, ${traits} of ${STANDARD_TRAITS.length} traits`,
    };
  }
  for (const [i, read] of also.entries()) {
    const judged = read.judge(others[i]!);
    if (!judged.ready) return judged;
  }
  return { ready: true };
}
