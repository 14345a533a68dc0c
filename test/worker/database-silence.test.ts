// Worker mode, inside workerd, on a sqld of its own behind a link that can be
// held (test/worker/global-setup.ts: held, it accepts connections and answers
// nothing). As in Node mode (test/db/database-silence.test.ts): requests end
// within their deadline plus a little with 503 naming the database, a write
// says what is known of it, /readyz answers within a second, an isolate that
// starts against it answers 503 naming it, and a chaos run of clients claiming
// while the link is held and restored ends with usage equal to the allocations
// and no acknowledged claim lost. Nothing escapes to the runtime
// (test/worker/no-unhandled.ts).
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import type { Logger } from '../../src/deps.js';
import { prepareDatabase } from '../../src/entry/prepare-database.js';
import worker, { openWorkerStore } from '../../src/entry/worker.js';
import { waitUntil } from '../helpers/wait.js';
import { instanceClaim } from '../helpers/claims.js';

const READ_MS = 1_000;
const WRITE_MS = 2_000;
/** "A little": the request's own work and a loaded machine's scheduling, beyond the deadline. */
const SLACK_MS = 1_500;
const DEADLINES = { PLACEMENT_DB_READ_TIMEOUT_MS: String(READ_MS), PLACEMENT_DB_WRITE_TIMEOUT_MS: String(WRITE_MS) };
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const control = (what: 'hold' | 'resume') => fetch(`${inject('silentControlUrl')}/${what}`, { method: 'POST' });
const database = () => `PLACEMENT_DB_URL (${inject('silentLinkUrl')})`;

async function isolate() {
  const config = loadConfig({ PLACEMENT_DB_URL: inject('silentLinkUrl'), PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false', ...DEADLINES });
  const store = openWorkerStore(config, quiet);
  await prepareDatabase(store.client);
  const app = createApp(makeDeps(store, config, quiet));
  const call = async (method: string, path: string, body?: unknown) => {
    const started = Date.now();
    const res = await app.request(path, {
      method,
      headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { res, ms: Date.now() - started };
  };
  return { store, call };
}
type Isolate = Awaited<ReturnType<typeof isolate>>;

const claimBody = (rp: string) => instanceClaim(rp, { VCPU: 1, MEMORY_MB: 64 });

const detailOf = async (res: Response) => ((await res.json()) as { errors: { detail: string }[] }).errors[0]!.detail;

async function newProvider(at: Isolate): Promise<string> {
  const rp = crypto.randomUUID();
  expect((await at.call('POST', '/resource_providers', { name: `rp-${rp}`, uuid: rp })).res.status).toBe(200);
  const inventories = { VCPU: { total: 10_000 }, MEMORY_MB: { total: 10_000_000 } };
  const put = await at.call('PUT', `/resource_providers/${rp}/inventories`, { resource_provider_generation: 0, inventories });
  expect(put.res.status).toBe(200);
  return rp;
}

/** Usage equals the sum of the allocations, each whole; the allocations by consumer. */
async function consistent(at: Isolate, rp: string): Promise<Record<string, unknown>> {
  const usage = (await (await at.call('GET', `/resource_providers/${rp}/usages`)).res.json()) as { usages: Record<string, number> };
  const { allocations } = (await (await at.call('GET', `/resource_providers/${rp}/allocations`)).res.json()) as {
    allocations: Record<string, { resources: Record<string, number> }>;
  };
  for (const { resources } of Object.values(allocations)) expect(resources).toEqual({ VCPU: 1, MEMORY_MB: 64 });
  const count = Object.keys(allocations).length;
  expect(usage.usages).toMatchObject({ VCPU: count, MEMORY_MB: 64 * count });
  return allocations;
}

describe('Worker: a database that accepts and answers nothing', () => {
  let at: Isolate;
  let rp: string;

  beforeAll(async () => {
    at = await isolate();
    rp = await newProvider(at);
  });
  afterAll(async () => {
    await control('resume');
    at?.store.close();
  });

  it('reads, claims and /readyz end in time with 503 naming the database; once it is back nothing is half-written', async () => {
    await control('hold');
    const given: string[] = [];
    try {
      const read = await at.call('GET', '/resource_providers');
      expect(read.res.status).toBe(503);
      const detail = await detailOf(read.res);
      expect(detail).toContain(`${database()} gave no answer within ${READ_MS} ms`);
      expect(detail).toContain('Nothing was written');
      expect(read.ms).toBeLessThan(READ_MS + SLACK_MS);

      const ready = await at.call('GET', '/readyz');
      expect(ready.ms).toBeLessThan(1_000);
      expect(ready.res.status).toBe(503);
      expect(((await ready.res.json()) as { reason: string }).reason).toMatch(
        /^the database does not answer: PLACEMENT_DB_URL \(http:\/\/127\.0\.0\.1:\d+\) gave no answer within \d+ ms; it last answered \d+\.\d s ago$/,
      );

      const consumer = crypto.randomUUID();
      const claim = await at.call('PUT', `/allocations/${consumer}`, claimBody(rp));
      expect(claim.res.status).toBe(503);
      expect(await detailOf(claim.res)).toMatch(
        /gave no answer within \d+ ms\. (Nothing was written|The write was sent and its outcome is unknown)/,
      );
      expect(claim.ms).toBeLessThan(READ_MS + WRITE_MS + SLACK_MS);
      given.push(consumer);
    } finally {
      await control('resume');
    }
    await waitUntil('the database answers again', async () => (await at.call('GET', '/resource_providers')).res.status === 200);
    expect((await at.call('GET', '/readyz')).res.status).toBe(200);
    const allocations = await consistent(at, rp);
    expect(given.filter((c) => allocations[c] !== undefined).length).toBeLessThanOrEqual(1);
  });

  it('an isolate that starts against it answers 503 naming the database, within the deadlines', async () => {
    await control('hold');
    const logged: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line: string) => logged.push(line));
    try {
      const env = { PLACEMENT_DB_URL: inject('silentLinkUrl'), LOG_LEVEL: 'silent', ...DEADLINES };
      const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
      const started = Date.now();
      const res = (await worker.fetch(
        new Request('http://placement.test/resource_providers') as never,
        env,
        ctx as never,
      )) as unknown as Response;
      expect(res.status).toBe(503);
      expect(await detailOf(res)).toContain(`The service could not start: The database did not answer: ${database()} gave no answer`);
      expect(Date.now() - started).toBeLessThan(READ_MS + WRITE_MS + SLACK_MS);
      // The log says it too, with the settings to check.
      expect(logged.join('\n')).toContain(`does not answer (no answer within ${READ_MS} ms)`);
    } finally {
      spy.mockRestore();
      await control('resume');
    }
  });

  it('chaos: clients claim while the link is held and restored; usage equals the allocations, no acknowledged claim lost', async () => {
    const own = await newProvider(at);
    const outcomes: { consumer: string; status: number; ms: number; detail?: string }[] = [];
    let stopped = false;
    const client = async () => {
      for (let i = 0; i < 25 && !stopped; i += 1) {
        const consumer = crypto.randomUUID();
        const { res, ms } = await at.call('PUT', `/allocations/${consumer}`, claimBody(own));
        outcomes.push({ consumer, status: res.status, ms, detail: res.status === 204 ? undefined : await detailOf(res) });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const clients = Array.from({ length: 4 }, client);
    try {
      for (let cycle = 0; cycle < 3; cycle += 1) {
        await new Promise((resolve) => setTimeout(resolve, 700));
        await control('hold');
        await new Promise((resolve) => setTimeout(resolve, WRITE_MS + 500));
        await control('resume');
      }
    } finally {
      stopped = true;
      await control('resume');
      await Promise.all(clients);
    }
    await waitUntil('the database answers again', async () => (await at.call('GET', '/resource_providers')).res.status === 200);
    for (const outcome of outcomes) {
      expect(outcome.ms).toBeLessThan(READ_MS + WRITE_MS + SLACK_MS);
      if (outcome.status === 204) continue;
      expect(outcome.status).toBe(503);
      expect(outcome.detail).toContain(`${database()} gave no answer`);
    }
    const acknowledged = outcomes.filter((o) => o.status === 204);
    const refused = outcomes.filter((o) => o.status === 503);
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    const allocations = await consistent(at, own);
    for (const { consumer } of acknowledged) expect(allocations[consumer]).toBeDefined();
    for (const { consumer, detail } of refused) if (detail?.includes('Nothing was written')) expect(allocations[consumer]).toBeUndefined();
  });
});
