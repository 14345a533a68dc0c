// Shared counters on the capacity dashboard (docs/extensions-gpu.md): each
// provider's counters with their load now, present only on a provider that has
// some; a counter over its total puts the provider over capacity. A
// DashboardProviderPart of diagnostics/dashboard-repo.ts, checked where the
// extension object names it.
import * as z from 'zod';
import { keysJsonSql } from '../../placement/capacity.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { COUNTERS } from './declaration.js';

const count = z.number().int();

export const countersDashboard = {
  /** counters.js: a bar per counter under the provider's inventory. */
  assets: DASHBOARD_ASSETS,
  provider: {
    key: 'counters',
    schema: z
      .record(z.string(), z.object({ total: count, load: count.describe('sum over classes of usage x consumption') }))
      .optional()
      .describe('shared counters (extension: partitionable devices), only on a provider that has them'),
    jsonSql: (provider: string) => keysJsonSql(COUNTERS, provider),
    present(json: unknown) {
      const counters = ((json ?? []) as [string, number, number][])
        .map(([name, total, load]) => ({ name, total, load }))
        .sort((a, b) => a.name.localeCompare(b.name));
      if (!counters.length) return undefined;
      return {
        value: Object.fromEntries(counters.map((c) => [c.name, { total: c.total, load: c.load }])),
        over: counters.some((c) => c.load > c.total),
      };
    },
  },
};
