// The settings a start cannot work with, each refused in ONE line that names
// the variable and the fix (no stack, no secret echoed back). Runs before the
// service opens anything; pure, so any entry can use it.
import { type AppConfig, ConfigSchema } from './config.js';
import { limitsSettingsProblem } from './ext/limits/settings.js';
import { TokenTableJson } from './http/auth.js';

/** A setting that stops the start: what is wrong with it and how to fix it. */
export class SettingProblem extends Error {
  constructor(
    readonly setting: string,
    problem: string,
    readonly fix: string,
  ) {
    super(`${setting}: ${problem}. Fix: ${fix}`);
    this.name = 'SettingProblem';
  }
}

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

/** Schema defaults, shown in a fix. */
const DEFAULTS = ConfigSchema.parse({}) as Record<string, unknown>;

/**
 * The configuration of `env`, or a SettingProblem naming the first setting
 * that cannot work. Checks what loadConfig() checks and what only shows
 * later (every request refused, a failure at the first token).
 */
export function checkSettings(env: Record<string, string | undefined>): AppConfig {
  checkKeystone(env);
  const picked: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
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
  const limits = limitsSettingsProblem(parsed.data);
  if (limits) throw new SettingProblem(limits.setting, limits.problem, limits.fix);
  return parsed.data;
}
