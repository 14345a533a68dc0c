// The audit: what an operator should look at or clean up, in one paged JSON
// report (GET /diagnostics/audit), and the repairs judged safe to apply
// without a human reading each case (POST /diagnostics/audit/repairs):
// deleting consumers that hold nothing and re-sending dead-lettered events.
// Over-capacity providers and ARQ findings are only reported: fixing them
// means moving or deleting workloads, which is the operator's call.
//
// The extensions add their own checks (Extension.audit, an AuditCheck): their
// statements join one read batch, their entries fill the report's
// `extensions` object and their sections are paged like the service's own.
import type { InStatement, ResultSet } from '@libsql/client';
import * as z from 'zod';
import type { BatchReader, DataStore } from '../db/client.js';
import { JobMessage } from '../jobs/messages.js';
import type { JobQueue } from '../jobs/queue.js';
import * as repo from './audit-repo.js';

/** The service's own sections; the extensions' follow them (in the summary, `section` and the CLI). */
export const AUDIT_SECTIONS = [
  'over_capacity_providers',
  'empty_consumers',
  'stuck_arqs',
  'bound_arqs_without_allocation',
  'dead_letters',
] as const;
export type AuditSection = (typeof AUDIT_SECTIONS)[number];

export const AUDIT_MAX_LIMIT = 1000;

/** A value of the report's `extensions` object: what an extension reports of itself. */
export interface AuditEntry {
  /** Its key in `extensions`. */
  readonly name: string;
  /** Its schema, described (GET /openapi.json). */
  readonly schema: z.ZodType;
  /** Its statements in the extensions' one read batch, at `nowMs`. */
  statements(nowMs: number): InStatement[];
  /** Its value from its statements' results; `reader` for what they lead it to read next. */
  value(results: ResultSet[], reader: BatchReader, nowMs: number): unknown;
}

/** A paged list of findings an extension adds beside the service's own sections. */
export interface AuditFindings<Item> {
  /** A value of `section`, the key of its total in `summary` and of its page in the report. */
  readonly name: string;
  /** Its heading in placement-admin audit. */
  readonly title: string;
  readonly item: z.ZodType<Item>;
  readonly description: string;
  statements(nowMs: number): InStatement[];
  /** Every finding, in marker order, from its statements' results. */
  items(results: ResultSet[]): Item[];
  /** Where a page ending with `item` is continued (a finding's marker sorts after the markers before it). */
  marker(item: Item): string;
  /** Its findings as placement-admin prints them. */
  readonly table: { headers: string[]; rows(item: Item): string[][] };
}

/** What one extension adds to the audit (Extension.audit). */
export interface AuditCheck {
  readonly entries?: readonly AuditEntry[];
  readonly findings?: readonly AuditFindings<unknown>[];
}

/** Every section name: the service's own, then the extensions' findings. */
export const auditSections = (checks: readonly AuditCheck[]): string[] => [
  ...AUDIT_SECTIONS,
  ...checks.flatMap((c) => c.findings ?? []).map((f) => f.name),
];

/** Query of GET /diagnostics/audit, given the installed checks. A marker continues one section, so it needs `section`. */
export const auditQuery = (checks: readonly AuditCheck[]) =>
  z
    .strictObject({
      section: z.enum(auditSections(checks) as [string, ...string[]]).optional(),
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
export type AuditQuery = z.infer<ReturnType<typeof auditQuery>>;

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

const count = z.number().int();

/** The report's schema, given the installed checks: the service's sections, then the extensions' findings and entries. */
export function auditReportSchema(checks: readonly AuditCheck[]) {
  const findings = checks.flatMap((c) => c.findings ?? []);
  const entries = checks.flatMap((c) => c.entries ?? []);
  return z.object({
    generated_at: Iso,
    binding_timeout_s: count,
    summary: z
      .object({
        over_capacity_providers: count,
        empty_consumers: count,
        stuck_arqs: count,
        bound_arqs_without_allocation: count,
        dead_letters: count,
        ...Object.fromEntries(findings.map((f) => [f.name, count])),
      })
      .describe('totals over the whole database, not just this page'),
    over_capacity_providers: pageOf(OverCapacityProvider).optional(),
    empty_consumers: pageOf(EmptyConsumer).optional(),
    stuck_arqs: pageOf(StuckArq).optional(),
    bound_arqs_without_allocation: pageOf(ArqFinding).optional(),
    dead_letters: pageOf(DeadLetter).optional(),
    ...Object.fromEntries(findings.map((f) => [f.name, pageOf(f.item).optional().describe(f.description)])),
    extensions: z
      .object(Object.fromEntries(entries.map((e) => [e.name, e.schema])))
      .describe('the extensions (docs/extensions.md): the lease sweep and the taints in force'),
  });
}

/** A page of one section. */
export interface AuditPage<Item = unknown> {
  items: Item[];
  next_marker: string | null;
}

/** The report; the extensions' findings are pages under their names (auditPageOf). */
export type AuditReport = z.infer<ReturnType<typeof auditReportSchema>> & { summary: Record<string, number> };

/** The page of `section` in `report`, if it holds one. */
export const auditPageOf = (report: AuditReport, section: string): AuditPage | undefined =>
  (report as unknown as Record<string, AuditPage | undefined>)[section];

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

/** The extensions' checks, their statements in one read batch: their entries, and each findings list whole. */
async function readChecks(reader: BatchReader, checks: readonly AuditCheck[], nowMs: number) {
  const entries = checks.flatMap((c) => c.entries ?? []);
  const findings = checks.flatMap((c) => c.findings ?? []);
  const statements = [...entries, ...findings].map((read) => read.statements(nowMs));
  const results = statements.some((s) => s.length) ? await reader.readBatch(statements.flat()) : [];
  let next = 0;
  const own = statements.map((s) => results.slice(next, (next += s.length)));
  const values = await Promise.all(entries.map((entry, i) => entry.value(own[i]!, reader, nowMs)));
  return {
    entries: Object.fromEntries(entries.map((entry, i) => [entry.name, values[i]])),
    findings: findings.map((list, i) => ({ list, all: list.items(own[entries.length + i]!) })),
  };
}

/** The report: totals for every section, and a page of each asked-for section (all when none is named). */
export async function auditReport(ctx: AuditContext, query: AuditQuery, checks: readonly AuditCheck[] = []): Promise<AuditReport> {
  const db = ctx.store.db;
  const nowMs = ctx.now.getTime();
  const cutoff = new Date(nowMs - ctx.bindingTimeoutS * 1000).toISOString();
  const wanted = (s: string) => query.section === undefined || query.section === s;
  const marker = query.marker ?? null;
  const { limit } = query;

  const [overCapacity, empty, stuck, bound, dead, extensions] = await Promise.all([
    repo.countOverCapacityProviders(db),
    repo.countEmptyConsumers(db),
    repo.countStuckArqs(db, cutoff),
    repo.countBoundArqsWithoutAllocation(db),
    repo.countDeadLetters(db),
    readChecks(ctx.store, checks, nowMs),
  ]);
  const report = {
    extensions: extensions.entries,
    generated_at: ctx.now.toISOString(),
    binding_timeout_s: ctx.bindingTimeoutS,
    summary: {
      over_capacity_providers: overCapacity,
      empty_consumers: empty,
      stuck_arqs: stuck,
      bound_arqs_without_allocation: bound,
      dead_letters: dead,
    } as Record<string, number>,
  } as AuditReport;
  const pages = report as unknown as Record<string, AuditPage>;
  for (const { list, all } of extensions.findings) {
    report.summary[list.name] = all.length;
    if (!wanted(list.name)) continue;
    const after = query.section === list.name && marker !== null ? all.filter((item) => list.marker(item) > marker) : all;
    const items = after.slice(0, limit);
    pages[list.name] = { items, next_marker: after.length > limit ? list.marker(items.at(-1)) : null };
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
