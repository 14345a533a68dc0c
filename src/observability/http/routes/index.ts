// The operator's endpoints, outside the Placement and Cyborg APIs:
//   GET /healthz   the process serves (no database access)
//   GET /readyz    the process is not warming (nor held otherwise), the database answers, migrations
//                  applied, standard names synced, and (keystone auth) the service user signs in to
//                  Keystone; 503 with the reason otherwise
//   GET /metrics   Prometheus text: the service's counters and the database gauges
// /healthz and /readyz need no token. /metrics is open in noauth2; otherwise
// it takes an admin token or the scrape token (PLACEMENT_METRICS_TOKEN).
import { Hono, type MiddlewareHandler } from 'hono';
import * as z from 'zod';
import { MIGRATIONS } from '../../../db/migrations.generated.js';
import type { Deps } from '../../../deps.js';
import { authenticate, parseTokenTable, TokenTable } from '../../../http/auth.js';
import type { AppEnv } from '../../../http/env.js';
import { requestId } from '../../../http/request-id.js';
import { type Method, RouteTable, TEXT_BODY } from '../../../http/route-table.js';
import { authorize, placementHttp } from '../../../placement/http/profile.js';
import { readDatabaseGauges } from '../../database-gauges.js';
import { checkReadiness, databaseSilent, READINESS_WITHIN_MS, type ReadinessRead, verdictWithin, WARMING } from '../../readiness.js';
import { type FamilySnapshot, PROMETHEUS_CONTENT_TYPE, renderText } from '../../registry.js';

const NO_STORE = { 'cache-control': 'no-store' };

/** The scrape token, or an admin's token as for any admin API. */
function scrapeAccess(deps: Deps): MiddlewareHandler<AppEnv> {
  const { PLACEMENT_AUTH_STRATEGY: strategy, PLACEMENT_METRICS_TOKEN: scrapeToken } = deps.config;
  const asCaller = authenticate({ strategy, tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS), publicPaths: /(?!)/ });
  const scrapers = new TokenTable(new Map(scrapeToken ? [[scrapeToken, { roles: [], project_id: null, user_id: 'metrics' }]] : []));
  return async function scrapeAccessMiddleware(c, next) {
    if (strategy === 'noauth2') return next();
    const presented = c.req.header('authorization')?.replace(/^Bearer\s+/i, '') ?? c.req.header('x-auth-token');
    if (scrapeToken && presented && (await scrapers.lookup(presented))) return next();
    return asCaller(c, async () => {
      authorize(c, 'admin_api');
      await next();
    });
  };
}

const single = (name: string, help: string, value: number): FamilySnapshot => ({
  name,
  help,
  type: 'gauge',
  labelNames: [],
  series: [{ labels: [], value }],
});

/** /healthz and /readyz: a status, and on a 503 the reason. */
const HealthSchema = z.object({ status: z.string(), reason: z.string().optional() });

/** The operator's routes; createOperatorApp puts a request id and (for /metrics) the scrape access before each. */
export const operatorRoutes = new RouteTable('meta')
  .resource('/healthz', {
    GET: {
      summary: 'Liveness: the process serves (reads nothing)',
      public: true,
      responses: { 200: 'Serving' },
      responseSchema: HealthSchema,
      responseName: 'Health',
      handler: (c) => c.json({ status: 'ok' }, 200, NO_STORE),
    },
  })
  .resource('/readyz', {
    GET: {
      summary:
        'Readiness: the process has warmed up, the database answers, migrations are applied, standard names are synced, the service signs in to Keystone (keystone auth); 503 with the reason otherwise',
      public: true,
      responses: { 200: 'Ready' },
      responseSchema: HealthSchema,
      responseName: 'Health',
      handler: async (c) => {
        const deps = c.var.deps;
        // Each check within a second (READINESS_WITHIN_MS): one that gets no answer says so instead of holding the probe.
        const database = (also?: readonly ReadinessRead[]) =>
          verdictWithin(checkReadiness(deps.store, MIGRATIONS, also, deps.store.deadline), READINESS_WITHIN_MS, () =>
            databaseSilent(deps.store.deadline, READINESS_WITHIN_MS),
          );
        // The process's own holds first (warming: its database may not be prepared yet), then the checks.
        const held = deps.readiness.now();
        if (!held.ready) {
          // Warming only while the start can go on: a libSQL server that does not answer is named instead
          // (an embedded file cannot be silent: its holds are answered without reading it).
          const silent = held.reason === WARMING && deps.store.deadline ? await database() : undefined;
          const reason = silent && !silent.ready && silent.silent ? silent.reason : held.reason;
          // Warming is the normal start, not worth a warning per probe.
          if (reason !== WARMING) deps.log.warn('not ready', { reason });
          return c.json({ status: 'not ready', reason }, 503, NO_STORE);
        }
        const checks = await Promise.all([
          // The extensions' own checks (project limits: not read for two refresh intervals says so).
          database(deps.extensions.readiness()),
          deps.keystone
            ? verdictWithin(deps.keystone.readiness(), READINESS_WITHIN_MS, () => ({
                ready: false,
                reason: `Keystone does not answer: the service's sign-in got no answer within ${READINESS_WITHIN_MS} ms`,
              }))
            : { ready: true as const },
        ]);
        const reasons = checks.flatMap((check) => (check.ready ? [] : [check.reason]));
        if (reasons.length === 0) return c.json({ status: 'ready' }, 200, NO_STORE);
        const reason = reasons.join('; ');
        deps.log.warn('not ready', { reason });
        return c.json({ status: 'not ready', reason }, 503, NO_STORE);
      },
    },
  })
  .resource('/metrics', {
    GET: {
      summary: 'Prometheus text exposition (open in noauth2; otherwise an admin token or PLACEMENT_METRICS_TOKEN)',
      responses: { 200: 'The metrics' },
      mediaTypes: ['text/plain'],
      responseSchema: TEXT_BODY,
      responseName: 'Text',
      handler: async (c) => {
        const deps = c.var.deps;
        const [gathered, database] = await Promise.all([
          deps.metricsSource.gather().catch((err: unknown) => err as Error),
          readDatabaseGauges(deps.store, {
            capacity: deps.config.PLACEMENT_METRICS_CAPACITY,
            extensions: deps.extensions.gauges(),
            nowMs: deps.clock().getTime(),
          }).then(
            (families) => ({ families, up: 1 }),
            (err: unknown) => {
              deps.log.warn('metrics: the database gauges could not be read', { err: err instanceof Error ? err.message : String(err) });
              return { families: [] as FamilySnapshot[], up: 0 };
            },
          ),
        ]);
        if (gathered instanceof Error) {
          // Counters of some processes only would read as a reset: no answer is better.
          deps.log.warn('metrics: the cluster counters could not be gathered', { err: gathered.message });
          return c.text(`The server processes' counters could not be gathered: ${gathered.message}\n`, 503, NO_STORE);
        }
        const families = [
          ...gathered.families,
          single(
            'placement_metrics_processes',
            'Processes whose counters this scrape sums: 1 alone, the primary and its server processes in a Node cluster, 0 in a Worker isolate (which shows none).',
            gathered.processes,
          ),
          single('placement_database_up', 'Whether this scrape could read the database gauges (1) or not (0).', database.up),
          // openstack-exporter's liveness gauge of the placement service, which its Grafana dashboards and alerts read.
          single(
            'openstack_placement_up',
            "Whether the placement service answered this scrape's resource gauges (1) or not (0), as openstack-exporter's gauge of the same name.",
            database.up,
          ),
          ...database.families,
        ];
        return c.body(renderText(families), 200, { 'content-type': PROMETHEUS_CONTENT_TYPE, ...NO_STORE });
      },
    },
  });

/** The operator's routes (src/app.ts hands them over) with a request id and, for /metrics, the scrape access before each. */
export function createOperatorApp(deps: Deps, routes: Hono<AppEnv>): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Per route, not app.use(): these routes join the root app, whose other requests they must not touch.
  const ids = requestId();
  const method = (m: Method) => m.toUpperCase();
  for (const op of operatorRoutes.operations) app.on(method(op.method), op.path, ids);
  app.on('GET', '/metrics', scrapeAccess(deps));
  app.route('/', routes);
  app.onError(placementHttp.onError);
  return app;
}
