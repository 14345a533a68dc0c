// Request bodies for /resource_providers, per placement/schemas/resource_provider.py.
import * as z from 'zod';
import { pyRepr } from '../../shared/validation-messages.js';
import { isUuidLike } from '../../shared/uuid.js';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';

/** jsonschema's "uuid" format as placement checks it (uuidutils.is_uuid_like). */
export const uuidString = z.string().superRefine((value, ctx) => {
  if (!isUuidLike(value)) {
    ctx.addIssue({ code: 'custom', message: `${pyRepr(value)} is not a 'uuid'`, params: { keyword: 'format' } });
  }
});

const name = z.string().min(1).max(200);

export const createProviderV1_0 = z.object({ name, uuid: uuidString.optional() }).strict();
export const createProviderV1_14 = createProviderV1_0.extend({ parent_provider_uuid: uuidString.nullable().optional() }).strict();

export const updateProviderV1_0 = z.object({ name }).strict();
export const updateProviderV1_14 = updateProviderV1_0.extend({ parent_provider_uuid: uuidString.nullable().optional() }).strict();

// The body schema per microversion: handlers validate with these, GET /openapi.json describes them.
export const createProviderSchema = (mv: Microversion) => (mv.atLeast(MV.NESTED) ? createProviderV1_14 : createProviderV1_0);
export const updateProviderSchema = (mv: Microversion) => (mv.atLeast(MV.NESTED) ? updateProviderV1_14 : updateProviderV1_0);
