// Project limits on the write side (extension, docs/limits.md), as the write
// kernel's claim guard (placement/writes/kernel.ts) derived from their
// declaration (declaration.ts, placement/capacity.ts projectConstraintGuard),
// so every claim path (PUT /allocations/{c}, POST /allocations, POST /reshaper)
// is checked in its own write transaction, with no round trip of its own.
// Usage counts the consumers of the configured types (INSTANCE, and untyped
// ones, by default; MIGRATION not, so a resize counts once).
import { conflict } from '../../errors.js';
import { projectConstraintGuard } from '../../placement/capacity.js';
import type { ClaimGuard, WriteExtension } from '../../placement/writes/kernel.js';
import type { ProjectLimits } from './service.js';
import { countsConsumer } from './sql.js';

export const LIMIT_EXCEEDED = 'placement.ext.limit_exceeded';

/** Where refusals are counted (Deps.metrics has it). */
export interface LimitMetrics {
  limitRefusals: { inc(labels: string[]): void };
}

export function limitsClaimGuard(limits: ProjectLimits, metrics: LimitMetrics): ClaimGuard {
  const { counting } = limits;
  return projectConstraintGuard(limits.declaration, {
    counts: (type) => countsConsumer(counting, type),
    refusal: ({ project, resourceClass, bound, usage, requested }) => {
      metrics.limitRefusals.inc([resourceClass]);
      return {
        error: conflict(
          `Unable to create allocation for '${resourceClass}' for project '${project}': it would exceed the project's limit. ` +
            `(limit ${bound}, usage ${usage}, requested ${requested})`,
          LIMIT_EXCEEDED,
        ),
      };
    },
  });
}

export function limitsWrites(limits: ProjectLimits, metrics: LimitMetrics): WriteExtension {
  return { claimGuards: [limitsClaimGuard(limits, metrics)] };
}
