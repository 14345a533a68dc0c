// The HTTP side of a claim, shared by the allocation routes and the reshaper:
// a body part as a ConsumerClaim for this microversion, and each claim refusal
// worded as the endpoint does upstream. (Edge code: it reads the request.)
import { ApiError, ErrorCode, webobDetail } from '../../http/api-error.js';
import type { AppContext } from '../../http/env.js';
import { atLeast } from './middleware.js';
import { AllocationFailure, type ConsumerClaim } from '../repo/allocations.js';
import { claimAllocations } from '../writes/claims.js';
import { isoNow } from '../repo/lookups.js';
import type { ConsumerAllocationsBody } from '../schemas/allocations.js';
import { ConsumerGenerationMismatch, ProviderMissing } from '../writes/refusals.js';

/**
 * Words a claim failure as the endpoint does upstream: unknown classes are
 * 400 with `notFoundPrefix`, inventory and capacity problems 409
 * "Unable to allocate inventory: ...", generation conflicts 409
 * concurrent_update. Anything else is returned unchanged.
 */
export function claimFailureToHttp(err: unknown, notFoundPrefix: string): unknown {
  if (err instanceof ProviderMissing) return new ApiError(400, webobDetail(400, err.message));
  if (err instanceof ConsumerGenerationMismatch) {
    return new ApiError(409, webobDetail(409, err.message), { code: ErrorCode.CONCURRENT_UPDATE });
  }
  if (!(err instanceof AllocationFailure)) return err;
  if (err.kind === 'unknown_class') return new ApiError(400, webobDetail(400, `${notFoundPrefix}${err.message}`));
  return new ApiError(409, webobDetail(409, `Unable to allocate inventory: ${err.message}`));
}

/** Writes claims: one read batch, one guarded write batch (see writes/claims.ts). */
export async function writeClaims(c: AppContext, claims: ConsumerClaim[], notFoundPrefix: string): Promise<void> {
  const { deps } = c.var;
  try {
    await claimAllocations(deps.store, claims, {
      requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
      now: isoNow(deps.clock),
    });
  } catch (err) {
    throw claimFailureToHttp(err, notFoundPrefix);
  }
}

/** A consumer's part of a dict-form body as a claim, with the fields this microversion knows. */
export function claimFromBody(c: AppContext, uuid: string, body: ConsumerAllocationsBody): ConsumerClaim {
  const allocations: ConsumerClaim['allocations'] = {};
  for (const [rp, entry] of Object.entries(body.allocations)) allocations[rp] = entry.resources;
  return {
    uuid,
    allocations,
    projectId: body.project_id,
    userId: body.user_id,
    generation: atLeast(c, 'CONSUMER_GENERATION') ? (body.consumer_generation ?? null) : undefined,
    consumerType: atLeast(c, 'CONSUMER_TYPES') ? body.consumer_type : undefined,
  };
}
