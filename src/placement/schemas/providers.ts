// Request bodies for /resource_providers, per placement/schemas/resource_provider.py.
import { z } from 'zod';
import { uuidString } from './allocations.js';


const name = z.string().min(1).max(200);

export const createProviderV1_0 = z.object({ name, uuid: uuidString.optional() }).strict();
export const createProviderV1_14 = createProviderV1_0.extend({ parent_provider_uuid: uuidString.nullable().optional() }).strict();

export const updateProviderV1_0 = z.object({ name }).strict();
export const updateProviderV1_14 = updateProviderV1_0.extend({ parent_provider_uuid: uuidString.nullable().optional() }).strict();
