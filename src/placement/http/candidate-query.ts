// The query parameters of an allocation-candidates request, as GET
// /openapi.json lists them for every route that takes one
// (/allocation_candidates, /diagnostics/allocation_candidates, /ext/headroom):
// the parser's own key table at each microversion, and the extensions'.
import type { QueryParam } from '../../http/route-table.js';
import type { Microversion } from '../../microversion.js';
import { allowedKeys } from '../candidates/parse.js';
import { MV } from '../versions.js';

/** The extension parameters GET /allocation_candidates (and headroom, why-no-host) accept at `mv`, each only when given. */
export function extCandidateParams(mv: Microversion): QueryParam[] {
  return [
    {
      name: 'ext_tolerate',
      description: 'extension: taint keys (KEY[,KEY...]) whose NoSchedule/NoExecute taints this request tolerates',
    },
    // Granular groups only (1.25+).
    ...(mv.atLeast(MV.GRANULAR)
      ? [
          {
            name: 'ext_first_of',
            description:
              'extension (docs/extensions-gpu.md): granular group suffixes in order of preference, e.g. _H100,_A100,_T4; per tree only ' +
              'the first that can be satisfied there with every other group is used (mappings name it). Repeatable: independent choices.',
          },
        ]
      : []),
  ];
}

export const candidateQuery = (mv: Microversion): QueryParam[] => {
  const keys = allowedKeys(mv);
  return [
    ...extCandidateParams(mv),
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
