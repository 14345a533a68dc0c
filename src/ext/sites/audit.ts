// The sites' limit slices in the audit (GET /diagnostics/audit, its
// `extensions.site_limit_slices`): every (project, class) whose usage and what
// the sites still hold of it exceed its limit, by the slices' declaration
// (declaration.ts, placement/capacity.ts overSetAsideStatement). Every write is
// admitted against the rule; what breaks it anyway is what the operator let in
// (a limit lowered under the slices). Reported, never repaired.
import type { ResultSet } from '@libsql/client';
import * as z from 'zod';
import { SITE_LIMIT_SLICE as S } from '../../db/columns.js';
import { overSetAsideStatement, type SetAsideConstraint } from '../../placement/capacity.js';

export const SiteLimitSlicesAudit = z.object({
  over_limit: z.array(
    z.object({
      project_id: z.string(),
      resource_class: z.string(),
      usage: z.number().describe("the project's usage of the class (the limits' ledger)"),
      held_for_sites: z.number().describe('what the sites still hold of their slices (slice less what each drew)'),
      limit: z.number(),
    }),
  ),
});

/** The audit of the slices declared by `d`. */
export const siteLimitSlicesAudit = (d: SetAsideConstraint) => ({
  entries: [
    {
      name: 'site_limit_slices',
      schema: SiteLimitSlicesAudit.describe("where the sites' limit slices and a project's usage exceed its limit (docs/sites.md)"),
      statements: () => [overSetAsideStatement(d)],
      value: ([rows]: ResultSet[]) => ({
        over_limit: rows!.rows.map((r) => ({
          project_id: String(r[S.project]),
          resource_class: String(r[S.resourceClass]),
          usage: Number(r.used),
          held_for_sites: Number(r.set_aside),
          limit: Number(r.bound),
        })),
      }),
    },
  ],
});
