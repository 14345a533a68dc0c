// The configuration as the start line logs it: every setting, secrets never.
// A setting whose name says it holds a secret is replaced by "<redacted>",
// and credentials inside URLs (user:password@, ?authToken=) are cut out.
import type { AppConfig } from '../config.js';
import { VERSION } from '../version.js';

const SECRET_NAME = /TOKEN|PASSWORD|SECRET|CREDENTIAL|PRIVATE|_KEY$/i;
const SECRET_PARAM = /token|password|secret|key|credential/i;
export const REDACTED = '<redacted>';

/** `url` without the credentials it may carry; a value that is not a URL is returned as it is. */
export function redactUrl(url: string): string {
  const withoutUser = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@?#]*@/i, `$1${REDACTED}@`);
  return withoutUser.replace(/([?&])([^=&#]+)=([^&#]*)/g, (all, sep: string, name: string) =>
    SECRET_PARAM.test(name) ? `${sep}${name}=${REDACTED}` : all,
  );
}

export function configSummary(config: AppConfig | Record<string, unknown>): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) continue;
    // Only text can be a secret: a flag named after tokens (ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN) is shown.
    if (SECRET_NAME.test(key) && typeof value === 'string') summary[key] = REDACTED;
    else if (typeof value === 'string' && /_URL$/.test(key)) summary[key] = redactUrl(value);
    else summary[key] = value;
  }
  return summary;
}

/**
 * The start line: what starts and where, short enough to read at a glance
 * (the full configuration follows on a line of its own).
 */
export function startSummary(config: AppConfig, process: { pid: number; node: string; processes: number }): Record<string, unknown> {
  return {
    version: VERSION,
    ...process,
    address: `${config.HOST}:${config.PORT}`,
    db: redactUrl(config.PLACEMENT_DB_URL),
    auth: config.PLACEMENT_AUTH_STRATEGY,
  };
}
