// The wire shapes of /ext/sites (docs/sites.md), as zod schemas.
import * as z from 'zod';
import { heldAllocationsSchema } from '../holds/schemas.js';

const RESOURCE_CLASS = /^[A-Z0-9_]+$/;
const UUID = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

/** A site's name: what PLACEMENT_SITE says on the site's instance. */
export const SITE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const putSiteSchema = z
  .object({
    /** The site's providers: every provider of the slice must be a member. */
    aggregate: z.string().regex(UUID),
    /** Its capacity slice: held for the site alone, with no end. */
    capacity: heldAllocationsSchema,
    /**
     * With project limits on: per project, per resource class, the part of the project's limit
     * taken out for the site (its limit slices); absent: none.
     */
    limits: z
      .record(
        z.string().min(1).max(255),
        z.record(
          z.string().regex(RESOURCE_CLASS),
          z
            .number()
            .int()
            .min(0)
            .max(2 ** 31 - 1),
        ),
      )
      .optional(),
  })
  .strict();
export type PutSiteBody = z.infer<typeof putSiteSchema>;

const byProjectAndClass = z.record(z.string(), z.record(z.string(), z.number()));

export const SiteResponse = z.object({
  site: z.string(),
  hold_uuid: z.string(),
  generation: z.number(),
  capacity: z.record(z.string(), z.object({ resources: z.record(z.string(), z.number()) })),
  limits: byProjectAndClass,
});

const bySliceKey = z.record(z.string(), z.object({ resources: z.record(z.string(), z.number()) }));

/** GET /ext/site: a site instance's link to the primary, its slice and its journal. */
export const SiteStatusResponse = z.object({
  site: z.string(),
  link: z.enum(['connected', 'partitioned']),
  since: z.string(),
  primary_last_answered: z.string().nullable(),
  slice: bySliceKey,
  slice_remaining: bySliceKey,
  /** Per project and class: the site's limit slices, and what is left of them as the site knows it. */
  limit_slices: byProjectAndClass,
  limit_slices_remaining: byProjectAndClass,
  journal_depth: z.number(),
  last_replayed_seq: z.number(),
  replay_conflicts: z.number(),
  refreshed_at: z.string().nullable(),
});
