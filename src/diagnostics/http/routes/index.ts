// Operator diagnostics, mounted at /diagnostics with Placement's middleware
// (microversion, auth, error envelope) by src/app.ts. Admin only: every route
// passes DIAGNOSTICS_RULE.
//   /diagnostics/audit, /diagnostics/audit/repairs      audit.ts
//   /diagnostics/allocation_candidates                  candidates.ts ("why no host")
import type { RouteTable } from '../../../http/route-table.js';
import type { AuditCheck } from '../../audit.js';
import type { DiagnosisPart } from '../../why-no-host.js';
import { auditRoutes } from './audit.js';
import { candidateDiagnosisRoutes } from './candidates.js';

/** Read by the router and by GET /openapi.json, in this order; the audit with the installed extensions' checks, why no host with their questions. */
export const diagnosticsRoutes = (audits: readonly AuditCheck[], diagnoses: readonly DiagnosisPart[]): RouteTable[] => [
  auditRoutes(audits),
  candidateDiagnosisRoutes(diagnoses),
];
