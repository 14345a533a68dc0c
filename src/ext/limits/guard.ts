// Project limits on the write side (extension, issue 35), as the write
// kernel's claim guard (placement/writes/hooks.ts), so every claim path
// (PUT /allocations/{c}, POST /allocations, POST /reshaper) is checked in its
// own write transaction, with no round trip of its own:
//  - the one-batch claim (new consumers): a condition in its guard statement,
//    as of the write: each (project, class) its consumers hold, with a
//    limit, is within it (sql.ts). Refused, the claim takes the ordinary path,
//    which words the refusal.
//  - the ordinary path: the snapshot reads the limits of the claimed
//    projects, their usage and what the claimed consumers hold now; the
//    decision refuses a claim that RAISES a project's usage of a class over
//    its limit (a limit lowered below usage: what is held stays, shrinking
//    and moving pass, growth is refused), and a grant that raises usage adds
//    a check to the write batch (the usage as of the write still within the
//    limit), since provider generations do not protect a project's usage
//    across providers: two racing claims never both pass.
// Usage counts the consumers of the configured types (INSTANCE, and untyped
// ones, by default; MIGRATION not, so a resize counts once).
import { conflict } from '../../errors.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID } from '../../placement/repo/consumers.js';
import type { ClaimGuard, ClaimView, WriteExtension } from '../../placement/writes/hooks.js';
import { crossesLimit, limitOf } from './model.js';
import type { ProjectLimits } from './service.js';
import { limitSetOfResult, usageKey, usageTable } from './sql.js';

export const LIMIT_EXCEEDED = 'placement.ext.limit_exceeded';

/** Where refusals are counted (Deps.metrics has it). */
export interface LimitMetrics {
  limitRefusals: { inc(labels: string[]): void };
}

const projectOf = (claim: { projectId?: string | null }) => claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID;

export function limitsClaimGuard(limits: ProjectLimits, metrics: LimitMetrics): ClaimGuard {
  const { sql, counting } = limits;
  const counts = (type: string | null) => (type === null ? counting.untyped : counting.types.includes(type));
  return {
    name: 'project limits',
    snapshotStatements: (_providers, consumers, claims) => sql.snapshot([...new Set(claims.map(projectOf))], consumers),
    decider: ([limitRows, usageRows, heldRows]) => {
      const limitSet = limitSetOfResult(limitRows!);
      const usage = usageTable(usageRows!);
      const held = usageTable(heldRows!);
      return (view: ClaimView) => {
        // What the claim asks, per (its consumers' project, class), among the consumers that count.
        const asked = new Map<string, { project: string; resourceClass: string; amount: number }>();
        const byConsumer = new Map(view.claims.map((c) => [c.uuid, c]));
        for (const entry of view.entries) {
          const claim = byConsumer.get(entry.consumer)!;
          const type = claim.consumerType ?? view.consumers.get(claim.uuid)?.type ?? null;
          if (!counts(type)) continue;
          const project = projectOf(claim);
          const k = usageKey(project, entry.resourceClass);
          const sum = asked.get(k) ?? { project, resourceClass: entry.resourceClass, amount: 0 };
          sum.amount += entry.amount;
          asked.set(k, sum);
        }
        const raised: [string, string][] = [];
        for (const [k, { project, resourceClass, amount }] of asked) {
          const limit = limitOf(limitSet, project, resourceClass);
          if (limit === undefined) continue;
          const before = usage.get(k) ?? 0;
          const after = before - (held.get(k) ?? 0) + amount;
          if (!crossesLimit(before, after, limit)) {
            // A grant that raises usage holds only while the usage as of the write stays within the limit.
            if (after > before) raised.push([project, resourceClass]);
            continue;
          }
          metrics.limitRefusals.inc([resourceClass]);
          return {
            error: conflict(
              `Unable to create allocation for '${resourceClass}' for project '${project}': it would exceed the project's limit. ` +
                `(limit ${limit}, usage ${before}, requested ${after - before})`,
              LIMIT_EXCEEDED,
            ),
          };
        }
        return raised.length > 0 ? { checks: [sql.raisedWithinLimits(raised)] } : null;
      };
    },
    holdsSql: (consumers) => sql.newConsumersWithinLimitsSql(consumers),
  };
}

export function limitsWrites(limits: ProjectLimits, metrics: LimitMetrics): WriteExtension {
  return { claimGuards: [limitsClaimGuard(limits, metrics)] };
}
