// The accelerator app with the frozen pre-issue-13 Cyborg write path: the
// same middleware as src/cyborg/app.ts, the old routes, repos, bind job and
// outbox (interactive write transactions). `oldCyborgJobs` and `consumeOld`
// are the job side of the same copy, for a test to run the old bind job.
import { Hono } from 'hono';
import type { Deps } from '../../../src/deps.js';
import { authenticate, parseTokenTable } from '../../../src/http/auth.js';
import { negotiate, requestedVersion } from '../../../src/http/microversion.js';
import { PolicyEnforcer } from '../../../src/http/policy.js';
import { requestId } from '../../../src/http/request-id.js';
import { cyborgError, cyborgNotFound, cyborgOnError, type CyborgEnv } from '../../../src/cyborg/http.js';
import { cyborgPolicyRules } from '../../../src/cyborg/policies.js';
import { rootRoutes } from '../../../src/cyborg/routes/root.js';
import { MAX_VERSION, MIN_VERSION } from '../../../src/cyborg/versions.js';
import { agentRoutes } from './routes/agent.js';
import { attributeRoutes } from './routes/attributes.js';
import { arqRoutes } from './routes/arqs.js';
import { deviceProfileRoutes } from './routes/device-profiles.js';
import { deviceRoutes } from './routes/devices.js';

export { cyborgJobs as oldCyborgJobs } from './jobs.js';
export { consume as consumeOld } from './jobs/consume.js';
export { runSweeps as runSweepsOld } from './jobs/sweeps.js';

function askedVersion(header: string | undefined): string | undefined {
  const named = requestedVersion(header, 'accelerator');
  if (named !== undefined) return named;
  const bare = header?.trim();
  return bare && /^[\d.]+$/.test(bare) ? bare : undefined;
}

/** Serves /v2/... (no /accelerator prefix), as src/cyborg/app.ts does behind its mount. */
export function createOldCyborgApp(deps: Deps): Hono<CyborgEnv> {
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
