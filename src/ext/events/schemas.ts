// The wire shapes of GET /ext/events (docs/events.md): the query, and the
// answer (GET /openapi.json describes it from here).
import * as z from 'zod';

/** The longest a long poll waits: below the usual idle timeouts of proxies. */
export const MAX_WAIT_SECONDS = 60;
export const MAX_EVENTS = 1000;

const KIND = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

export const eventsQuery = z
  .object({
    after: z
      .string()
      .regex(/^\d{1,15}$/, 'after must be a sequence number')
      .transform(Number)
      .default(0)
      .describe('answer the events after this sequence (the last one read, or next_after)'),
    kind: z
      .string()
      .transform((v) => v.split(',').filter((k) => k !== ''))
      .refine((kinds) => kinds.every((k) => KIND.test(k)), 'kind is a comma-separated list of kinds or prefixes (preemption)')
      .default([])
      .describe('kinds, or their prefixes: preemption matches preemption.created'),
    wait: z
      .string()
      .regex(/^\d{1,3}$/, 'wait must be whole seconds')
      .transform(Number)
      .refine((s) => s <= MAX_WAIT_SECONDS, `wait is at most ${MAX_WAIT_SECONDS} seconds`)
      .default(0)
      .describe('seconds to wait for a first event when there is none yet (a long poll)'),
    limit: z
      .string()
      .regex(/^\d{1,4}$/, 'limit must be a whole number')
      .transform(Number)
      .refine((n) => n >= 1 && n <= MAX_EVENTS, `limit is from 1 to ${MAX_EVENTS}`)
      .default(100),
  })
  .strict();

export const EventPageResponse = z.object({
  events: z.array(
    z.object({
      seq: z.int(),
      kind: z.string(),
      at: z.string(),
      body: z.record(z.string(), z.unknown()),
    }),
  ),
  next_after: z.int(),
  oldest_seq: z.int().nullable(),
  missed: z.boolean(),
});
