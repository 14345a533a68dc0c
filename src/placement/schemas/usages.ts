// Query string of GET /usages, as placement/schemas/usage.py: project_id
// required, user_id optional, consumer_type from 1.38; nothing else.
import * as z from 'zod';
import type { Microversion } from '../../microversion.js';
import { badQuery, failedValidating, validationMessage } from '../../shared/validation-messages.js';
import { MV } from '../versions.js';

const externalId = z.string().min(1).max(255);

export const usagesQueryV1_9 = z.object({ project_id: externalId, user_id: externalId.optional() }).strict();
export const usagesQueryV1_38 = usagesQueryV1_9.extend({ consumer_type: z.string().min(1).max(255).optional() }).strict();

/** The query schema per microversion (the handler's and GET /openapi.json's). */
export const usagesQuerySchema = (mv: Microversion) => (mv.atLeast(MV.CONSUMER_TYPES) ? usagesQueryV1_38 : usagesQueryV1_9);

export interface UsagesQuery {
  projectId: string;
  userId?: string | undefined;
  consumerType?: string | undefined;
}

/** Checks the query (last value wins, as webob's dict(req.GET)); 400 in jsonschema's words. */
export function parseUsagesQuery(params: Record<string, string[]>, mv: Microversion): UsagesQuery {
  const single: Record<string, string> = {};
  for (const [key, values] of Object.entries(params)) single[key] = values[values.length - 1] ?? '';
  const schema = usagesQuerySchema(mv);
  const result = schema.safeParse(single);
  if (!result.success) {
    const first = result.error.issues[0];
    throw badQuery(`${validationMessage(result.error, single)}${first ? failedValidating(first, single) : ''}`);
  }
  const data: { project_id: string; user_id?: string | undefined; consumer_type?: string | undefined } = result.data;
  return { projectId: data.project_id, userId: data.user_id, consumerType: data.consumer_type };
}
