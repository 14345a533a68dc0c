// Edge sites against real parts (docs/sites.md), shared by the sites tests: a
// sqld primary with the primary's own app, site instances (site mode) reaching
// it directly or through a link that can be held, and the calls the tests make
// of them (providers in an aggregate, a site's status, a provider's usage).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { SITE_STATE } from '../../src/ext/sites/runtime.js';
import { type PausableLink, startPausableLink } from './pausable-link.js';
import { type Sqld, startSqld } from './sqld.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** GET /ext/site's answer, as the tests read it. */
export interface SiteAnswer {
  link: string;
  slice: Record<string, { resources: Record<string, number> }>;
  slice_remaining: Record<string, { resources: Record<string, number> }>;
  limit_slices: Record<string, Record<string, number>>;
  limit_slices_remaining: Record<string, Record<string, number>>;
  journal_depth: number;
  last_replayed_seq: number;
  replay_conflicts: number;
}

export interface SitesCloud {
  /** The instances: 0 is the primary's own; each site started is the next. */
  readonly apps: { deps: Deps; app: ReturnType<typeof createApp> }[];
  /** The site's file directory (a test opens a site's local file there). */
  readonly dir: string;
  /** The link the sites reach the primary through (held: cut off), when asked for. */
  readonly link: PausableLink | undefined;
  call(at: number, method: string, path: string, body?: unknown, version?: string): Promise<Response>;
  /** A provider of `vcpu` VCPU on the primary, a member of `aggregate` when given. */
  provider(vcpu: number, aggregate?: string): Promise<string>;
  /** A site instance (PLACEMENT_SITE=name) started with `env` beside the defaults; its index in `apps`. */
  startSite(name: string, env?: Record<string, string>): Promise<number>;
  siteStatus(at: number): Promise<SiteAnswer>;
  /** VCPU used on `host`, as instance `at` answers. */
  used(at: number, host: string): Promise<number>;
  close(): void;
}

/**
 * A sqld primary and its app; `link`: the sites reach it through a pausable link. `env` is every
 * instance's (project limits, say), the primary's and the sites'.
 */
export async function startSitesCloud(opts: { link?: boolean; env?: Record<string, string> } = {}): Promise<SitesCloud> {
  const dir = mkdtempSync(join(tmpdir(), 'sites-'));
  const sqld: Sqld = await startSqld();
  const link = opts.link ? await startPausableLink(sqld.url) : undefined;
  const base = { PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false', ...opts.env };
  const apps: SitesCloud['apps'] = [];
  const primary = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: sqld.url, ...base }), silent);
  await primary.extensions.start(primary);
  apps.push({ deps: primary, app: createApp(primary) });

  const call: SitesCloud['call'] = (at, method, path, body, version = 'latest') =>
    Promise.resolve(
      apps[at]!.app.request(path, {
        method,
        headers: { 'x-auth-token': 'admin', 'openstack-api-version': `placement ${version}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );

  return {
    apps,
    dir,
    link,
    call,
    async provider(vcpu, aggregate) {
      const uuid = crypto.randomUUID();
      expect((await call(0, 'POST', '/resource_providers', { name: uuid, uuid })).status).toBe(200);
      await call(0, 'PUT', `/resource_providers/${uuid}/inventories`, {
        resource_provider_generation: 0,
        inventories: { VCPU: { total: vcpu } },
      });
      if (aggregate)
        await call(0, 'PUT', `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: 1, aggregates: [aggregate] });
      return uuid;
    },
    async startSite(name, env = {}) {
      const site = await buildNodeDeps(
        loadConfig({
          PLACEMENT_DB_URL: (link ?? sqld).url,
          ...base,
          PLACEMENT_SITE: name,
          PLACEMENT_SITE_DB_PATH: join(dir, `${name}.db`),
          PLACEMENT_WORKERS: '1',
          ...env,
        }),
        silent,
      );
      apps.push({ deps: site, app: createApp(site) });
      await site.extensions.start(site);
      return apps.length - 1;
    },
    async siteStatus(at) {
      return (await (await call(at, 'GET', '/ext/site')).json()) as SiteAnswer;
    },
    async used(at, host) {
      return ((await (await call(at, 'GET', `/resource_providers/${host}/usages`)).json()) as { usages: { VCPU: number } }).usages.VCPU;
    },
    close() {
      for (const { deps } of apps) {
        deps.extensions.state(SITE_STATE)?.stop();
        deps.store.close();
      }
      link?.stop();
      sqld.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
