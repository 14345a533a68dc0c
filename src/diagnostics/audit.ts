// The audit: what an operator should look at or clean up, in one paged JSON
// report (GET /diagnostics/audit), and the repairs judged safe to apply
// without a human reading each case (POST /diagnostics/audit/repairs):
// deleting consumers that hold nothing and re-sending dead-lettered events.
// Over-capacity providers and ARQ findings are only reported: fixing them
// means moving or deleting workloads, which is the operator's call.
import { z } from 'zod';
import type { DataStore } from '../db/client.js';
import { JobMessage } from '../jobs/messages.js';
import type { JobQueue } from '../jobs/queue.js';
import { ExtensionsAudit, extensionsAudit } from '../ext/audit.js';
import { overCounterProviders } from '../ext/counters/audit.js';
import * as repo from './audit-repo.js';

export const AUDIT_SECTIONS = [
  'over_capacity_providers',
  'empty_consumers',
  'stuck_arqs',
  'bound_arqs_without_allocation',
  'dead_letters',
  // Extension (docs/extensions-gpu.md): providers whose shared counters are exceeded.
  'over_counter_providers',
] as const;
export type AuditSection = (typeof AUDIT_SECTIONS)[number];

export const AUDIT_MAX_LIMIT = 1000;

/** Query of GET /diagnostics/audit. A marker continues one section, so it needs `section`. */
export const AuditQuery = z
  .strictObject({
    section: z.enum(AUDIT_SECTIONS).optional(),
    marker: z.string().min(1).max(255).optional(),
    limit: z.coerce.number().int().min(1).max(AUDIT_MAX_LIMIT).default(100),
  })
  .refine((q) => q.marker === undefined || q.section !== undefined, {
    message: 'marker requires section',
    path: ['marker'],
  })
  .refine((q) => q.section !== 'dead_letters' || q.marker === undefined || /^\d+$/.test(q.marker), {
    message: 'a dead_letters marker is an id',
    path: ['marker'],
  });
export type AuditQuery = z.infer<typeof AuditQuery>;

const Iso = z.string().describe('ISO 8601 timestamp');
const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    next_marker: z.string().nullable().describe('pass with `section` as `marker` for the next page; null on the last'),
  });

const OverCapacityProvider = z.object({
  uuid: z.string(),
  name: z.string(),
  root_provider_uuid: z.string(),
  resources: z.array(
    z.object({
      resource_class: z.string(),
      total: z.number().int(),
      reserved: z.number().int(),
      allocation_ratio: z.number(),
      capacity: z.number().int().describe('(total - reserved) * allocation_ratio'),
      used: z.number().int(),
    }),
  ),
  consumers: z.array(z.object({ consumer_uuid: z.string(), resources: z.record(z.string(), z.number().int()) })),
});

const EmptyConsumer = z.object({
  uuid: z.string(),
  project_id: z.string(),
  user_id: z.string(),
  consumer_type: z.string().nullable(),
  generation: z.number().int(),
  created_at: Iso,
  updated_at: Iso.nullable(),
});

const ArqFinding = z.object({
  uuid: z.string(),
  state: z.string(),
  hostname: z.string().nullable(),
  device_rp_uuid: z.string().nullable(),
  instance_uuid: z.string().nullable(),
  device_profile_name: z.string(),
  bind_started_at: Iso.nullable(),
  updated_at: Iso.nullable(),
});

const StuckArq = ArqFinding.extend({ stuck_for_s: z.number().int() });

const DeadLetter = z.object({
  id: z.number().int(),
  topic: z.string(),
  payload: z.unknown(),
  attempts: z.number().int(),
  last_error: z.string().nullable(),
  created_at: Iso,
  updated_at: Iso.nullable(),
});

export const AuditReport = z.object({
  generated_at: Iso,
  binding_timeout_s: z.number().int(),
  summary: z
    .object({
      over_capacity_providers: z.number().int(),
      empty_consumers: z.number().int(),
      stuck_arqs: z.number().int(),
      bound_arqs_without_allocation: z.number().int(),
      dead_letters: z.number().int(),
      over_counter_providers: z.number().int(),
    })
    .describe('totals over the whole database, not just this page'),
  over_capacity_providers: pageOf(OverCapacityProvider).optional(),
  empty_consumers: pageOf(EmptyConsumer).optional(),
  stuck_arqs: pageOf(StuckArq).optional(),
  bound_arqs_without_allocation: pageOf(ArqFinding).optional(),
  dead_letters: pageOf(DeadLetter).optional(),
  over_counter_providers: pageOf(
    z.object({
      uuid: z.string(),
      counters: z.array(
        z.object({ name: z.string(), total: z.number().int(), load: z.number().int().describe('sum over classes of usage x consumption') }),
      ),
    }),
  )
    .optional()
    .describe('providers whose allocations exceed a shared counter (docs/extensions-gpu.md); listed, never repaired'),
  extensions: ExtensionsAudit.describe('the extensions (docs/extensions.md): the lease sweep and the taints in force'),
});
export type AuditReport = z.infer<typeof AuditReport>;

export interface AuditContext {
  store: DataStore;
  now: Date;
  bindingTimeoutS: number;
}

function parsedPayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const arqView = (a: repo.ArqFinding) => ({
  uuid: a.uuid,
  state: a.state,
  hostname: a.hostname,
  device_rp_uuid: a.deviceRpUuid,
  instance_uuid: a.instanceUuid,
  device_profile_name: a.deviceProfileName,
  bind_started_at: a.bindStartedAt,
  updated_at: a.updatedAt,
});

/** The report: totals for every section, and a page of each asked-for section (all when none is named). */
export async function auditReport(ctx: AuditContext, query: AuditQuery): Promise<AuditReport> {
  const db = ctx.store.db;
  const nowMs = ctx.now.getTime();
  const cutoff = new Date(nowMs - ctx.bindingTimeoutS * 1000).toISOString();
  const wanted = (s: AuditSection) => query.section === undefined || query.section === s;
  const marker = query.marker ?? null;
  const { limit } = query;

  const [overCapacity, empty, stuck, bound, dead, overCounters] = await Promise.all([
    repo.countOverCapacityProviders(db),
    repo.countEmptyConsumers(db),
    repo.countStuckArqs(db, cutoff),
    repo.countBoundArqsWithoutAllocation(db),
    repo.countDeadLetters(db),
    overCounterProviders(ctx.store, query.section === 'over_counter_providers' ? marker : null, limit),
  ]);
  const report: AuditReport = {
    extensions: await extensionsAudit(ctx.store, nowMs),
    generated_at: ctx.now.toISOString(),
    binding_timeout_s: ctx.bindingTimeoutS,
    summary: {
      over_capacity_providers: overCapacity,
      empty_consumers: empty,
      stuck_arqs: stuck,
      bound_arqs_without_allocation: bound,
      dead_letters: dead,
      over_counter_providers: overCounters.total,
    },
  };
  if (wanted('over_counter_providers')) {
    report.over_counter_providers = { items: overCounters.items, next_marker: overCounters.nextMarker };
  }
  if (wanted('over_capacity_providers')) {
    const page = await repo.overCapacityProviders(db, marker, limit);
    report.over_capacity_providers = {
      items: page.items.map((p) => ({
        uuid: p.uuid,
        name: p.name,
        root_provider_uuid: p.rootProviderUuid,
        resources: p.resources.map((r) => ({
          resource_class: r.resourceClass,
          total: r.total,
          reserved: r.reserved,
          allocation_ratio: r.allocationRatio,
          capacity: r.capacity,
          used: r.used,
        })),
        consumers: p.consumers.map((c) => ({ consumer_uuid: c.consumerUuid, resources: c.resources })),
      })),
      next_marker: page.nextMarker,
    };
  }
  if (wanted('empty_consumers')) {
    const page = await repo.emptyConsumers(db, marker, limit);
    report.empty_consumers = {
      items: page.items.map((c) => ({
        uuid: c.uuid,
        project_id: c.projectId,
        user_id: c.userId,
        consumer_type: c.consumerType,
        generation: c.generation,
        created_at: c.createdAt,
        updated_at: c.updatedAt,
      })),
      next_marker: page.nextMarker,
    };
  }
  if (wanted('stuck_arqs')) {
    const page = await repo.stuckArqs(db, cutoff, marker, limit);
    report.stuck_arqs = {
      items: page.items.map((a) => ({
        ...arqView(a),
        stuck_for_s: a.bindStartedAt ? Math.floor((nowMs - Date.parse(a.bindStartedAt)) / 1000) : 0,
      })),
      next_marker: page.nextMarker,
    };
  }
  if (wanted('bound_arqs_without_allocation')) {
    const page = await repo.boundArqsWithoutAllocation(db, marker, limit);
    report.bound_arqs_without_allocation = { items: page.items.map(arqView), next_marker: page.nextMarker };
  }
  if (wanted('dead_letters')) {
    const page = await repo.deadLetters(db, marker === null ? null : Number(marker), limit);
    report.dead_letters = {
      items: page.items.map((d) => ({
        id: d.id,
        topic: d.topic,
        payload: parsedPayload(d.payload),
        attempts: d.attempts,
        last_error: d.lastError,
        created_at: d.createdAt,
        updated_at: d.updatedAt,
      })),
      next_marker: page.nextMarker,
    };
  }
  return report;
}

/** Body of POST /diagnostics/audit/repairs: the exact targets, as a dry run printed them. */
export const AuditRepairsRequest = z.strictObject({
  dry_run: z.boolean(),
  delete_empty_consumers: z.array(z.string().min(1).max(255)).max(AUDIT_MAX_LIMIT).default([]),
  resend_dead_letters: z.array(z.number().int().min(1)).max(AUDIT_MAX_LIMIT).default([]),
});
export type AuditRepairsRequest = z.infer<typeof AuditRepairsRequest>;

export const AuditRepairsResult = z.object({
  dry_run: z.boolean(),
  deleted_empty_consumers: z.array(z.string()).describe('deleted (or, in a dry run, that would be)'),
  resent_dead_letters: z.array(z.number().int()).describe('reset to pending and re-sent (or, in a dry run, that would be)'),
  skipped: z.object({
    empty_consumers: z.array(z.string()).describe('not found, or holding allocations again'),
    dead_letters: z.array(z.number().int()).describe('not found, or no longer dead'),
  }),
});
export type AuditRepairsResult = z.infer<typeof AuditRepairsResult>;

export interface RepairContext extends AuditContext {
  jobs: JobQueue;
}

/**
 * Applies (or, dry, only checks) the safe repairs. Each target is re-checked
 * by the statement that repairs it, in one write batch (one round trip), so
 * a consumer that got allocations since the dry run is left alone. Re-sent rows are announced to the queue after commit.
 */
export async function applyAuditRepairs(ctx: RepairContext, request: AuditRepairsRequest): Promise<AuditRepairsResult> {
  const consumerUuids = [...new Set(request.delete_empty_consumers)];
  const deadIds = [...new Set(request.resend_dead_letters)];
  let consumers: string[];
  let resent: number[];
  if (request.dry_run) {
    [consumers, resent] = await Promise.all([
      repo.findEmptyConsumers(ctx.store.db, consumerUuids),
      repo.findDeadLetters(ctx.store.db, deadIds),
    ]);
  } else {
    // One write batch, one round trip: each statement re-checks its targets as of the write.
    const [gone, reset] =
      consumerUuids.length || deadIds.length
        ? await ctx.store.writeBatch([
            repo.deleteEmptyConsumersStatement(ctx.store.db, consumerUuids),
            repo.requeueDeadLettersStatement(ctx.store.db, deadIds, ctx.now.getTime()),
          ])
        : [];
    const deleted = (gone?.rows ?? []).map((r) => String(r.uuid)).sort();
    const requeued = (reset?.rows ?? []).map((r) => ({ id: Number(r.id), topic: String(r.topic) })).sort((a, b) => a.id - b.id);
    for (const row of requeued) {
      const message = JobMessage.safeParse({ type: row.topic, outboxId: row.id });
      // A topic this version does not know stays pending for the drain to report.
      if (message.success) await ctx.jobs.send(message.data);
    }
    consumers = deleted;
    resent = requeued.map((r) => r.id);
  }
  return {
    dry_run: request.dry_run,
    deleted_empty_consumers: consumers,
    resent_dead_letters: resent,
    skipped: {
      empty_consumers: consumerUuids.filter((u) => !consumers.includes(u)).sort(),
      dead_letters: deadIds.filter((id) => !resent.includes(id)).sort((a, b) => a - b),
    },
  };
}
