// Project limits (extension, docs/limits.md): one per app, in Deps (both runtimes;
// no module state). It reads the limits from their source (Keystone's unified
// limits, or PLACEMENT_LIMITS_JSON) and writes them to the database
// (ext_limits), where every instance's claims read them inside their write
// transaction (guard.ts). The periodic refresh runs once per service, with the
// other sweeps (the Node primary's timer, the Worker's cron); Keystone down,
// the limits last read stay in force, and /readyz says so once two refresh
// intervals have passed without a read.
import { stateKey } from '../../extension.js';
import type { InStatement, ResultSet } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { LIMIT_COUNTING } from '../../db/columns.js';
import { str } from '../../db/rows.js';
import type { Logger } from '../../deps.js';
import { SettingProblem } from '../../shared/setting-problem.js';
import { LimitsAccessRefused, LimitsMisconfigured, LimitsUnavailable } from './keystone.js';
import {
  atOrOverBound,
  type ProjectConstraint,
  type ProjectKeyReport,
  projectBoundsOf,
  projectBoundsStatement,
  projectCrossing,
  projectKey,
  projectReport,
  projectUsageOf,
  projectUsageStatement,
} from '../../placement/capacity.js';
import { PROJECT_LIMITS } from './declaration.js';
import { sameLimits, staticLimits, type LimitSet } from './model.js';
import type { KeystoneCredentialSettings, LimitsSettings } from './settings.js';
import {
  type Counting,
  countingRows,
  LimitsSql,
  READ_COUNTING,
  READ_SYNC,
  syncOf,
  touchSyncStatement,
  writeLimitsStatements,
} from './sql.js';

/** Where the limits come from. */
export interface LimitsSource {
  describe(): string;
  read(): Promise<LimitSet>;
  /** Never fails to read (PLACEMENT_LIMITS_JSON): the limits cannot go stale. */
  alwaysFresh?: boolean;
}

export type LimitsReadiness = { ready: true } | { ready: false; reason: string };

/** Where the limits in force were read from, and when (ISO 8601). */
export interface LimitsProvenance {
  source: string;
  readAt: string;
}

/** One limited class of a project: its limit, the usage that counts, what is left (negative when over). */
export interface ClassLimit {
  limit: number;
  usage: number;
  remaining: number;
}

export interface ProjectLimitsReport {
  project_id: string;
  limits: Record<string, ClassLimit>;
}

/** A request that would cross a project's limit of a class. */
export interface LimitCrossing {
  project: string;
  resourceClass: string;
  limit: number;
  usage: number;
  requested: number;
}

/** What a candidates request asks, per group (class -> amount). */
export const requestedTotals = (request: { groups: readonly { resources: ReadonlyMap<string, number> }[] }) =>
  request.groups.map((g) => g.resources);

/** How a crossing reads, in the candidates' and the diagnosis' words. */
export const crossingText = (c: LimitCrossing) =>
  `the request alone would cross project '${c.project}''s limit of ${c.resourceClass} (limit ${c.limit}, usage ${c.usage}, requested ${c.requested})`;

export interface LimitsConfig extends LimitsSettings, KeystoneCredentialSettings {
  PLACEMENT_KEYSTONE_USER_DOMAIN_NAME: string;
  PLACEMENT_KEYSTONE_TIMEOUT_MS: number;
}

/** The limits' settings in an app's configuration: loadConfig() parsed them with LIMITS_SETTINGS (this extension's Extension.settings). */
export const limitsConfigOf = (config: Readonly<Record<string, unknown>>): LimitsConfig => config as unknown as LimitsConfig;

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class ProjectLimits {
  readonly sql: LimitsSql;
  /** Which consumers a project's usage counts. */
  readonly counting: Counting;
  readonly refreshMs: number;
  private lastAttempt = Number.NEGATIVE_INFINITY;
  private lastError: string | undefined;
  /** What this app last wrote to the table (rewritten when the source's limits change, or the table holds another source's). */
  private written: LimitSet | undefined;

  constructor(
    private readonly store: DataStore,
    private readonly source: LimitsSource,
    settings: Pick<
      LimitsSettings,
      'PLACEMENT_LIMITS_REFRESH_SECONDS' | 'PLACEMENT_LIMITS_CONSUMER_TYPES' | 'PLACEMENT_LIMITS_COUNT_UNTYPED'
    >,
    private readonly log: Logger,
    private readonly now: () => number,
    /** The limit rule, as declared (a test declares another). */
    readonly declaration: ProjectConstraint = PROJECT_LIMITS,
  ) {
    this.counting = { types: settings.PLACEMENT_LIMITS_CONSUMER_TYPES, untyped: settings.PLACEMENT_LIMITS_COUNT_UNTYPED };
    this.sql = new LimitsSql(this.counting);
    this.refreshMs = settings.PLACEMENT_LIMITS_REFRESH_SECONDS * 1000;
  }

  describe(): string {
    return this.source.describe();
  }

  /** Reads the limits from the source and puts them in force. Throws what the source threw (the last limits stay). */
  async refresh(): Promise<LimitSet> {
    this.lastAttempt = this.now();
    let limits: LimitSet;
    try {
      limits = await this.source.read();
    } catch (err) {
      this.lastError = messageOf(err);
      throw err;
    }
    const source = this.source.describe();
    const unchanged = this.written !== undefined && sameLimits(this.written, limits);
    // Unchanged, only the time of the read is written, and only over this source's own stamp.
    const touched = unchanged && (await this.store.writeBatch([touchSyncStatement(this.now(), source)]))[0]!.rowsAffected === 1;
    if (!touched) {
      await this.store.writeBatch(writeLimitsStatements(limits, this.now(), source));
      this.log.info('project limits in force', { source, limits: summary(limits) });
    }
    this.written = limits;
    this.lastError = undefined;
    return limits;
  }

  /** The periodic refresh (a sweep): when the interval has passed since the last try. Never throws. */
  async refreshIfDue(): Promise<number> {
    if (this.now() - this.lastAttempt < this.refreshMs) return 0;
    try {
      await this.refresh();
      return 1;
    } catch (err) {
      this.log.warn('project limits not refreshed; the last limits read stay in force', { err: messageOf(err) });
      return 0;
    }
  }

  /**
   * The start's first read. Refuses the start (SettingProblem) when the
   * limits cannot be read as configured: the service user without the reader
   * role on the system, a service or region that does not resolve. Keystone
   * not answering is refused when the database holds no limits read from
   * this source (none at all, or another source's, such as
   * PLACEMENT_LIMITS_JSON before a switch to keystone: never enforced as
   * Keystone's); otherwise those read before stay in force until it answers.
   */
  async start(): Promise<void> {
    await this.prepare();
    try {
      await this.refresh();
    } catch (err) {
      if (err instanceof LimitsAccessRefused) {
        throw new SettingProblem(
          'PLACEMENT_KEYSTONE_USERNAME',
          `PLACEMENT_LIMITS=keystone cannot read the limits: ${err.message}`,
          'give the service user the reader role on the system, or set PLACEMENT_LIMITS=off',
        );
      }
      if (err instanceof LimitsMisconfigured) throw new SettingProblem(err.setting, err.message, `correct ${err.setting}`);
      if (!(err instanceof LimitsUnavailable)) throw err;
      const [sync] = await this.store.readBatch([READ_SYNC]);
      const last = syncOf(sync!);
      if (last?.source !== this.source.describe()) {
        const held = last ? `the limits in this database were read from ${last.source}, not from it` : 'no limits were ever read';
        throw new SettingProblem(
          'PLACEMENT_KEYSTONE_AUTH_URL',
          `PLACEMENT_LIMITS=keystone and ${held}: ${err.message}`,
          'start it when Keystone answers, or set PLACEMENT_LIMITS=off',
        );
      }
      this.log.warn('project limits not read at start; those read before stay in force', {
        err: err.message,
        read_at: new Date(last.syncedAt).toISOString(),
      });
    }
  }

  /**
   * Puts this app's counting rule in force (and counts the ledger again)
   * unless it is already: one read when it is. The ledger's triggers come
   * from the migrations (drizzle/0009); every app with limits on runs this
   * before guarding claims.
   */
  async prepare(): Promise<void> {
    const [counting] = await this.store.readBatch([READ_COUNTING]);
    const inForce = counting!.rows.map((r) => str(r, LIMIT_COUNTING.consumerType));
    if (JSON.stringify(inForce) === JSON.stringify(countingRows(this.counting))) return;
    await this.store.writeBatch(this.sql.countingStatements());
    this.log.info('project limits: usage ledger counted', { consumer_types: this.counting.types, untyped: this.counting.untyped });
  }

  /**
   * A read for /readyz's one batch: ready when the limits in force were read
   * from this app's source, within two refresh intervals (a source that
   * cannot fail, PLACEMENT_LIMITS_JSON, does not go stale). Each reason names
   * the source the limits in force came from, never another.
   */
  readiness(): { statement: InStatement; judge(result: ResultSet): LimitsReadiness }[] {
    const ours = this.source.describe();
    return [
      {
        statement: READ_SYNC,
        judge: (result) => {
          const last = syncOf(result);
          const why = this.lastError ? ` (${this.lastError})` : '';
          if (!last) return { ready: false, reason: `no project limits were ever read from ${ours}${why}` };
          if (last.source !== ours) {
            return {
              ready: false,
              reason: `the project limits in force were read from ${last.source}, not from ${ours} (PLACEMENT_LIMITS)${why}`,
            };
          }
          if (this.source.alwaysFresh || this.now() - last.syncedAt <= 2 * this.refreshMs) return { ready: true };
          return {
            ready: false,
            reason: `the project limits in force were read ${Math.round((this.now() - last.syncedAt) / 1000)} s ago from ${last.source}, more than twice PLACEMENT_LIMITS_REFRESH_SECONDS${why}; they stay enforced`,
          };
        },
      },
    ];
  }

  /** Where the limits in force were read from and when; null before any read. */
  async provenance(): Promise<LimitsProvenance | null> {
    const [sync] = await this.store.readBatch([READ_SYNC]);
    const last = syncOf(sync!);
    return last ? { source: last.source, readAt: new Date(last.syncedAt).toISOString() } : null;
  }

  /** When the limits in force were last read from this app's source (ISO 8601); null when they were not (never read, or another source's). */
  async readAt(): Promise<string | null> {
    const last = await this.provenance();
    return last?.source === this.source.describe() ? last.readAt : null;
  }

  /** The limits of `project` (every project's when undefined) and their usage, as the claims read them. */
  private async boundsAndUsage(project?: string) {
    const projects = project === undefined ? undefined : [project];
    const [rows, usage] = await this.store.readBatch([
      projectBoundsStatement(this.declaration, projects),
      projectUsageStatement(this.declaration, projects),
    ]);
    return { bounds: projectBoundsOf(this.declaration, rows!), usage: projectUsageOf(usage!) };
  }

  /**
   * The first class whose limit the request's groups (class -> amount each)
   * alone would cross for `project`, with its limit and usage; null when it fits
   * (ext_within_limits on GET /allocation_candidates).
   */
  async crossing(project: string, groups: readonly ReadonlyMap<string, number>[]): Promise<LimitCrossing | null> {
    const requested = new Map<string, number>();
    for (const group of groups) for (const [rc, amount] of group) requested.set(rc, (requested.get(rc) ?? 0) + amount);
    const { bounds, usage } = await this.boundsAndUsage(project);
    const change = [...requested].map(([rc, amount]): [string, { before: number; after: number }] => {
      const before = usage.get(projectKey(project, rc)) ?? 0;
      return [rc, { before, after: before + amount }];
    });
    const crossing = projectCrossing(bounds, usage, project, change);
    return (
      crossing && {
        project,
        resourceClass: crossing.resourceClass,
        limit: crossing.bound,
        usage: crossing.usage,
        requested: crossing.requested,
      }
    );
  }

  /** GET /ext/limits?project_id=P: each class limited for P, its limit, usage and what remains. */
  async projectReport(project: string): Promise<ProjectLimitsReport> {
    const { bounds, usage } = await this.boundsAndUsage(project);
    return { project_id: project, limits: classLimits(projectReport(bounds, usage, project)) };
  }

  /** GET /ext/limits: the projects at or over a limit, with those classes only. */
  async atOrOverLimit(): Promise<ProjectLimitsReport[]> {
    const { bounds, usage } = await this.boundsAndUsage();
    return atOrOverBound(bounds, usage).map(([project_id, classes]) => ({ project_id, limits: classLimits(Object.entries(classes)) }));
  }
}

/** The audit's keys in the limits' words. */
const classLimits = (keys: Iterable<[string, ProjectKeyReport]>): Record<string, ClassLimit> =>
  Object.fromEntries([...keys].map(([rc, { bound, usage, remaining }]) => [rc, { limit: bound, usage, remaining }]));

function summary(limits: LimitSet): Record<string, unknown> {
  return { registered: Object.fromEntries(limits.registered), project_overrides: limits.projects.size };
}

/** The source PLACEMENT_LIMITS names (undefined when off). */
export function limitsSourceOf(config: LimitsConfig, keystone?: LimitsSource): LimitsSource | undefined {
  if (config.PLACEMENT_LIMITS === 'static') {
    const limits = staticLimits(config.PLACEMENT_LIMITS_JSON ?? '{}');
    return { describe: () => 'PLACEMENT_LIMITS_JSON', read: async () => limits, alwaysFresh: true };
  }
  if (config.PLACEMENT_LIMITS === 'keystone') {
    if (!keystone) throw new Error('PLACEMENT_LIMITS=keystone: no Keystone reader was given (compose.ts builds it)');
    return keystone;
  }
  return undefined;
}

/** The app's project limits, as its routes and jobs read them back (Deps.extensions.state). */
export const LIMITS = stateKey<ProjectLimits>('limits');

/** The app's project limits (PLACEMENT_LIMITS), or undefined when off; `keystone` reads them for PLACEMENT_LIMITS=keystone. */
export function projectLimits(
  store: DataStore,
  config: LimitsConfig,
  log: Logger,
  keystone?: LimitsSource,
  declaration: ProjectConstraint = PROJECT_LIMITS,
): ProjectLimits | undefined {
  const source = limitsSourceOf(config, keystone);
  return source ? new ProjectLimits(store, source, config, log, () => Date.now(), declaration) : undefined;
}
