// Shared counters (docs/extensions-gpu.md) as the candidates engine sees them: a read hook
// (placement/candidates/hooks.ts) installed by the composition root. Its
// statement joins the request's read batch (no extra round trip, the same
// snapshot as the trees' usage) and its capacity rule is the one condition
// counters add to a choice: sum over classes of usage x consumption <= total.
import type { CandidateReadHook, CapacityRule, Piece, TakenView } from '../../placement/candidates/hooks.js';
import { candidateCountersOf, candidateCountersStatement, type LoadedCounters } from './sql.js';

/** provider id -> its counters with the loads current usage puts on them (empty on a cloud without counters). */
export type CandidateCounters = Map<number, LoadedCounters>;

/** Whether `pieces` (several may share a provider) fit the counters of their providers beside current usage. */
function countersFit(table: CandidateCounters, pieces: readonly Piece[], taken?: TakenView): boolean {
  for (let p = 0; p < pieces.length; p += 1) {
    const providerId = pieces[p]!.providerId;
    const counters = table.get(providerId);
    if (!counters) continue;
    const loads = counters.loads.slice();
    const add = (classId: number, amount: number) => {
      const perCounter = counters.consumption.get(classId);
      if (perCounter) for (let i = 0; i < perCounter.length; i += 1) loads[i]! += amount * perCounter[i]!;
    };
    if (taken) taken.forEachOn(providerId, add);
    else for (const piece of pieces) if (piece.providerId === providerId) add(piece.classId, piece.amount);
    for (let i = 0; i < loads.length; i += 1) if (loads[i]! > counters.totals[i]!) return false;
  }
  return true;
}

export const candidateCounters: CandidateReadHook<CandidateCounters> = {
  name: 'shared counters',
  statement: (classNames) => candidateCountersStatement([...classNames]),
  read: (result) => candidateCountersOf(result),
  capacityRule: (table): CapacityRule | null => (table.size ? { fits: (pieces, taken) => countersFit(table, pieces, taken) } : null),
};
