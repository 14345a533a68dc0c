// GET /allocation_candidates (1.10+): where a request's resources could be
// claimed. Parsing lives in candidates/parse.ts, the search in candidates/.
import { Hono } from 'hono';
import type { AppEnv } from '../../http/env.js';
import { queryParams } from '../../http/validate.js';
import { ApiError, webobDetail } from '../../http/api-error.js';
import { CandidateRequestError } from '../candidates/errors.js';
import { findAllocationCandidates, type CandidatesBody } from '../candidates/index.js';
import { parseCandidateRequest } from '../candidates/parse.js';
import { authorize, requireVersion, resource, setCacheHeaders } from '../middleware.js';

export const allocationCandidateRoutes = new Hono<AppEnv>();

resource(allocationCandidateRoutes, '/allocation_candidates', {
  GET: async (c) => {
    requireVersion(c, 'ALLOCATION_CANDIDATES');
    authorize(c, 'placement:allocation_candidates:list');
    const { config, store } = c.var.deps;
    let body: CandidatesBody;
    try {
      body = await findAllocationCandidates(store.client, parseCandidateRequest(queryParams(c), c.var.mv), c.var.mv, {
        randomize: config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
        maxCandidates: config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
      });
    } catch (error) {
      // The engine's domain error becomes placement's 400 envelope, wording and code unchanged.
      if (error instanceof CandidateRequestError) throw new ApiError(400, webobDetail(400, error.message), { code: error.code });
      throw error;
    }
    // Candidates reflect usage right now, so they are never cacheable.
    setCacheHeaders(c);
    return c.json(body);
  },
});
