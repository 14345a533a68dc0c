// The dashboard summary's query string, checked at the edge.
import * as z from 'zod';
import type { DashboardExtensions, DashboardProviderPart, SummaryQuery } from '../diagnostics/dashboard-repo.js';

/** Where a class counts as nearly full when the request names no `over`. */
export const DEFAULT_THRESHOLD_PERCENT = 80;
export const MAX_PER_PAGE = 200;

const positiveInt = (fallback: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a positive integer')
    .transform(Number)
    .pipe(z.number().int().min(1).max(max))
    .optional()
    .transform((v) => v ?? fallback);
const text = z
  .string()
  .trim()
  .max(255)
  .optional()
  .transform((v) => (v ? v : undefined));

export const SummaryQueryString = z.strictObject({
  page: positiveInt(1),
  per_page: positiveInt(25, MAX_PER_PAGE),
  project_page: positiveInt(1),
  project_per_page: positiveInt(20, MAX_PER_PAGE),
  name: text,
  trait: text,
  aggregate: text,
  resource_class: text,
  over: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a percentage')
    .transform(Number)
    .pipe(z.number().max(1000))
    .optional(),
});
export type SummaryQueryString = z.infer<typeof SummaryQueryString>;

export function toSummaryQuery(q: SummaryQueryString): SummaryQuery {
  return {
    filter: { name: q.name, trait: q.trait, aggregate: q.aggregate, resourceClass: q.resource_class, overPercent: q.over },
    limit: q.per_page,
    offset: (q.page - 1) * q.per_page,
    projectLimit: q.project_per_page,
    projectOffset: (q.project_page - 1) * q.project_per_page,
    thresholdPercent: q.over ?? DEFAULT_THRESHOLD_PERCENT,
  };
}

// --- GET /dashboard/api/summary: the answer -----------------------------------
const count = z.number().int();

export interface DashboardProviderJson {
  uuid: string;
  name: string;
  generation: number;
  parent_provider_uuid: string | null;
  /** The provider matched the filters (an unmatched one is shown for its matched descendants). */
  matched: boolean;
  /** Some class's usage exceeds its capacity. */
  over_capacity: boolean;
  resources: Record<string, z.infer<typeof Usage>>;
  traits: string[];
  aggregates: string[];
  children: DashboardProviderJson[];
  /** What the installed extensions show of it (DashboardProviderPart), under their keys. */
  [extension: string]: unknown;
}

/** One resource class's use on a provider (and, extended, the summary's worst class). */
const Usage = z.object({
  total: count,
  reserved: count,
  allocation_ratio: z.number(),
  capacity: z.number().describe('(total - reserved) x allocation_ratio'),
  used: count,
  free: z.number(),
});

/** A provider with its children, and what the installed extensions show of it. */
function dashboardProvider(parts: readonly DashboardProviderPart[]): z.ZodType<DashboardProviderJson> {
  const provider: z.ZodType<DashboardProviderJson> = z
    .object({
      uuid: z.string(),
      name: z.string(),
      generation: count,
      parent_provider_uuid: z.string().nullable(),
      matched: z.boolean(),
      over_capacity: z.boolean(),
      resources: z.record(z.string(), Usage),
      traits: z.array(z.string()),
      aggregates: z.array(z.string()),
      ...Object.fromEntries(parts.map((part) => [part.key, part.schema])),
      get children() {
        return z.array(provider);
      },
    })
    .meta({ id: 'DashboardProvider' });
  return provider;
}

/** The summary's schema, given what the installed extensions add. */
export const summaryResponseSchema = (extensions: DashboardExtensions) =>
  z.object({
    generated_at: z.string(),
    threshold_percent: z.number(),
    attention: z
      .object({
        total: count.describe('providers over capacity or used above threshold_percent in some class'),
        items: z.array(
          z.object({
            uuid: z.string(),
            name: z.string(),
            root_name: z.string().nullable().describe("the tree's root, for a child provider"),
            over_capacity: z.boolean(),
            worst: Usage.extend({ resource_class: z.string(), percent: z.number().describe('used / capacity x 100') }),
          }),
        ),
      })
      .describe('the most used providers first (over capacity first), at most 20'),
    providers: z.object({
      page: count,
      per_page: count,
      total_providers: count,
      matching_providers: count,
      total_trees: count,
      trees: z.array(dashboardProvider(extensions.providers)).describe('root providers of the page, children nested'),
    }),
    resource_classes: z.record(
      z.string(),
      z.object({
        providers: count,
        capacity: z.number(),
        used: count,
        free: z.number(),
        over_threshold: count.describe('providers whose usage of this class is above threshold_percent'),
        over_capacity: count.describe('providers whose usage of this class exceeds capacity'),
      }),
    ),
    projects: z.object({
      page: count,
      per_page: count,
      total: count,
      items: z.array(
        z.object({
          project_id: z.string(),
          project_name: z
            .string()
            .nullable()
            .describe("Keystone's name for the project, where the service uses Keystone and the viewer may read it"),
          consumers: count,
          usages: z.record(z.string(), count),
        }),
      ),
    }),
    ...Object.fromEntries(extensions.sections.map((section) => [section.key, section.schema])),
    accelerators: z.object({
      arqs_by_state: z.record(z.string(), count),
      outbox_by_state: z.record(z.string(), count),
      devices_by_status: z.record(z.string(), count),
    }),
  });
/** The summary; the extensions' sections are under their keys. */
export type SummaryResponse = z.infer<ReturnType<typeof summaryResponseSchema>> & Record<string, unknown>;
