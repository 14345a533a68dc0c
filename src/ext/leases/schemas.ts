// The body and answers of /ext/leases, checked with zod at the edge; GET
// /openapi.json describes them from here.
import * as z from 'zod';
import { MAX_LEASE_SECONDS } from '../allocation-ends.js';

export const putLeaseSchema = z.object({ seconds: z.int().min(1).max(MAX_LEASE_SECONDS) }).strict();

export const LeaseResponse = z.object({
  consumer_uuid: z.string(),
  seconds: z.int(),
  expires_at: z.string(),
  consumer_generation: z.int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const LeaseListResponse = z.object({ leases: z.array(LeaseResponse) });
