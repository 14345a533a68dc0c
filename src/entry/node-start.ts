// What stops a Node-mode start before it serves: --help and --version, a
// setting that cannot work (src/entry/settings-check.ts), a database path it cannot
// write, a port it cannot listen on. Each ends the process with ONE line on
// stderr naming the setting and the fix, and a non-zero exit code.
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { type AppConfig, ConfigSchema, nodeEnvironment, pickSettings } from '../config.js';
import { parsePolicyOverrides } from '../deps.js';
import { databaseFailure } from './database-failure.js';
import { SettingProblem } from '../shared/setting-problem.js';
import { VERSION } from '../shared/version.js';

/** Exit codes of a refused start: a setting (systemd's RestartPreventExitStatus) or the machine around it. */
export const EXIT_BAD_SETTING = 78; // EX_CONFIG
export const EXIT_CANNOT_START = 1;
export const EXIT_USAGE = 2;

/** A start that cannot go on for a reason outside the settings' values (a port taken, a path unwritable). */
export class StartProblem extends SettingProblem {}

export function serverUsage(): string {
  const defaults = ConfigSchema.parse(pickSettings(nodeEnvironment({}))) as Record<string, unknown>;
  const settings = Object.keys(ConfigSchema.shape).map((key) => {
    const value = defaults[key];
    return `  ${key}${value === undefined ? '' : `=${String(value)}`}`;
  });
  return [
    `placement-edge ${VERSION}: the OpenStack Placement and Cyborg API on an embedded libSQL file`,
    '',
    'usage: npm start | node server.mjs [--help] [--version]',
    '',
    'Serves HTTP until SIGTERM or SIGINT (then drains requests in flight for at',
    'most PLACEMENT_SHUTDOWN_GRACE_MS). Settings come from the environment,',
    'shown here with their defaults (docs/operations.md explains them):',
    ...settings,
    '',
    `Exit codes: 0 stopped, ${EXIT_CANNOT_START} could not start (port, database path), ${EXIT_USAGE} bad arguments, ${EXIT_BAD_SETTING} a setting cannot work.`,
  ].join('\n');
}

/** --help / --version: the text to print and the exit code; null to start the server. */
export function serverArgs(argv: string[]): { text: string; code: number } | null {
  if (argv.length === 0) return null;
  const [arg] = argv;
  if (argv.length === 1 && (arg === '--help' || arg === '-h')) return { text: serverUsage(), code: 0 };
  if (argv.length === 1 && (arg === '--version' || arg === '-V')) return { text: `placement-edge ${VERSION}`, code: 0 };
  return {
    text: `placement-edge: unknown argument ${JSON.stringify(arg)}; settings come from the environment (see --help)`,
    code: EXIT_USAGE,
  };
}

/** Prints the one line and exits: the start is refused. */
export function refuseStart(err: unknown): never {
  if (err instanceof SettingProblem) {
    process.stderr.write(`placement-edge: cannot start: ${err.message}\n`);
    process.exit(err instanceof StartProblem ? EXIT_CANNOT_START : EXIT_BAD_SETTING);
  }
  throw err;
}

const reason = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));

/**
 * An embedded database needs its directory writable (SQLite writes the -wal
 * and -shm files beside it) and the file itself, when it exists; a missing
 * directory is created, so its nearest existing ancestor must be writable.
 */
export function checkDatabasePath(url: string): void {
  if (!url.startsWith('file:')) return;
  const raw = url.slice('file:'.length).split('?')[0]!;
  if (!raw || raw.includes(':memory:')) return;
  const path = resolve(raw);
  const fix =
    'point PLACEMENT_DB_URL at a file in a writable directory (file:/var/lib/placement-edge/placement.db), or let the service user write there';
  const refuse = (problem: string): never => {
    throw new StartProblem('PLACEMENT_DB_URL', problem, fix);
  };
  if (existsSync(path)) {
    if (!statSync(path).isFile()) refuse(`${path} is not a file`);
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch (err) {
      refuse(`cannot write the database file ${path} (${reason(err)})`);
    }
  }
  let dir = dirname(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  if (!statSync(dir).isDirectory()) refuse(`${dir} is not a directory, so ${path} cannot be created`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    refuse(`cannot write in ${dir} (${reason(err)}), where the database and its -wal and -shm files live`);
  }
}

/** PLACEMENT_POLICY_FILE, when set, must be a readable JSON map of rule names to check strings. */
export function checkPolicyFile(file: string | undefined): void {
  if (!file) return;
  const fix = 'point PLACEMENT_POLICY_FILE at a readable JSON file {"<rule>": "<check string>"}, or unset it for the default rules';
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new StartProblem('PLACEMENT_POLICY_FILE', `cannot read ${file} (${reason(err)})`, fix);
  }
  try {
    parsePolicyOverrides(text, file);
  } catch (err) {
    throw new SettingProblem(
      'PLACEMENT_POLICY_FILE',
      `${file} is not a policy file (${err instanceof Error ? err.message : String(err)})`,
      fix,
    );
  }
}

/** The database could not be opened or prepared: the cause and its fix (settings-check.ts databaseFailure). */
export function databaseOpenProblem(url: string, err: unknown): StartProblem {
  const { problem, fix } = databaseFailure(url, err);
  return new StartProblem('PLACEMENT_DB_URL', problem, fix);
}

/** A listen error as the setting to change. */
export function listenProblem(err: unknown, host: string, port: number): StartProblem | null {
  const where = `${host}:${port}`;
  switch ((err as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new StartProblem('PORT', `${where} is already in use by another process`, 'stop that process or set PORT to a free port');
    case 'EACCES':
      return new StartProblem('PORT', `not allowed to listen on ${where}`, 'use a PORT above 1023, or grant CAP_NET_BIND_SERVICE');
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartProblem(
        'HOST',
        `${host} is not an address of this machine`,
        'set HOST to one of its addresses (127.0.0.1, or 0.0.0.0 for all)',
      );
    default:
      return null;
  }
}

/**
 * Whether the port can be listened on, tried once by the cluster primary
 * before it forks: otherwise each server process would fail on its own.
 */
export function probePort(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(listenProblem(err, host, port) ?? err));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolvePromise()));
  });
}

/**
 * How many server processes to run: PLACEMENT_WORKERS, or one per core when
 * it is 0. An in-memory database exists only inside one process, so it gets one.
 */
export function serverProcessCount(config: AppConfig, cores = availableParallelism()): number {
  if (/^file::memory:|^:memory:/.test(config.PLACEMENT_DB_URL)) return 1;
  return config.PLACEMENT_WORKERS > 0 ? config.PLACEMENT_WORKERS : Math.max(1, cores);
}
