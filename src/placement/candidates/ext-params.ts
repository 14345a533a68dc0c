// Extension query parameters of GET /allocation_candidates (and of
// /ext/headroom, which takes the same query): each starts with `ext_`, is
// taken out before upstream's parser sees the query, and acts only when given.
// Any other `ext_` name is left in, so upstream's parser refuses it with its
// usual 400 (a stock request never changes meaning).
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';
import { invalidQuery } from './errors.js';
import { parseFirstOf } from './first-of.js';
import { type CandidateRequest, parseCandidateRequest } from './parse.js';

/** A taint key: as Kubernetes label keys, an optional DNS prefix and `/`, then a name (1-63 of [A-Za-z0-9._-]). */
export const TAINT_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/** The extension parameters this service knows, with what each sets on the request. */
const EXT_PARAMS: Record<string, (values: string[], request: CandidateRequest) => void> = {
  ext_tolerate(values, request) {
    const keys = values.flatMap((v) => v.split(',').map((k) => k.trim()));
    const bad = keys.find((k) => !TAINT_KEY.test(k));
    if (bad !== undefined) {
      throw invalidQuery(`ext_tolerate: '${bad.slice(0, 200)}' is not a taint key (KEY[,KEY...], each as a Kubernetes label key)`);
    }
    request.tolerate = [...new Set([...(request.tolerate ?? []), ...keys])];
  },
  // Project limits (src/ext/limits): the route answers none when the request alone would cross the caller's limit.
  ext_within_limits(values, request) {
    const value = values.at(-1)!;
    if (value !== 'true' && value !== 'false') throw invalidQuery(`ext_within_limits: '${value.slice(0, 20)}' is not true or false`);
    request.withinLimits = value === 'true';
  },
  // Prioritized alternatives among granular groups (first-of.ts).
  ext_first_of(values, request) {
    request.firstOf = parseFirstOf(values, request.groups);
  },
};

/** Extension parameters that need a microversion: below it they are left to upstream's parser, which refuses them as any unknown key. */
const SINCE: Record<string, (mv: Microversion) => boolean> = {
  ext_first_of: (mv) => mv.atLeast(MV.GRANULAR),
};

/** parseCandidateRequest, plus the extension parameters it knows. */
export function parseCandidateRequestWithExt(query: Record<string, string[]>, mv: Microversion): CandidateRequest {
  const stock: Record<string, string[]> = {};
  const ext: [string, string[]][] = [];
  for (const [key, values] of Object.entries(query)) {
    if (Object.hasOwn(EXT_PARAMS, key) && (SINCE[key]?.(mv) ?? true)) ext.push([key, values]);
    else stock[key] = values;
  }
  const request = parseCandidateRequest(stock, mv);
  for (const [key, values] of ext) EXT_PARAMS[key]!(values, request);
  return request;
}
