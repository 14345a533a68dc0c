// The capacity dashboard, served at /dashboard (src/openapi/mounts.ts):
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
import { RouteTable, TEXT_BODY, zodQuery } from '../http/route-table.js';
import { authorize, placementHttp } from '../placement/http/profile.js';
import type { Extension } from '../extension.js';
import { dashboardAsset, dashboardPage, type DashboardAsset, type PageAssets } from './assets.js';
import { presentSummary } from './present.js';
import { type DashboardExtensions, readDashboardSummary } from '../diagnostics/dashboard-repo.js';
import { SummaryQueryString, summaryResponseSchema, toSummaryQuery } from './schema.js';

// Only this service's own origin: the page loads nothing from elsewhere.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** The assets of the extensions on (their parts of the page). */
const extensionAssets = (on: readonly Extension[]): PageAssets[] => on.flatMap((e) => (e.dashboard?.assets ? [e.dashboard.assets] : []));

function serve(c: Context<AppEnv>, asset: DashboardAsset): Response {
  const headers = { ...PAGE_HEADERS, 'content-type': asset.contentType, etag: asset.etag, 'cache-control': 'no-cache' };
  if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers);
  return c.body(asset.body, 200, headers);
}

/** The dashboard's routes, below its mount point ('' is the mount point itself, /dashboard), with what the installed extensions show. */
export const dashboardRoutes = (extensions: DashboardExtensions) =>
  new RouteTable('meta')
    .resource('', {
      GET: {
        summary: 'The capacity dashboard (HTML page)',
        public: true,
        responses: { 200: 'The page', 304: 'Not modified' },
        mediaTypes: ['text/html'],
        responseSchema: TEXT_BODY,
        responseName: 'Text',
        handler: (c) => {
          const { config, extensions: installed } = c.var.deps;
          // The panels of the extensions this app installs and its settings leave on, and their scripts.
          const on = installed.on();
          const panels = on.flatMap((e) => e.dashboard?.panels ?? []);
          return serve(c, dashboardPage(config.PLACEMENT_AUTH_STRATEGY, panels, extensionAssets(on)));
        },
      },
    })
    .resource('/assets/:file', {
      GET: {
        summary: "The dashboard's script and stylesheet",
        public: true,
        responses: { 200: 'The asset', 304: 'Not modified' },
        mediaTypes: ['text/javascript', 'text/css'],
        responseSchema: TEXT_BODY,
        responseName: 'Text',
        handler: (c) => {
          const file = c.req.param('file');
          const asset = file === 'index.html' ? undefined : dashboardAsset(file, extensionAssets(c.var.deps.extensions.on()));
          if (!asset) return placementHttp.notFound(c);
          return serve(c, asset);
        },
      },
    })
    .resource('/api/summary', {
      GET: {
        summary: 'Capacity summary behind the dashboard (admin): trees, totals, usage per project',
        query: () => zodQuery(SummaryQueryString),
        responses: { 200: 'The summary' },
        responseSchema: summaryResponseSchema(extensions),
        responseName: 'DashboardSummary',
        handler: async (c) => {
          authorize(c, 'admin_api');
          const deps = c.var.deps;
          const parsed = SummaryQueryString.safeParse(c.req.query());
          if (!parsed.success) {
            const issue = parsed.error.issues[0]!;
            const where = issue.path.length ? `'${issue.path.join('.')}'` : 'query';
            throw new ApiError(400, `Invalid query string: ${where} ${issue.message}`);
          }
          const summary = await readDashboardSummary(deps.store.nearby, toSummaryQuery(parsed.data), extensions);
          // Names where Keystone knows them, asked with the viewer's own token; ids alone otherwise.
          const viewerToken = c.req.header('x-auth-token');
          const projectIds = summary.projects.map((p) => p.projectId);
          const projectNames = deps.projectNames && viewerToken ? await deps.projectNames.names(projectIds, viewerToken) : {};
          c.header('cache-control', 'no-store');
          return c.json(presentSummary(summary, parsed.data, deps.clock(), projectNames, extensions));
        },
      },
    });

/** The dashboard's stack around its routes, which src/app.ts hands over at their paths below `root` (/dashboard). */
export function createDashboardApp(deps: Deps, routes: Hono<AppEnv>, root: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(`${root}/*`, requestId());
  app.use(
    `${root}/api/*`,
    authenticate({
      strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
      tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
      publicPaths: /(?!)/,
    }),
  );
  app.route('/', routes);
  app.all(`${root}/*`, placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}
