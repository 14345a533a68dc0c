// Device taints (extension, docs/extensions.md) as the candidates engine sees
// them: a read hook (placement/candidates/index.ts) the composition root
// installs. Its statement joins each read batch of a request (no extra round
// trip; an empty indexed table on a cloud without taints) and reads every
// taint that keeps a provider out of candidates; the request's tolerations
// (`ext_tolerate`) turn them into the providers the search leaves out.
import type { InStatement, ResultSet } from '@libsql/client';
import { type CandidateReadHook, extParam } from '../../placement/candidates/index.js';
import { TAINT } from '../../db/columns.js';
import { tolerateParam } from './params.js';

/** Effects that keep a provider out of allocation candidates (NoExecute implies NoSchedule, as in Kubernetes). */
export const EXCLUDING_EFFECTS = ['NoSchedule', 'NoExecute'] as const;

/** provider id -> keys of its excluding taints. */
export type ProviderTaints = Map<number, string[]>;

const taintStatement = (): InStatement => ({
  sql: `SELECT COALESCE(json_group_array(json_array(${TAINT.resourceProviderId}, ${TAINT.key})), '[]') FROM ext_provider_taints
    WHERE ${TAINT.effect} IN (${EXCLUDING_EFFECTS.map((e) => `'${e}'`).join(', ')})`,
  args: [],
});

function taintsOf(result: ResultSet | undefined): ProviderTaints {
  const taints: ProviderTaints = new Map();
  const rows = JSON.parse(String(result?.rows[0]?.[0] ?? '[]')) as [number, string][];
  for (const [provider, key] of rows) {
    const keys = taints.get(provider);
    if (keys) keys.push(key);
    else taints.set(provider, [key]);
  }
  return taints;
}

/** The providers a request leaves out: those with an excluding taint whose key it does not tolerate. */
export function excludedProviders(taints: ProviderTaints, tolerate: readonly string[]): Set<number> {
  const excluded = new Set<number>();
  for (const [provider, keys] of taints) if (keys.some((key) => !tolerate.includes(key))) excluded.add(provider);
  return excluded;
}

const NO_TOLERATIONS: readonly string[] = [];

export const taintFilter: CandidateReadHook<ProviderTaints> = {
  name: 'device taints',
  statement: taintStatement,
  read: taintsOf,
  excludeProviders: (taints, request) => excludedProviders(taints, extParam(request, tolerateParam) ?? NO_TOLERATIONS),
};
