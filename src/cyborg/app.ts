// The Cyborg v2 (accelerator) API as one Hono app, mounted at /accelerator.
// Middleware order: deps, request id, microversion (406 as Cyborg), auth.
import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { authenticate, parseTokenTable } from '../http/auth.js';
import { negotiate, requestedVersion } from '../http/microversion.js';
import { PolicyEnforcer } from '../http/policy.js';
import { requestId } from '../http/request-id.js';
import { codePointOfEscape, controlCharacterInUrl, MAX_URL_LENGTH } from '../http/url.js';
import { cyborgError, cyborgNotFound, cyborgOnError, type CyborgEnv } from './http.js';
import { cyborgPolicyRules } from './policies.js';
import { agentRoutes } from './routes/agent.js';
import { attributeRoutes } from './routes/attributes.js';
import { arqRoutes } from './routes/arqs.js';
import { deviceProfileRoutes } from './routes/device-profiles.js';
import { deviceRoutes } from './routes/devices.js';
import { rootRoutes } from './routes/root.js';
import { MAX_VERSION, MIN_VERSION } from './versions.js';

/** Cyborg reads `accelerator 2.N`, and still accepts a bare `2.N`. */
function askedVersion(header: string | undefined): string | undefined {
  const named = requestedVersion(header, 'accelerator');
  if (named !== undefined) return named;
  const bare = header?.trim();
  return bare && /^[\d.]+$/.test(bare) ? bare : undefined;
}

export function createCyborgApp(deps: Deps): Hono<CyborgEnv> {
  const app = new Hono<CyborgEnv>();
  const policy = new PolicyEnforcer(cyborgPolicyRules({ enforceNewDefaults: false }));
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    c.set('cyborgPolicy', policy);
    await next();
  });
  app.use(requestId());
  app.use(async function acceleratorMicroversion(c, next) {
    const versionHeaders = {
      'OpenStack-API-Minimum-Version': MIN_VERSION,
      'OpenStack-API-Maximum-Version': MAX_VERSION,
      Vary: 'OpenStack-API-Version',
    };
    const result = negotiate(askedVersion(c.req.header('openstack-api-version')), MIN_VERSION, MAX_VERSION);
    if (!result.ok) {
      throw cyborgError(
        406,
        `Invalid value for OpenStack-API-Version header: ${result.value}. Version must be between ${MIN_VERSION} and ${MAX_VERSION}.`,
        versionHeaders,
      );
    }
    c.set('mv', result.version);
    await next();
    for (const [k, v] of Object.entries(versionHeaders)) c.header(k, v);
    c.header('OpenStack-API-Version', `accelerator ${result.version.toString()}`);
  });
  app.use(
    authenticate({
      strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
      tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
      publicPaths: /^\/?$|^\/v2\/?$/,
    }) as never,
  );
  app.use(async function urlChecks(c, next) {
    if (c.req.url.length > MAX_URL_LENGTH) throw cyborgError(414, `The request URL is longer than ${MAX_URL_LENGTH} characters.`);
    const escaped = controlCharacterInUrl(c.req.url);
    if (escaped)
      throw cyborgError(
        400,
        `The request URL contains the control character ${codePointOfEscape(escaped)} (${escaped}); control characters are not allowed.`,
      );
    await next();
  });
  app.route('/', rootRoutes);
  app.route('/v2', deviceProfileRoutes);
  app.route('/v2', arqRoutes);
  app.route('/v2', deviceRoutes);
  app.route('/v2', attributeRoutes);
  app.route('/v2', agentRoutes);
  app.notFound(cyborgNotFound);
  app.onError(cyborgOnError);
  return app;
}
