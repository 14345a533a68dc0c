// The installed extensions' query parameters of GET /allocation_candidates
// (and of what takes the same query: headroom, why-no-host, gangs): each is
// taken out before upstream's parser sees the query and acts only when given.
// Any other `ext_` name is left in, so upstream's parser refuses it with its
// usual 400 (a stock request never changes meaning). The parameters, their
// grammar and their meaning belong to the extensions (hooks.ts CandidateParam).
import type { Microversion } from '../../microversion.js';
import type { CandidateParam } from './hooks.js';
import { type CandidateRequest, parseCandidateRequest } from './parse.js';

const NONE: ReadonlyMap<string, CandidateParam> = new Map();

/** parseCandidateRequest, plus the parameters `params` declare (those `mv` takes), in query order. */
export function parseCandidateRequestWithExt(
  query: Record<string, string[]>,
  mv: Microversion,
  params: ReadonlyMap<string, CandidateParam> = NONE,
): CandidateRequest {
  const stock: Record<string, string[]> = {};
  const given: [CandidateParam, string[]][] = [];
  for (const [key, values] of Object.entries(query)) {
    const param = params.get(key);
    if (param && (param.since === undefined || mv.atLeast(param.since))) given.push([param, values]);
    else stock[key] = values;
  }
  const request = parseCandidateRequest(stock, mv);
  if (!given.length) return request;
  const ext = new Map<string, unknown>();
  request.ext = ext;
  for (const [param, values] of given) ext.set(param.name, param.parse(values, request));
  return request;
}
