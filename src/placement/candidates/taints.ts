// Device taints (extension, docs/extensions.md) as the candidate engine sees
// them: one statement at the end of each research batch (no extra round
// trip; an empty indexed table on a cloud without taints) reads every taint
// that keeps a provider out of candidates, and the request's tolerations
// (`ext_tolerate`) turn them into the set of providers the search leaves out.
import type { InStatement, ResultSet } from '@libsql/client';
import { TAINT } from '../../db/columns.js';

/** Effects that keep a provider out of allocation candidates (NoExecute implies NoSchedule, as in Kubernetes). */
export const EXCLUDING_EFFECTS = ['NoSchedule', 'NoExecute'] as const;

/** provider id -> keys of its excluding taints. */
export type ProviderTaints = Map<number, string[]>;

export const taintStatement = (): InStatement => ({
  sql: `SELECT COALESCE(json_group_array(json_array(${TAINT.resourceProviderId}, ${TAINT.key})), '[]') FROM ext_provider_taints
    WHERE ${TAINT.effect} IN (${EXCLUDING_EFFECTS.map((e) => `'${e}'`).join(', ')})`,
  args: [],
});

export function taintsOf(result: ResultSet | undefined): ProviderTaints {
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
