// ext_first_of=_A,_B,... (1.25+; KEP-4816's prioritized list on Placement's
// granular groups): the request's alternatives (CandidateRequest.alternatives,
// which the engine searches: placement/candidates/alternatives.ts). Suffixes of
// real groups, worded as upstream words same_subtree's; a group may be an
// alternative in one list only. Repeatable: independent choices.
import { pyRepr } from '../../shared/validation-messages.js';
import { badCandidateRequest } from '../../placement/candidates/errors.js';
import type { CandidateParam } from '../../placement/candidates/index.js';
import type { RequestGroup } from '../../placement/candidates/parse.js';
import { MV } from '../../placement/versions.js';

/** Most combinations of alternatives one request may ask for (each is a search of a tree). */
const MAX_FIRST_OF_VARIANTS = 64;

export function parseFirstOf(values: string[], groups: RequestGroup[]): string[][] {
  const lists: string[][] = [];
  const known = new Set(groups.map((g) => g.suffix));
  const seen = new Set<string>();
  for (const value of values) {
    const suffixes = value.split(',').map((s) => s.trim());
    if (suffixes.includes('')) {
      throw badCandidateRequest(
        'Empty string (unsuffixed group) can not be specified in `ext_first_of` query param.',
        'placement.query.bad_value',
      );
    }
    const missing = suffixes.filter((s) => !known.has(s));
    if (missing.length) {
      throw badCandidateRequest(
        `Real suffixes should be specified in \`ext_first_of\`: ${pyRepr(missing)} not found in ${pyRepr([...known])}.`,
        'placement.query.bad_value',
      );
    }
    const repeated = suffixes.filter((s, i) => seen.has(s) || suffixes.indexOf(s) !== i);
    if (repeated.length) {
      throw badCandidateRequest(
        `A group may be named once in \`ext_first_of\`: ${pyRepr([...new Set(repeated)])}.`,
        'placement.query.bad_value',
      );
    }
    for (const s of suffixes) seen.add(s);
    lists.push(suffixes);
  }
  const variants = lists.reduce((n, list) => n * list.length, 1);
  if (variants > MAX_FIRST_OF_VARIANTS) {
    throw badCandidateRequest(
      `\`ext_first_of\` may combine at most ${MAX_FIRST_OF_VARIANTS} alternatives; these lists combine ${variants}.`,
      'placement.query.bad_value',
    );
  }
  return lists;
}

export const firstOfParam: CandidateParam<string[][]> = {
  name: 'ext_first_of',
  // Granular groups only.
  since: MV.GRANULAR,
  description:
    'extension (docs/extensions-gpu.md): granular group suffixes in order of preference, e.g. _H100,_A100,_T4; per tree only ' +
    'the first that can be satisfied there with every other group is used (mappings name it). Repeatable: independent choices.',
  parse(values, request) {
    const lists = parseFirstOf(values, request.groups);
    request.alternatives = lists;
    return lists;
  },
};
