// The query parameters of an allocation-candidates request, as GET
// /openapi.json lists them for every route that takes one
// (/allocation_candidates, /diagnostics/allocation_candidates, /ext/headroom):
// the parser's own key table at each microversion, and the extensions'.
import type { QueryParam } from '../../http/route-table.js';
import type { Microversion } from '../../microversion.js';
import { allowedKeys } from '../candidates/parse.js';

/**
 * Where the installed extensions' parameters (index.ts CandidateParam) stand
 * in the list: the document (src/openapi/operations.ts) puts them here, as
 * the engine takes them from the extensions the composition root installs.
 */
export const EXTENSION_PARAMS: QueryParam = { name: 'ext_*', extensionParams: true };

export const candidateQuery = (mv: Microversion): QueryParam[] => {
  const keys = allowedKeys(mv);
  return [
    EXTENSION_PARAMS,
    ...keys.plain.map((name) => ({ name })),
    ...keys.patterns.map((pattern) => {
      const numbered = pattern.includes('[1-9]');
      return {
        name: `${/^\^([a-z_]+)/.exec(pattern)?.[1] ?? pattern}${numbered ? '{N}' : '{suffix}'}`,
        pattern,
        description: numbered
          ? 'a numbered request group (N = 1, 2, ...)'
          : 'a request group: the key with an optional suffix of 1-64 characters [a-zA-Z0-9_-]',
      };
    }),
  ];
};
