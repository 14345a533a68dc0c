// The settings a start cannot work with, each refused in ONE line that names
// the variable and the fix (no stack, no secret echoed back). Runs before the
// service opens anything (Node entries: it looks whether a database file's
// directory exists). A database that would not open: database-failure.ts.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  type AppConfig,
  ConfigSchema,
  DATABASE_URL_SCHEMES,
  DEFAULT_DATABASE_URL,
  databaseUrlScheme,
  extensionSettingsProblem,
  nodeEnvironment,
  novaSettingsProblem,
  pickSettings,
} from '../config.js';
import { SettingProblem } from '../shared/setting-problem.js';
import { TokenTableJson } from '../http/auth.js';
import { redactUrl } from '../observability/config-summary.js';

/** Values never repeated in a message. */
const SECRET = /TOKEN|PASSWORD|SECRET/;

/** What a token-mode table looks like, for the fix of a bad one. */
const TOKENS_EXAMPLE = `'{"<token>": {"roles": ["admin"], "project_id": "<project>"}}'`;

/** PLACEMENT_AUTH_STRATEGY=keystone cannot validate a token without these. */
export const KEYSTONE_REQUIRED = [
  'PLACEMENT_KEYSTONE_AUTH_URL',
  'PLACEMENT_KEYSTONE_USERNAME',
  'PLACEMENT_KEYSTONE_PASSWORD',
  'PLACEMENT_KEYSTONE_PROJECT_NAME',
] as const;

const present = (env: Record<string, string | undefined>, key: string) => (env[key] ?? '').trim() !== '';

function checkKeystone(env: Record<string, string | undefined>): void {
  if (env.PLACEMENT_AUTH_STRATEGY !== 'keystone') return;
  const missing = KEYSTONE_REQUIRED.filter((key) => !present(env, key));
  if (missing.length === 0) return;
  throw new SettingProblem(
    missing[0]!,
    `PLACEMENT_AUTH_STRATEGY=keystone needs the service's Keystone credentials; ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not set`,
    `set ${missing.join(', ')} (the service user placement-edge validates tokens as), or choose another PLACEMENT_AUTH_STRATEGY`,
  );
}

function checkTokens(config: AppConfig): void {
  if (config.PLACEMENT_AUTH_STRATEGY !== 'token') return;
  const json = config.PLACEMENT_AUTH_TOKENS;
  const key = 'PLACEMENT_AUTH_TOKENS';
  const fix = `set ${key}=${TOKENS_EXAMPLE} (the systemd unit reads it from /etc/placement-edge/placement-edge.env)`;
  if (!json?.trim()) {
    throw new SettingProblem(key, 'PLACEMENT_AUTH_STRATEGY=token but no token is configured, so every request would get 401', fix);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    // JSON.parse names a position, never the text around it: no secret leaks.
    throw new SettingProblem(key, `not valid JSON (${err instanceof Error ? err.message : String(err)})`, fix);
  }
  const table = TokenTableJson.safeParse(parsed);
  if (!table.success) {
    const issue = table.error.issues[0]!;
    // The path's first element is a token itself: name it by its position instead.
    const tokens = parsed && typeof parsed === 'object' ? Object.keys(parsed) : [];
    const [token, ...field] = issue.path.map(String);
    const where =
      token === undefined ? 'the table' : `token #${tokens.indexOf(token) + 1}${field.length ? ` field ${field.join('.')}` : ''}`;
    throw new SettingProblem(key, `${where}: ${issue.message}`, fix);
  }
  if (Object.keys(table.data).length === 0) {
    throw new SettingProblem(key, 'PLACEMENT_AUTH_STRATEGY=token but the token table is empty, so every request would get 401', fix);
  }
}

/** What PLACEMENT_DB_URL may look like, for the fix of a wrong one. */
const DATABASE_URL_EXAMPLES =
  'file:/var/lib/placement-edge/placement.db (an embedded file; unset for file:./data/placement.db), http://127.0.0.1:8080 (a local sqld) or libsql://<database>-<organization>.turso.io (Turso, with PLACEMENT_DB_AUTH_TOKEN)';

/** The file a file: URL names, or undefined for an in-memory database. */
export function databaseFilePath(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined;
  let raw = url.slice('file:'.length).split('?')[0]!;
  if (raw.startsWith('//')) raw = raw.slice(2); // file:///var/lib/... names /var/lib/...
  if (!raw || raw.includes(':memory:')) return undefined;
  return resolve(raw);
}

/**
 * PLACEMENT_DB_URL: a scheme libSQL speaks, and, when a file: URL is set
 * explicitly, a directory that exists. The default is created for a new
 * user; a path someone typed is not, or a typo would serve a new, empty cloud.
 */
function checkDatabaseUrl(env: Record<string, string | undefined>): void {
  const url = env.PLACEMENT_DB_URL?.trim();
  if (!url) return;
  const key = 'PLACEMENT_DB_URL';
  if (databaseUrlScheme(url) === undefined) {
    const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(url)?.[1];
    const what = scheme ? `the scheme ${scheme} is not one placement-edge speaks` : `${JSON.stringify(redactUrl(url))} is not a URL`;
    const copy = /^(postgres|postgresql|mysql|mysql\+pymysql):/i.test(url)
      ? '; to bring a Placement on MySQL or PostgreSQL over, use placement-admin import --from (README "Import, backup, restore, upgrade")'
      : '';
    throw new SettingProblem(
      key,
      `${what}: it keeps its data in libSQL (SQLite) and opens ${DATABASE_URL_SCHEMES.join(', ')} URLs`,
      `set ${key} to ${DATABASE_URL_EXAMPLES}${copy}`,
    );
  }
  if (url === DEFAULT_DATABASE_URL) return;
  const path = databaseFilePath(url);
  if (!path) return;
  const dir = dirname(path);
  if (!existsSync(dir)) {
    throw new SettingProblem(
      key,
      `the directory ${dir} of the database file does not exist (not created: a mistyped path would start an empty cloud)`,
      `create it (mkdir -p ${dir}, writable by the service user) or correct the path in ${key}`,
    );
  }
}

/** Schema defaults, shown in a fix. */
const DEFAULTS = ConfigSchema.parse(pickSettings(nodeEnvironment({}))) as Record<string, unknown>;

/**
 * The configuration of `env`, or a SettingProblem naming the first setting
 * that cannot work. Checks what loadConfig() checks and what only shows
 * later (every request refused, a failure at the first token).
 */
export function checkSettings(env: Record<string, string | undefined>): AppConfig {
  checkKeystone(env);
  checkDatabaseUrl(env);
  const picked = pickSettings(env);
  const parsed = ConfigSchema.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0] ?? 'configuration');
    const shown = SECRET.test(key) ? '' : ` (${JSON.stringify(picked[key])})`;
    const fallback = DEFAULTS[key];
    const fix = fallback === undefined ? `correct ${key} or unset it` : `correct ${key} or unset it for the default (${String(fallback)})`;
    throw new SettingProblem(key, `invalid value${shown}: ${issue.message}`, fix);
  }
  checkTokens(parsed.data);
  const nova = novaSettingsProblem(parsed.data);
  if (nova) throw new SettingProblem(nova.setting, nova.problem, nova.fix);
  const extension = extensionSettingsProblem(parsed.data);
  if (extension) throw new SettingProblem(extension.setting, extension.problem, extension.fix);
  return parsed.data;
}
