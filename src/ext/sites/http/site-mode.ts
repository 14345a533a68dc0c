// Site mode on the HTTP side (docs/sites.md): while the site is partitioned,
// Placement's requests stop here. Claims (PUT /allocations/{c}, POST
// /allocations) and deletes of the slice's consumers are decided by the site
// (../site-mode.ts), a slice's consumer is read from the local file, GET
// /ext/site answers as ever, and every other request is answered 503 naming
// the partition. Connected, a claim all on the slice is drawn from it on the
// primary; every other request passes through untouched.
import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../../../http/api-error.js';
import type { AppContext, AppEnv } from '../../../http/env.js';
import { readBody } from '../../../http/validate.js';
import { claimFromBody, putClaim } from '../../../placement/http/claim-requests.js';
import { atLeast, authorize } from '../../../placement/http/middleware.js';
import { presentConsumerAllocations } from '../../../placement/present/allocations.js';
import type { ConsumerClaim } from '../../../placement/repo/allocations.js';
import { postAllocationsSchema } from '../../../placement/schemas/allocations.js';
import { consumerOfPath, parseUuidLike } from '../../../shared/uuid.js';
import { invalid } from '../../../errors.js';
import { SITE_PARTITIONED, SiteCutOff, type SiteMode } from '../site-mode.js';

const CONSUMER_PATH = /^\/allocations\/([^/]+)$/;

const unavailable = (err: SiteCutOff) => new ApiError(503, err.message, { code: SITE_PARTITIONED });

/**
 * Connected: a claim all on the site's slice is drawn from it on the primary (true: written), so the
 * slice tracks what the site uses; anything else, or a claim the primary refuses that way, is left to
 * the ordinary route (false), which reads the body again (read here from a copy).
 */
async function drawnWhileConnected(c: AppContext, mode: SiteMode): Promise<boolean> {
  const { method, path } = c.req;
  const consumerPath = CONSUMER_PATH.exec(path)?.[1];
  const post = method === 'POST' && path === '/allocations' && atLeast(c, 'POST_ALLOCATIONS');
  const put = method === 'PUT' && consumerPath !== undefined;
  if ((!post && !put) || c.req.url.includes('ext_')) return false;
  const original = c.req.raw;
  let claims: ConsumerClaim[];
  try {
    c.req.raw = original.clone();
    if (post) {
      authorize(c, 'placement:allocations:manage');
      const body = await readBody(c, postAllocationsSchema(c.var.mv));
      claims = Object.entries(body).map(([uuid, part]) => claimFromBody(c, uuid, part));
    } else {
      authorize(c, 'placement:allocations:update');
      const uuid = parseUuidLike(decodeURIComponent(consumerPath!).trim());
      if (!uuid) return false;
      claims = [await putClaim(c, uuid)];
    }
  } catch {
    // The route answers it, in its own words.
    return false;
  } finally {
    c.req.raw = original;
  }
  return mode.drawConnected(claims, atLeast(c, 'CONSUMER_GENERATION'), post ? 'allocations' : 'consumer_allocations');
}

export function siteModeMiddleware(mode: SiteMode): MiddlewareHandler<AppEnv> {
  return async function siteMode(c, next) {
    if (!mode.partitioned) return (await drawnWhileConnected(c, mode)) ? c.body(null, 204) : next();
    const { method, path } = c.req;
    if (path === '/ext/site') return next();
    try {
      const consumerPath = CONSUMER_PATH.exec(path)?.[1];
      if (method === 'POST' && path === '/allocations' && atLeast(c, 'POST_ALLOCATIONS')) {
        authorize(c, 'placement:allocations:manage');
        const body = await readBody(c, postAllocationsSchema(c.var.mv));
        const claims = Object.entries(body).map(([uuid, part]) => claimFromBody(c, uuid, part));
        if (!(await mode.claim(claims, atLeast(c, 'CONSUMER_GENERATION')))) return next();
        return c.body(null, 204);
      }
      if (consumerPath !== undefined && method === 'PUT') {
        authorize(c, 'placement:allocations:update');
        const uuid = parseUuidLike(decodeURIComponent(consumerPath).trim());
        if (!uuid) throw invalid(`Malformed consumer_uuid: ${consumerPath}`);
        const claim = await putClaim(c, uuid);
        if (!(await mode.claim([claim], atLeast(c, 'CONSUMER_GENERATION')))) return next();
        return c.body(null, 204);
      }
      if (consumerPath !== undefined && method === 'DELETE') {
        authorize(c, 'placement:allocations:delete');
        if (!(await mode.remove(consumerOfPath(decodeURIComponent(consumerPath))))) return next();
        return c.body(null, 204);
      }
      if (consumerPath !== undefined && method === 'GET') {
        authorize(c, 'placement:allocations:list');
        const uuid = consumerOfPath(decodeURIComponent(consumerPath));
        const consumer = await mode.consumer(uuid);
        if (!consumer) throw mode.cutOff(`consumer ${uuid} is not drawn from the site's slice`);
        // Read from the local file: provider generations are the primary's, not known here (0).
        const rows = Object.entries(consumer.allocations).flatMap(([providerUuid, resources]) =>
          Object.entries(resources).map(([resourceClass, used]) => ({
            providerUuid,
            providerGeneration: 0,
            resourceClass,
            used,
            createdAt: '',
            updatedAt: null,
          })),
        );
        c.header('cache-control', 'no-cache');
        return c.json(
          presentConsumerAllocations(
            rows,
            {
              id: 0,
              uuid,
              generation: consumer.generation,
              projectId: consumer.project,
              userId: consumer.user,
              consumerType: consumer.consumerType ?? 'INSTANCE',
            },
            {
              withOwner: atLeast(c, 'ALLOC_DICT'),
              withGeneration: atLeast(c, 'CONSUMER_GENERATION'),
              withType: atLeast(c, 'CONSUMER_TYPES'),
            },
          ),
        );
      }
      throw mode.cutOff(`${method} ${path}`);
    } catch (err) {
      if (err instanceof SiteCutOff) throw unavailable(err);
      throw err;
    }
  };
}
