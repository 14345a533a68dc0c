// What an extension is: one object, exported by its folder (src/ext/<name>/
// extension.ts), that says everything the extension adds to the service. The
// list in src/extensions.ts (EXTENSIONS) names them and the composition root
// (src/compose.ts) installs them; each part is installed where it plugs in:
// query parameters, read hooks and gates into the candidates engine, claim
// guards into the write kernel, jobs into the job runner, routes under /ext. The hooks themselves are declared by the
// parts that call them (placement/candidates/index.ts, placement/writes/
// kernel.ts, jobs/registry.ts, http/route-table.ts); this file only gathers
// them, so that Deps names no extension type. How to add one: src/ext/README.md.
import type { MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import type { AppConfig } from './config.js';
import type { DataStore } from './db/client.js';
import type { WriteStatement } from './db/write-batch.js';
import type { Deps, Logger } from './deps.js';
import type { AdminCommand } from './diagnostics/admin-cli.js';
import type { AuditCheck } from './diagnostics/audit.js';
import type { DashboardAsset, DashboardPanel, DashboardProviderPart, DashboardSection } from './diagnostics/dashboard-repo.js';
import type { DiagnosisPart } from './diagnostics/why-no-host.js';
import type { AppEnv } from './http/env.js';
import type { RouteTable } from './http/route-table.js';
import type { JobModule } from './jobs/registry.js';
import type { GaugeRead } from './observability/database-gauges.js';
import type { ReadinessRead } from './observability/readiness.js';
import type { ServiceMetrics } from './observability/service.js';
import type { CandidateExtensions, CandidateGate, CandidateParam, CandidateReadHook } from './placement/candidates/index.js';
import type { WriteExtension } from './placement/writes/kernel.js';

/** What an extension may read while it is set up for one app. */
export interface ExtensionContext {
  store: DataStore;
  config: AppConfig;
  log: Logger;
  metrics: ServiceMetrics;
  /** How Keystone is reached; the global fetch without one. */
  keystoneFetch?: typeof fetch;
  /** What an extension set up before it in this app keeps (one it requires: its declaration, say); undefined where none. */
  state<T>(key: StateKey<T>): T | undefined;
}

/** What an extension builds for one app from its store and settings (project limits: the limits' source and ledger). */
export interface ExtensionRuntime {
  /** What its routes and jobs read back through Deps.extensions.state() (a StateKey of the extension). */
  readonly state?: unknown;
  /** Claim guards built with the app's state (in the kernel after the static ones of earlier extensions). */
  readonly writes?: WriteExtension;
  /** Candidate gates built with the app's state. */
  readonly gates?: readonly CandidateGate[];
  /** Read hooks built for the app: what they keep between requests is this app's alone. */
  readonly read?: readonly CandidateReadHook[];
  /** Before the first claim of a Node service (its one process or the cluster's primary), with the app's Deps; a failure refuses the start. */
  start?(deps: Deps): Promise<void>;
  /** At a Worker isolate's start (the cron does the periodic work). */
  startIsolate?(): Promise<void>;
  /** Its own checks, read in GET /readyz's one batch. */
  readiness?(): ReadinessRead[];
  /** Placement's requests pass through it after authentication, before the routes (site mode: a cut-off site's claims). */
  readonly middleware?: MiddlewareHandler<AppEnv>;
}

/** A setting that cannot work with the rest: which, what is wrong, how to fix it. */
export interface ExtensionSettingProblem {
  setting: string;
  problem: string;
  fix: string;
}

/** An extension's settings (environment variables), validated with the rest of the configuration (src/config.ts). */
export interface ExtensionSettings {
  readonly shape: z.ZodRawShape;
  /** The first of them that cannot work, given the whole configuration as parsed; undefined when all can. */
  problem?(config: AppConfig): ExtensionSettingProblem | undefined;
}

/** Where extensions report what happened (Extension.events): a statement written in the reporter's own batch. */
export interface EventLog {
  /** Appends one event of `kind` (dotted: 'preemption.created'); commits with the caller's batch or not at all. */
  statement(kind: string, body: Record<string, unknown>, nowMs: number): WriteStatement;
}

export interface Extension {
  /** Unique among the installed ones; names its state. */
  readonly name: string;
  /**
   * The extensions whose code it uses (their names): an app that installs it
   * without one of them refuses to start. Every import of another extension's
   * folder is named here (test/architecture/extension-requirements.test.ts);
   * a use that goes through a part of the contract instead needs no line.
   */
  readonly requires?: readonly string[];
  /** Its settings: part of every app's configuration, whether or not an app installs it. */
  readonly settings?: ExtensionSettings;
  /** Query parameters of GET /allocation_candidates (and headroom, why-no-host, gangs), with their grammar. */
  readonly params?: readonly CandidateParam[];
  /** What it reads beside the trees in every candidates read batch. */
  readonly read?: readonly CandidateReadHook[];
  /** What it adds to every claim (guards that need no per-app state). */
  readonly writes?: WriteExtension;
  /** Outbox handlers and sweeps. */
  readonly jobs?: JobModule;
  /** Its routes, mounted under /ext (admin only) and listed by GET /openapi.json. */
  readonly routes?: readonly RouteTable[];
  /** Its gauges in GET /metrics, read in the scrape's one database batch. */
  readonly gauges?: GaugeRead;
  /** What the admin audit (GET /diagnostics/audit) reports of it, read in the audit's one batch of the extensions. */
  readonly audit?: AuditCheck;
  /** What the capacity dashboard shows of it: in GET /dashboard/api/summary (read in the summary's one batch), and its panels on the page. */
  readonly dashboard?: {
    readonly provider?: DashboardProviderPart;
    readonly sections?: readonly DashboardSection[];
    readonly panels?: readonly DashboardPanel[];
    /** Its part of the page: the scripts that fill its panels and mark the trees, with their stylesheets (src/ext/<name>/dashboard-assets/, bundled by scripts/bundle-dashboard.ts). */
    readonly assets?: Readonly<Record<string, DashboardAsset>>;
  };
  /** Its own question to GET /diagnostics/allocation_candidates ("why no host"), with its query parameters and verdict. */
  readonly diagnosis?: DiagnosisPart;
  /** A log the other extensions report to from their write batches (events: GET /ext/events); without one, nothing is reported. */
  readonly events?: EventLog;
  /** Commands it adds to placement-admin (src/entry/admin.ts takes them from EXTENSIONS). */
  readonly admin?: readonly AdminCommand[];
  /** What it builds per app; null where the app's settings turn it off. */
  setUp?(context: ExtensionContext): ExtensionRuntime | null;
}

/** The type of what an extension keeps per app, named by the extension (StateKey<ProjectLimits>('limits')). */
export interface StateKey<T> {
  readonly extension: string;
  /** Never set: carries T. */
  readonly type?: T;
}

export const stateKey = <T>(extension: string): StateKey<T> => ({ extension });

/** An extension's placement-admin command, typed by its file's and its answer's schemas (Extension.admin takes any). */
export const adminCommand = <F extends z.ZodType, A extends z.ZodType>(command: AdminCommand<F, A>): AdminCommand => command;

/** The extensions installed in one app (Deps.extensions), set up, with what each part of the service takes from them. */
export class InstalledExtensions {
  private readonly runtimes: ReadonlyMap<string, ExtensionRuntime>;

  private constructor(
    readonly list: readonly Extension[],
    runtimes: Map<string, ExtensionRuntime>,
  ) {
    this.runtimes = runtimes;
  }

  /** Sets up `list` for one app, in order; refuses a list where an extension lacks one it requires. */
  static setUp(list: readonly Extension[], context: Omit<ExtensionContext, 'state'>): InstalledExtensions {
    const runtimes = new Map<string, ExtensionRuntime>();
    const names = new Set<string>();
    for (const extension of list) {
      if (names.has(extension.name)) throw new Error(`two extensions named ${extension.name}`);
      names.add(extension.name);
    }
    for (const extension of list) {
      const missing = (extension.requires ?? []).filter((name) => !names.has(name));
      if (missing.length)
        throw new Error(
          `extension ${extension.name} requires ${missing.join(', ')}, which this app does not install: install ${missing.length > 1 ? 'them' : 'it'} or remove ${extension.name} too`,
        );
    }
    const setUp = new Set<string>();
    let settingUp = '';
    const state = <T>(key: StateKey<T>) => {
      // Installed but later in the list: its state does not exist yet, which would read as "not installed".
      if (names.has(key.extension) && !setUp.has(key.extension))
        throw new Error(`extension ${settingUp} reads what ${key.extension} sets up: list ${key.extension} before ${settingUp}`);
      return runtimes.get(key.extension)?.state as T | undefined;
    };
    for (const extension of list) {
      settingUp = extension.name;
      const runtime = extension.setUp?.({ ...context, state });
      if (runtime) runtimes.set(extension.name, runtime);
      setUp.add(extension.name);
    }
    return new InstalledExtensions(list, runtimes);
  }

  /** What the candidates engine takes: parameters, read hooks, gates, in installation order. */
  candidates(): CandidateExtensions {
    return {
      params: this.list.flatMap((e) => e.params ?? []),
      hooks: this.list.flatMap((e) => [...(e.read ?? []), ...(this.runtimes.get(e.name)?.read ?? [])]),
      gates: this.list.flatMap((e) => this.runtimes.get(e.name)?.gates ?? []),
    };
  }

  /** What the write kernel runs beside placement's own rules, in order (an earlier refusal is answered first). */
  writes(): WriteExtension[] {
    return this.list.flatMap((e) => [e.writes, this.runtimes.get(e.name)?.writes].filter((w) => w !== undefined));
  }

  jobs(): JobModule[] {
    return this.list.flatMap((e) => (e.jobs ? [e.jobs] : []));
  }

  /** The statements reporting one event to each installed log, for the caller's batch; none without a log. */
  eventStatements(kind: string, body: Record<string, unknown>, nowMs: number): WriteStatement[] {
    return this.list.flatMap((e) => (e.events ? [e.events.statement(kind, body, nowMs)] : []));
  }

  gauges(): GaugeRead[] {
    return this.list.flatMap((e) => (e.gauges ? [e.gauges] : []));
  }

  /** The installed extensions this app's settings leave on (set up, or with nothing to set up), in order. */
  on(): Extension[] {
    return this.list.filter((e) => !e.setUp || this.runtimes.has(e.name));
  }

  /** What `key`'s extension keeps in this app; undefined where it is not installed or its settings turn it off. */
  state<T>(key: StateKey<T>): T | undefined {
    return this.runtimes.get(key.extension)?.state as T | undefined;
  }

  /** Starts each (a Node service); the first failure refuses the start. */
  async start(deps: Deps): Promise<void> {
    for (const runtime of this.runtimes.values()) await runtime.start?.(deps);
  }

  /** What placement's requests pass through before its routes, in order (none without an extension that asks). */
  middleware(): MiddlewareHandler<AppEnv>[] {
    return [...this.runtimes.values()].flatMap((runtime) => (runtime.middleware ? [runtime.middleware] : []));
  }

  async startIsolate(): Promise<void> {
    for (const runtime of this.runtimes.values()) await runtime.startIsolate?.();
  }

  readiness(): ReadinessRead[] {
    return [...this.runtimes.values()].flatMap((runtime) => runtime.readiness?.() ?? []);
  }
}

/** `list` without `removed` and without every extension that requires one it leaves out (directly or through another). */
export function withoutExtensions(list: readonly Extension[], removed: readonly Extension[]): Extension[] {
  const gone = new Set(removed.map((e) => e.name));
  for (let grew = true; grew; ) {
    grew = false;
    for (const e of list)
      if (!gone.has(e.name) && e.requires?.some((name) => gone.has(name))) {
        gone.add(e.name);
        grew = true;
      }
  }
  return list.filter((e) => !gone.has(e.name));
}

/** `key`'s state in an app where its extension is installed (one that requires it, or its own routes): refused otherwise. */
export function requiredState<T>(extensions: { state<S>(key: StateKey<S>): S | undefined }, key: StateKey<T>): T {
  const state = extensions.state(key);
  if (state === undefined) throw new Error(`extension ${key.extension} is not installed in this app`);
  return state;
}

/** A sweep that runs with `key`'s state, and counts nothing where the extension is off in the app. */
export const withState =
  <T>(key: StateKey<T>, sweep: (state: T, deps: Deps) => Promise<number>) =>
  async (deps: Deps): Promise<number> => {
    const state = deps.extensions.state(key);
    return state === undefined ? 0 : sweep(state, deps);
  };
