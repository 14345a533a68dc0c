// The holds' rule checked by the audit (GET /diagnostics/audit, docs/holds.md):
// every (provider, class) a hold not over holds, at each instant the rule is
// checked (model.ts checkInstants), allocations that will still exist then +
// the holds then <= capacity. Every write is admitted against it; what breaks
// it anyway is what the operator let in (a hold with ignore_allocations over
// claims that have not gone, an inventory shrunk under held capacity).
// An AuditEntry of diagnostics/audit.ts, checked where the extension object names it.
import type { ResultSet } from '@libsql/client';
import * as z from 'zod';
import type { BatchReader } from '../../db/client.js';
import { HOLD, HOLD_AMOUNT, RP } from '../../db/columns.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { holdsAt, splitKey, violations } from './model.js';
import { readWorld } from './repo.js';

/** Most violations listed (the count is exact). */
const MAX_LISTED = 100;

export const HoldsAudit = z.object({
  active: z.int().describe('holds in their window now'),
  upcoming: z.int().describe('holds whose window is ahead'),
  violation_count: z.int().describe('(provider, class, instant) where allocations that will exist then and the holds exceed capacity'),
  violations: z.array(
    z.object({
      resource_provider_uuid: z.string(),
      resource_class: z.string(),
      at: z.string(),
      load: z.number(),
      capacity: z.number(),
      holds: z.array(z.string()),
    }),
  ),
});
export type HoldsAudit = z.infer<typeof HoldsAudit>;

const HELD_PROVIDERS = `SELECT DISTINCT p.${RP.uuid} AS provider, h.${HOLD.startMs} <= ? AS active, h.${HOLD.uuid} AS hold FROM ext_holds h
  JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid} JOIN resource_providers p ON p.${RP.id} = ha.${HOLD_AMOUNT.resourceProviderId}
  WHERE h.${HOLD.endMs} > ?`;

/** The holds not over and their providers, then the rule over those providers' world (a second read). */
async function readHoldsAudit(d: SetAsideConstraint, [rows]: ResultSet[], reader: BatchReader, nowMs: number): Promise<HoldsAudit> {
  const providers = [...new Set(rows!.rows.map((r) => String(r.provider)))];
  const byHold = new Map(rows!.rows.map((r) => [String(r.hold), Number(r.active) === 1]));
  const active = [...byHold.values()].filter(Boolean).length;
  const audit: HoldsAudit = { active, upcoming: byHold.size - active, violation_count: 0, violations: [] };
  if (!providers.length) return audit;
  const { world } = await readWorld(d, reader, providers, nowMs);
  const found = violations(world);
  audit.violation_count = found.length;
  audit.violations = found.slice(0, MAX_LISTED).map((v) => {
    const { provider, resourceClass } = splitKey(v.key);
    return {
      resource_provider_uuid: provider,
      resource_class: resourceClass,
      at: new Date(v.atMs).toISOString(),
      load: v.load,
      capacity: v.capacity,
      holds: holdsAt(world.holds, v.key, v.atMs).map((h) => h.id),
    };
  });
  return audit;
}

/** The audit of the holds declared by `d`. */
export const holdsAudit = (d: SetAsideConstraint) => ({
  entries: [
    {
      name: 'holds',
      schema: HoldsAudit.describe('the holds (docs/holds.md) and where their rule is broken (reported, never repaired)'),
      statements: (nowMs: number) => [{ sql: HELD_PROVIDERS, args: [nowMs, nowMs] }],
      value: (results: ResultSet[], reader: BatchReader, nowMs: number) => readHoldsAudit(d, results, reader, nowMs),
    },
  ],
});
