// The HTTP side of a claim, shared by the allocation routes and the reshaper:
// a body part as a ConsumerClaim for this microversion, and the claim written
// with this request's options. (Edge code: it reads the request.)
import type { AppContext } from '../../http/env.js';
import { atLeast } from './middleware.js';
import type { ConsumerClaim } from '../repo/allocations.js';
import { claimAllocations } from '../writes/claims.js';
import { isoNow } from '../repo/lookups.js';
import { type ConsumerAllocationsBody, isListForm, putAllocationsSchema } from '../schemas/allocations.js';
import { readBody } from '../../http/validate.js';
import type { ClaimEndpoint } from '../writes/refusals.js';
import type { ClaimAlongside, ClaimParams } from '../writes/kernel.js';
import { invalid } from '../../errors.js';

/**
 * Writes claims: one read batch, one guarded write batch (see writes/claims.ts);
 * refusals come worded for `endpoint`; `alongside` is written in that batch.
 */
export async function writeClaims(
  c: AppContext,
  claims: ConsumerClaim[],
  endpoint: ClaimEndpoint,
  alongside?: ClaimAlongside,
): Promise<void> {
  const deps = c.get('deps');
  const now = isoNow(deps.clock);
  const params = claimParams(c, deps.writeHooks.claimParams);
  let all = alongside;
  if (params.size > 0) {
    const nowMs = Date.parse(now);
    all = [...deps.writeHooks.claimParams.flatMap((p) => p.alongside(params, claims, nowMs)), ...(alongside ?? [])];
  }
  await claimAllocations(deps, claims, {
    requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
    now,
    endpoint,
    alongside: all,
    params,
  });
}

/**
 * The request's `ext_` query parameters (upstream takes none on a claim):
 * each must be one an installed extension declares (400 otherwise), once.
 */
function claimParams(c: AppContext, declared: readonly ClaimParams[]): ReadonlyMap<string, string> {
  const params = new Map<string, string>();
  const url = c.req.url;
  if (!url.includes('ext_')) return params;
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (!name.startsWith('ext_')) continue;
    if (!declared.some((p) => p.names.includes(name)))
      throw invalid(`Invalid query string parameters: '${name}' is not a parameter of this request`);
    if (values.length !== 1) throw invalid(`Invalid query string parameters: '${name}' given more than once`);
    params.set(name, values[0]!.trim());
  }
  return params;
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

/** PUT /allocations/{uuid}'s body as a claim, in either form this microversion takes. */
export async function putClaim(c: AppContext, uuid: string): Promise<ConsumerClaim> {
  const body = await readBody(c, putAllocationsSchema(c.get('mv')));
  if (isListForm(body)) {
    // 1.0-1.11: a list of {resource_provider: {uuid}, resources}; project and user from 1.8.
    const allocations: ConsumerClaim['allocations'] = {};
    for (const item of body.allocations) allocations[item.resource_provider.uuid] = item.resources;
    const owner = 'project_id' in body ? body : { project_id: undefined, user_id: undefined };
    return { uuid, allocations, projectId: owner.project_id, userId: owner.user_id };
  }
  return claimFromBody(c, uuid, body);
}
