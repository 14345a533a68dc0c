// Shared counters as the candidates engine sees them: the read hook derived
// from the declaration (declaration.ts), installed by extension.ts. Its
// statement joins the request's read batch (no extra round trip, the same
// snapshot as the trees' usage) and its capacity rule is the one condition
// counters add to a choice.
import { constraintReadHook, type LoadedKeys } from '../../placement/capacity.js';
import { COUNTERS } from './declaration.js';

/** provider id -> its counters with the loads current usage puts on them (empty on a cloud without counters). */
export type CandidateCounters = Map<number, LoadedKeys>;

export const candidateCounters = constraintReadHook(COUNTERS);
