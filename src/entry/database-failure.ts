// Why a database could not be opened, worded for an operator: the cause (a
// libSQL server that does not answer, one that refuses the token, a file that
// cannot be written) and the fix that fits it. No Node modules: the Node
// start, `npm run sync` and the Worker's boot all use it.
import { databaseUrlScheme } from '../config.js';
import { databaseTimeoutIn } from '../db/deadline.js';
import { redactUrl } from '../observability/config-summary.js';

/**
 * Why the database could not be opened, and the fix that fits: a libSQL
 * server that does not answer, one that refuses the token, or a file that
 * cannot be written or is not a placement-edge database.
 */
export function databaseFailure(url: string, err: unknown, reachableFrom = 'this machine'): { problem: string; fix: string } {
  const shown = redactUrl(url);
  const message = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ');
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
  const causeText = cause ? `${(cause as { code?: string }).code ?? ''} ${cause.message}`.trim() : '';
  const silent = databaseTimeoutIn(err);
  if (silent) {
    return {
      problem: `the libSQL server at ${shown} does not answer (no answer within ${silent.timeoutMs} ms)`,
      fix: `check that server and the network path to it (a firewall dropping packets, a proxy, a hung server); PLACEMENT_DB_READ_TIMEOUT_MS and PLACEMENT_DB_WRITE_TIMEOUT_MS set how long each call waits; it must be reachable from ${reachableFrom}`,
    };
  }
  if (databaseUrlScheme(url) !== 'file:') {
    if (/\b(401|403)\b|unauthori[sz]ed|forbidden/i.test(message)) {
      return {
        problem: `the libSQL server at ${shown} refused the credentials (${message})`,
        fix: 'set PLACEMENT_DB_AUTH_TOKEN to a token that server accepts (sqld: a JWT signed with its --auth-jwt-key-file key; Turso: turso db tokens create <database>)',
      };
    }
    if (
      message === 'fetch failed' ||
      /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|timed? ?out|connect/i.test(`${message} ${causeText}`)
    ) {
      const badPort = /bad port/i.test(causeText);
      return {
        problem: `no libSQL server answers at ${shown} (${causeText || message})`,
        fix: badPort
          ? 'use another port: fetch refuses to connect to this one (a "bad port" of the Fetch standard)'
          : `start the libSQL server (sqld --http-listen-addr <host>:<port>) or correct the host and port in PLACEMENT_DB_URL; it must be reachable from ${reachableFrom}`,
      };
    }
    return {
      problem: `the libSQL server at ${shown} answered with an error (${message})`,
      fix: 'check that PLACEMENT_DB_URL is the libSQL server (sqld or Turso) placement-edge keeps its data in, and its log',
    };
  }
  return {
    problem: `cannot open the database ${shown} (${message})`,
    fix: 'check that the file and its directory are writable, the volume is not full or read-only, and the file is a placement-edge database',
  };
}
