// placement-admin's data commands: import (and verify) from a running
// OpenStack Placement, backup and restore of this service's own database.
// Each returns its exit code: 0 done, 1 failed (one line on stderr) or
// differences found, 2 usage.
import { parseArgs } from 'node:util';
import { ConfigSchema } from '../config.js';
import { openNodeClient } from '../db/node-client.js';
import { applyMigrations } from '../db/migrate.js';
import { MIGRATIONS } from '../db/migrations.generated.js';
import { syncStandards } from '../placement/sync-standards.js';
import { backupDatabase, restoreDatabase } from './backup.js';
import { writeSnapshot, type ImportCounts } from './import-writer.js';
import { keystonePasswordLogin } from './keystone-password.js';
import { AdminError, readPlacement, type PlacementEndpoint, type ReadProgress, type Snapshot } from './placement-reader.js';
import { diffSnapshots } from './verify.js';

export interface DataIo {
  out(text: string): void;
  err(text: string): void;
  fetch?: typeof fetch;
  /** Defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Redraws a progress line; defaults to stderr when it is a terminal. */
  progress?: (line: string) => void;
  /** Serves PLACEMENT_DB_URL in-process for --verify (entry/admin-target.ts: the edge builds the app). */
  openTarget: (dbUrl: string, authToken?: string) => Promise<{ endpoint: PlacementEndpoint; close(): void }>;
}

export const DATA_COMMANDS = ['import', 'verify', 'backup', 'restore'] as const;
export type DataCommand = (typeof DATA_COMMANDS)[number];
export const isDataCommand = (command: string | undefined): command is DataCommand => DATA_COMMANDS.includes(command as DataCommand);

const SOURCE_OPTIONS = `  --from URL        the source Placement (default: the placement endpoint of the Keystone catalog)
  --token TOKEN     sent as X-Auth-Token to the source (env PLACEMENT_IMPORT_TOKEN)
  Or a Keystone v3 password login instead of --token (options, or the env variables named):
  --keystone-auth-url URL               PLACEMENT_KEYSTONE_AUTH_URL
  --keystone-username NAME              PLACEMENT_KEYSTONE_USERNAME
  --keystone-password PASSWORD          PLACEMENT_KEYSTONE_PASSWORD
  --keystone-project-name NAME          PLACEMENT_KEYSTONE_PROJECT_NAME
  --keystone-user-domain-name NAME      PLACEMENT_KEYSTONE_USER_DOMAIN_NAME (default Default)
  --keystone-project-domain-name NAME   PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME (default Default)
  --keystone-interface NAME             catalog endpoint interface (default public)
  --concurrency N   requests in flight to each Placement (default 16)`;

export const DATA_USAGE = `usage: placement-admin import --from URL (--token TOKEN | --keystone-...) [--replace] [--verify]
       placement-admin verify --from URL (--token TOKEN | --keystone-...) [--target URL [--target-token TOKEN]]
       placement-admin backup FILE
       placement-admin restore FILE [--replace]

  import   copies a running OpenStack Placement into the database PLACEMENT_DB_URL names (a file
           or a libSQL server): custom resource classes and traits, providers with their uuids,
           trees and generations, inventories, aggregates, provider traits, consumers (project,
           user, type, generation) and their allocations. All or nothing, in one transaction.
           Refuses a database that already holds data unless --replace (wiped in the same transaction).
  verify   reads both Placements through their REST APIs and names the first differences (exit 1).
           The target is PLACEMENT_DB_URL served in-process, or --target URL (a running service).
  backup   a consistent copy of the embedded database (PLACEMENT_DB_URL file:) while it serves.
  restore  puts a backup in place of PLACEMENT_DB_URL's file; stop the service first.

${SOURCE_OPTIONS}
  --replace         import: wipe the target first; restore: overwrite an existing database
  --verify          import: verify after the import`;

class UsageError extends Error {}

const KEYSTONE_OPTIONS = {
  'keystone-auth-url': { type: 'string' },
  'keystone-username': { type: 'string' },
  'keystone-password': { type: 'string' },
  'keystone-project-name': { type: 'string' },
  'keystone-user-domain-name': { type: 'string' },
  'keystone-project-domain-name': { type: 'string' },
  'keystone-interface': { type: 'string' },
} as const;

const SOURCE_PARSE_OPTIONS = {
  from: { type: 'string' },
  token: { type: 'string' },
  concurrency: { type: 'string' },
  ...KEYSTONE_OPTIONS,
} as const;

type SourceValues = { [K in keyof typeof SOURCE_PARSE_OPTIONS]?: string | undefined };

/** The source endpoint from --from/--token, or a Keystone login (and its catalog) when no token is given. */
async function sourceEndpoint(values: SourceValues, io: DataIo, env: Record<string, string | undefined>): Promise<PlacementEndpoint> {
  const doFetch = io.fetch ?? fetch;
  let token = values.token ?? env.PLACEMENT_IMPORT_TOKEN;
  let base = values.from;
  const authUrl = values['keystone-auth-url'] ?? env.PLACEMENT_KEYSTONE_AUTH_URL;
  if (token === undefined) {
    if (!authUrl) throw new UsageError('give --token, or the Keystone options (--keystone-auth-url or PLACEMENT_KEYSTONE_AUTH_URL, ...)');
    const setting = (option: keyof typeof KEYSTONE_OPTIONS, name: string, fallback?: string): string => {
      const value = values[option] ?? env[name] ?? fallback;
      if (!value) throw new UsageError(`the Keystone login needs --${option} or ${name}`);
      return value;
    };
    const session = await keystonePasswordLogin(
      {
        authUrl,
        username: setting('keystone-username', 'PLACEMENT_KEYSTONE_USERNAME'),
        password: setting('keystone-password', 'PLACEMENT_KEYSTONE_PASSWORD'),
        projectName: setting('keystone-project-name', 'PLACEMENT_KEYSTONE_PROJECT_NAME'),
        userDomainName: setting('keystone-user-domain-name', 'PLACEMENT_KEYSTONE_USER_DOMAIN_NAME', 'Default'),
        projectDomainName: setting('keystone-project-domain-name', 'PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME', 'Default'),
        interface: values['keystone-interface'] ?? 'public',
      },
      doFetch,
    );
    token = session.token;
    base ??= session.placementUrl;
    if (!base) throw new UsageError('the Keystone catalog lists no placement endpoint; give --from URL');
  }
  if (!base) throw new UsageError('--from URL is required');
  if (!/^https?:\/\//.test(base)) throw new UsageError(`--from must be an http(s) URL, not ${base}`);
  return { label: `source (${base})`, base: base.replace(/\/+$/, ''), token, fetch: doFetch };
}

function concurrencyOf(values: SourceValues): number {
  const n = Number(values.concurrency ?? 16);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new UsageError('--concurrency must be 1..256');
  return n;
}

/** A progress line redrawn in place on a terminal, nothing elsewhere. */
function progressReporter(io: DataIo): { read(p: ReadProgress): void; write(done: number, total: number): void; end(): void } {
  const draw = io.progress ?? (process.stderr.isTTY ? (line: string) => process.stderr.write(`\r\x1b[2K${line}`) : undefined);
  let last = 0;
  const bar = (label: string, done: number, total: number) => {
    if (!draw) return;
    const now = Date.now();
    if (done < total && now - last < 100) return;
    last = now;
    const width = 30;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    draw(`${label.padEnd(20)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
  };
  return {
    read: (p) => bar(`reading ${p.phase}`, p.done, p.total),
    write: (done, total) => bar('writing', done, total),
    end: () => {
      if (draw && !io.progress) process.stderr.write('\n');
    },
  };
}

const databaseUrl = (env: Record<string, string | undefined>) => ConfigSchema.shape.PLACEMENT_DB_URL.parse(env.PLACEMENT_DB_URL);

function describeCounts(c: ImportCounts): string {
  return [
    `${c.resourceClasses} custom resource classes`,
    `${c.traits} custom traits`,
    `${c.providers} providers`,
    `${c.inventories} inventories`,
    `${c.aggregates} aggregates`,
    `${c.providerTraits} provider traits`,
    `${c.consumers} consumers`,
    `${c.allocations} allocations`,
  ].join(', ');
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Reads source and target whole (with usages) and prints the first differences; the exit code. */
async function verifyAgainst(io: DataIo, source: PlacementEndpoint, target: PlacementEndpoint, concurrency: number): Promise<number> {
  const progress = progressReporter(io);
  const readSource = await readPlacement(source, { concurrency, usages: true, onProgress: progress.read });
  const readTarget = await readPlacement(target, {
    concurrency,
    usages: true,
    maxVersion: readSource.version,
    extraProjects: Object.keys(readSource.projectUsages ?? {}),
    onProgress: progress.read,
  });
  // The source again for projects only the target has, so both sides answer for the same projects.
  const onlyTarget = Object.keys(readTarget.projectUsages ?? {}).filter((p) => !(p in (readSource.projectUsages ?? {})));
  const sourceFull: Snapshot =
    onlyTarget.length > 0
      ? await readPlacement(source, { concurrency, usages: true, extraProjects: onlyTarget, onProgress: progress.read })
      : readSource;
  progress.end();
  const differences = diffSnapshots(sourceFull, readTarget);
  const checked = `${sourceFull.providers.length} providers, ${sourceFull.consumers.length} consumers, ${Object.keys(sourceFull.projectUsages ?? {}).length} projects`;
  if (differences.length === 0) {
    io.out(`verify: the source and the target agree (${checked}, at microversion ${readTarget.version})`);
    return 0;
  }
  const shown = differences.slice(0, 20);
  io.err(
    [
      `placement-admin: verify found ${differences.length} difference(s) between the source and the target (${checked}); the first:`,
      ...shown.map((d) => `  ${d}`),
      ...(differences.length > shown.length ? [`  ... and ${differences.length - shown.length} more`] : []),
    ].join('\n'),
  );
  return 1;
}

async function importCommand(args: string[], io: DataIo, env: Record<string, string | undefined>): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...SOURCE_PARSE_OPTIONS, replace: { type: 'boolean', default: false }, verify: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: false,
  });
  const concurrency = concurrencyOf(values);
  const source = await sourceEndpoint(values, io, env);
  const dbUrl = databaseUrl(env);
  const dbToken = env.PLACEMENT_DB_AUTH_TOKEN;

  const started = Date.now();
  const progress = progressReporter(io);
  // The whole source is read before the target is opened for writing: a
  // source that fails half way leaves the target as it was.
  const snapshot = await readPlacement(source, { concurrency, onProgress: progress.read });
  const read = Date.now();
  const client = await openNodeClient(dbUrl, dbToken);
  let counts: ImportCounts;
  try {
    await applyMigrations(client, MIGRATIONS);
    await syncStandards(client);
    counts = await writeSnapshot(client, snapshot, { replace: values.replace, onProgress: progress.write });
  } finally {
    client.close();
  }
  progress.end();
  const written = Date.now();
  io.out(
    `imported from ${source.base} (microversion ${snapshot.version}) into ${dbUrl}: ${describeCounts(counts)} ` +
      `in ${seconds(written - started)} (reading ${seconds(read - started)}, writing ${seconds(written - read)})`,
  );
  if (!values.verify) return 0;
  const target = await io.openTarget(dbUrl, dbToken);
  try {
    return await verifyAgainst(io, source, target.endpoint, concurrency);
  } finally {
    target.close();
  }
}

async function verifyCommand(args: string[], io: DataIo, env: Record<string, string | undefined>): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...SOURCE_PARSE_OPTIONS, target: { type: 'string' }, 'target-token': { type: 'string' } },
    strict: true,
    allowPositionals: false,
  });
  const concurrency = concurrencyOf(values);
  const source = await sourceEndpoint(values, io, env);
  if (values.target) {
    const base = values.target.replace(/\/+$/, '');
    const target: PlacementEndpoint = {
      label: `target (${base})`,
      base,
      token: values['target-token'] ?? env.PLACEMENT_ADMIN_TOKEN ?? 'admin',
      fetch: io.fetch ?? fetch,
    };
    return verifyAgainst(io, source, target, concurrency);
  }
  const target = await io.openTarget(databaseUrl(env), env.PLACEMENT_DB_AUTH_TOKEN);
  try {
    return await verifyAgainst(io, source, target.endpoint, concurrency);
  } finally {
    target.close();
  }
}

function oneFile(args: string[], command: string): { file: string; replace: boolean } {
  const { values, positionals } = parseArgs({
    args,
    options: { replace: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError(`${command} needs exactly one FILE`);
  if (values.replace && command === 'backup') throw new UsageError('backup has no --replace: it never overwrites a file');
  return { file: positionals[0]!, replace: values.replace };
}

export async function runDataCommand(command: DataCommand, args: string[], io: DataIo): Promise<number> {
  const env = io.env ?? process.env;
  try {
    if (args.includes('--help') || args.includes('-h')) {
      io.out(DATA_USAGE);
      return 0;
    }
    switch (command) {
      case 'import':
        return await importCommand(args, io, env);
      case 'verify':
        return await verifyCommand(args, io, env);
      case 'backup': {
        const { file } = oneFile(args, command);
        const done = await backupDatabase(databaseUrl(env), file);
        io.out(`backup written to ${done.file} (${done.bytes} bytes: ${done.providers} providers, ${done.consumers} consumers)`);
        return 0;
      }
      case 'restore': {
        const { file, replace } = oneFile(args, command);
        const done = await restoreDatabase(databaseUrl(env), file, replace);
        io.out(
          `restored ${file} to ${done.file} (${done.providers} providers, ${done.consumers} consumers); start the service: it applies any newer migrations`,
        );
        return 0;
      }
    }
  } catch (err) {
    if (err instanceof AdminError) {
      io.err(`placement-admin: ${err.message}`);
      return 1;
    }
    if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      io.err(`placement-admin: ${err.message}\n${DATA_USAGE}`);
      return 2;
    }
    // A database that cannot be opened or written (bad URL, server down, disk full): one line too.
    io.err(`placement-admin: ${command} failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    return 1;
  }
}
