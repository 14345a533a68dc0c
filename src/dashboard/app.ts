// The capacity dashboard, mounted at /dashboard by createApp():
//   GET /dashboard                the page (told the auth strategy)
//   GET /dashboard/assets/<file>  its script and stylesheet (bundled strings)
//   GET /dashboard/api/summary    admin-only read model, one DB round trip
// The page itself needs no token (it holds no data); the API does. Nothing
// here is part of the Placement or Cyborg wire API.
import { Hono, type Context } from 'hono';
import type { Deps } from '../deps.js';
import { ApiError } from '../http/api-error.js';
import { authenticate, parseTokenTable } from '../http/auth.js';
import type { AppEnv } from '../http/env.js';
import { requestId } from '../http/request-id.js';
import { authorize, placementHttp } from '../placement/http/profile.js';
import { dashboardAsset, dashboardPage, type DashboardAsset } from './assets.js';
import { presentSummary } from './present.js';
import { readDashboardSummary } from '../diagnostics/dashboard-repo.js';
import { SummaryQueryString, toSummaryQuery } from './schema.js';

// Only this service's own origin: the page loads nothing from elsewhere.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function serve(c: Context<AppEnv>, asset: DashboardAsset): Response {
  const headers = { ...PAGE_HEADERS, 'content-type': asset.contentType, etag: asset.etag, 'cache-control': 'no-cache' };
  if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers);
  return c.body(asset.body, 200, headers);
}

export function createDashboardApp(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
  app.use(requestId());

  app.get('/', (c) => serve(c, dashboardPage(deps.config.PLACEMENT_AUTH_STRATEGY)));
  app.get('/assets/:file', (c) => {
    const asset = c.req.param('file') === 'index.html' ? undefined : dashboardAsset(c.req.param('file'));
    if (!asset) return c.notFound();
    return serve(c, asset);
  });

  app.use(
    '/api/*',
    authenticate({
      strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
      tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
      publicPaths: /(?!)/,
    }),
  );
  app.get('/api/summary', async (c) => {
    authorize(c, 'admin_api');
    const parsed = SummaryQueryString.safeParse(c.req.query());
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.length ? `'${issue.path.join('.')}'` : 'query';
      throw new ApiError(400, `Invalid query string: ${where} ${issue.message}`);
    }
    const summary = await readDashboardSummary(deps.store.nearby, toSummaryQuery(parsed.data));
    // Names where Keystone knows them, asked with the viewer's own token; ids alone otherwise.
    const viewerToken = c.req.header('x-auth-token');
    const projectIds = summary.projects.map((p) => p.projectId);
    const projectNames = deps.projectNames && viewerToken ? await deps.projectNames.names(projectIds, viewerToken) : {};
    c.header('cache-control', 'no-store');
    return c.json(presentSummary(summary, parsed.data, deps.clock(), projectNames));
  });

  app.notFound(placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}
