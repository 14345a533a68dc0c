// The taints in the audit (GET /diagnostics/audit, its `extensions.tainted_providers`):
// how many providers a taint keeps out of candidates (GET /ext/taints lists
// them). An AuditEntry of diagnostics/audit.ts, checked where the extension
// object names it.
import type { ResultSet } from '@libsql/client';
import * as z from 'zod';
import { TAINT } from '../../db/columns.js';

export const taintsAudit = {
  entries: [
    {
      name: 'tainted_providers',
      schema: z.int().describe('providers with a taint (GET /ext/taints lists them with their consumers)'),
      statements: () => [{ sql: `SELECT count(DISTINCT ${TAINT.resourceProviderId}) AS n FROM ext_provider_taints`, args: [] }],
      value: ([tainted]: ResultSet[]) => Number(tainted!.rows[0]!.n),
    },
  ],
};
