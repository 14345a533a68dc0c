// The dashboard summary's query string, checked at the edge.
import { z } from 'zod';
import type { SummaryQuery } from './repo.js';

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
