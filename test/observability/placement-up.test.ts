// openstack_placement_up, openstack-exporter's liveness gauge of the placement
// service (its Grafana dashboards find the service by it and alert on 0): 1
// while the service answers its resource gauges, 0 when its database does not
// answer. /readyz then names the database and why (a libSQL server refusing
// the connection), not just "fetch failed".
import { createClient } from '@libsql/client';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createDataStore } from '../../src/db/client.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { freePort } from '../helpers/sqld.js';
import { makeTestApp } from '../helpers/test-app.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe('openstack_placement_up', () => {
  it('is 1 while the service answers its resource gauges', async () => {
    const t = await makeTestApp();
    try {
      const text = await (await t.app.request('/metrics')).text();
      expect(text).toContain('# TYPE openstack_placement_up gauge\nopenstack_placement_up 1\n');
    } finally {
      t.close();
    }
  });

  it('is 0 when the database does not answer, and /readyz says why', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const deps = makeDeps(createDataStore(createClient({ url })), loadConfig({ PLACEMENT_DB_URL: url }), quiet);
    const app = createApp(deps);
    const samples = parseSamples(await (await app.request('/metrics')).text());
    expect(sampleValue(samples, 'openstack_placement_up')).toBe(0);
    expect(sampleValue(samples, 'placement_database_up')).toBe(0);
    const ready = await app.request('/readyz');
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reason: string }).reason).toMatch(/^the database does not answer: .*ECONNREFUSED/);
  });
});
