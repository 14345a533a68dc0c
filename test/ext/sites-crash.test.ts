// A site instance (a real `npm start` process) killed mid-replay and
// restarted (docs/sites.md): the replay stops with entries left, SIGKILL,
// a new process on the same local file finishes it: every acknowledged claim
// is on the primary, none twice, with no conflict.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { instanceClaim } from '../helpers/claims.js';
import { type ServerProcess, startServer } from '../helpers/node-server.js';
import { type PausableLink, startPausableLink } from '../helpers/pausable-link.js';
import { type Sqld, startSqld } from '../helpers/sqld.js';
import { waitUntil } from '../helpers/wait.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const AGG = 'aaaaaaaa-0000-4000-8000-0000000000c1';
/** More than one replay group (64 entries), so the replay can be cut between two. */
const CLAIMS = 200;

let sqld: Sqld | undefined;
let link: PausableLink | undefined;
let primary: Deps | undefined;
let dir = '';
const servers: ServerProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'site-crash-'));
  sqld = await startSqld();
  link = await startPausableLink(sqld.url);
  primary = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: sqld.url, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent);
});
afterAll(async () => {
  for (const s of servers) await s.stop();
  primary?.store.close();
  link?.stop();
  sqld?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const HEADERS = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' };
const onPrimary = (method: string, path: string, body?: unknown) =>
  createApp(primary!).request(path, { method, headers: HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
const onSite = (site: ServerProcess, method: string, path: string, body?: unknown) =>
  fetch(`${site.url}${path}`, { method, headers: HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });

interface SiteAnswer {
  link: string;
  slice: Record<string, { resources: Record<string, number> }>;
  journal_depth: number;
  last_replayed_seq: number;
  replay_conflicts: number;
}
const status = async (site: ServerProcess) => (await (await onSite(site, 'GET', '/ext/site')).json()) as SiteAnswer;

const startSite = () =>
  startServer(link!.url, {
    PLACEMENT_SITE: 'site-c',
    PLACEMENT_SITE_DB_PATH: join(dir, 'site-c.db'),
    PLACEMENT_WORKERS: '1',
    PLACEMENT_SITE_PARTITION_AFTER_MS: '800',
    PLACEMENT_SITE_PROBE_MS: '150',
    PLACEMENT_DB_READ_TIMEOUT_MS: '400',
    PLACEMENT_DB_WRITE_TIMEOUT_MS: '400',
    PLACEMENT_TREE_REFRESH_MS: '0',
    LOG_LEVEL: 'info',
  });

describe('a site killed mid-replay', () => {
  it('loses no acknowledged claim and applies none twice once restarted', async () => {
    const host = crypto.randomUUID();
    expect((await onPrimary('POST', '/resource_providers', { name: host, uuid: host })).status).toBe(200);
    await onPrimary('PUT', `/resource_providers/${host}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 256 } },
    });
    await onPrimary('PUT', `/resource_providers/${host}/aggregates`, { resource_provider_generation: 1, aggregates: [AGG] });
    expect(
      (await onPrimary('PUT', '/ext/sites/site-c', { aggregate: AGG, capacity: { [host]: { resources: { VCPU: CLAIMS } } } })).status,
    ).toBe(200);

    const first = await startSite();
    servers.push(first);
    await waitUntil('the site has read its slice', async () => (await status(first)).slice[host]?.resources.VCPU === CLAIMS);
    link!.hold();
    await waitUntil('the site is partitioned', async () => (await status(first)).link === 'partitioned');
    const acknowledged: string[] = [];
    for (let i = 0; i < CLAIMS; i++) {
      const consumer = crypto.randomUUID();
      const res = await onSite(first, 'PUT', `/allocations/${consumer}`, instanceClaim(host, { VCPU: 1 }));
      expect(res.status).toBe(204);
      acknowledged.push(consumer);
    }
    expect((await onSite(first, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }))).status).toBe(409);

    // Healing starts; the link is held again mid-replay and the site is killed with entries left.
    link!.resume();
    await waitUntil('the replay has begun', async () => (await status(first)).last_replayed_seq >= 1, 30_000, 5);
    link!.hold();
    const cut = await status(first);
    expect(cut.journal_depth).toBeGreaterThan(0);
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    servers.splice(servers.indexOf(first), 1);
    link!.resume();

    const second = await startSite();
    servers.push(second);
    await waitUntil(
      'the restarted site has replayed the rest',
      async () => {
        const s = await status(second);
        return s.link === 'connected' && s.journal_depth === 0;
      },
      30_000,
    );
    expect((await status(second)).replay_conflicts).toBe(0);
    // On the primary: each acknowledged consumer exactly once, each journal entry applied once.
    const usage = (await (await onPrimary('GET', `/resource_providers/${host}/usages`)).json()) as { usages: { VCPU: number } };
    expect(usage.usages.VCPU).toBe(CLAIMS);
    for (const consumer of acknowledged) {
      const res = (await (await onPrimary('GET', `/allocations/${consumer}`)).json()) as {
        allocations: Record<string, { resources: { VCPU: number } }>;
      };
      expect(res.allocations[host]?.resources.VCPU).toBe(1);
    }
    const replays = await primary!.store.readBatch([
      { sql: "SELECT COUNT(*) AS n, COUNT(DISTINCT seq) AS d FROM ext_site_replays WHERE site = 'site-c'", args: [] },
    ]);
    expect(Number(replays[0]!.rows[0]!.n)).toBe(CLAIMS);
    expect(Number(replays[0]!.rows[0]!.d)).toBe(CLAIMS);
    const file = createClient({ url: `file:${join(dir, 'site-c.db')}` });
    const outcomes = await file.execute('SELECT outcome, COUNT(*) AS n FROM site_journal GROUP BY outcome');
    file.close();
    const byOutcome = Object.fromEntries(outcomes.rows.map((r) => [String(r.outcome), Number(r.n)]));
    expect((byOutcome.applied ?? 0) + (byOutcome.duplicate ?? 0)).toBe(CLAIMS);
  }, 180_000);
});
