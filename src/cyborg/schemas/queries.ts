// Query strings of the Cyborg list and delete endpoints. Handlers parse the
// first value of each key with these (as Hono's c.req.query() gives them);
// comma lists may also repeat the key, which queryList() joins. Messages are
// Cyborg's own, unchanged.
import * as z from 'zod';
import { DomainError } from '../../errors.js';

const commaList = (what: string) => z.string().describe(`comma-separated ${what}; the key may repeat`);

export const DeviceProfileListQuery = z.object({ name: commaList('device profile names').optional() });
export const DeviceProfileDeleteQuery = z.object({ value: commaList('device profile names') });

export const ArqListQuery = z.object({
  instance: z.string().describe('instance uuid').optional(),
  bind_state: z
    .literal('resolved', { error: (issue) => `Invalid bind_state ${String(issue.input)}: only 'resolved' is supported.` })
    .describe('"resolved": answer 423 while an ARQ of the instance is still binding')
    .optional(),
});
export const ArqDeleteQuery = z.object({
  arqs: commaList('ARQ uuids').optional(),
  instance: z.string().describe('instance uuid; exactly one of arqs and instance').optional(),
});

export const DeviceListQuery = z.object({
  hostname: z.string().describe('host name').optional(),
  type: z.string().describe('device type, e.g. GPU or FPGA').optional(),
});

export const OUTBOX_STATES = ['pending', 'done', 'dead'] as const;
export const OutboxQuery = z.object({
  state: z
    .enum(OUTBOX_STATES, { error: (issue) => `Invalid state ${String(issue.input)}: one of ${OUTBOX_STATES.join(', ')}.` })
    .optional(),
});

/** `query` checked against `schema`; a 400 with the schema's own message when it fails. */
export function parseQuery<S extends z.ZodType>(schema: S, query: Record<string, string>): z.infer<S> {
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw new DomainError('invalid', parsed.error.issues[0]?.message ?? 'Invalid query string');
  return parsed.data;
}
