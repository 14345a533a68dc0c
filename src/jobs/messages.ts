// Queue messages and outbox payloads. Messages outlive deploys, so both are
// parsed with zod when consumed. A message only names an outbox row: the row
// is the source of truth, which makes re-delivery harmless.
import * as z from 'zod';

export const BindJobMessage = z.object({ type: z.literal('bind'), outboxId: z.number().int() });
export const NovaEventMessage = z.object({ type: z.literal('nova-event'), outboxId: z.number().int() });
export const JobMessage = z.discriminatedUnion('type', [BindJobMessage, NovaEventMessage]);
export type JobMessage = z.infer<typeof JobMessage>;
export type JobTopic = JobMessage['type'];

/** Bind work: the ARQs one PATCH moved to BindStarted (or that a programmed device now unblocks). */
export const BindPayload = z.object({ arqIds: z.array(z.number().int()).min(1) });
export type BindPayload = z.infer<typeof BindPayload>;

/** One Nova request: the events of one instance, batched. */
export const NovaEventPayload = z.object({
  instanceUuid: z.string(),
  events: z.array(z.object({ arqUuid: z.string(), status: z.enum(['completed', 'failed']) })).min(1),
});
export type NovaEventPayload = z.infer<typeof NovaEventPayload>;

export const PAYLOADS = { bind: BindPayload, 'nova-event': NovaEventPayload } as const;
