// PUT /resource_providers/{uuid}/aggregates: a bare list before 1.19, an
// object with the provider generation from 1.19.
import * as z from 'zod';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';
import { uuidString } from './providers.js';

const aggregateList = z.array(uuidString).superRefine((list, ctx) => {
  if (new Set(list).size !== list.length) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(list)} has non-unique elements`, params: { keyword: 'uniqueItems' } });
  }
});

export const putAggregatesV1_1 = aggregateList;
export const putAggregatesV1_19 = z
  .object({
    aggregates: aggregateList,
    resource_provider_generation: z.int(),
  })
  .strict();

/** The body schema per microversion (the handler's and GET /openapi.json's). */
export const putAggregatesSchema = (mv: Microversion) => (mv.atLeast(MV.AGGREGATE_GENERATION) ? putAggregatesV1_19 : putAggregatesV1_1);
