// Node mode on a libSQL server (a real sqld) behind a link that can be held:
// held, it accepts connections and answers nothing, as a hung server or a path
// that drops packets does. Every request then ends within its deadline
// (PLACEMENT_DB_READ_TIMEOUT_MS, PLACEMENT_DB_WRITE_TIMEOUT_MS) plus a little,
// with 503 in its API's envelope naming the database; a write says whether its
// outcome is unknown; /readyz answers within a second naming the database and
// when it last answered; /metrics counts the requests a deadline ended; and once
// the link is back, nothing is half-written. The chaos run holds and restores
// the link several times while clients claim.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeWithPart } from '../helpers/parts.js';
import { type PausableLink, startPausableLink } from '../helpers/pausable-link.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { provider } from '../helpers/providers.js';
import { SQLD_MISSING, type SqldServer, startSqld } from '../helpers/sqld.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { waitUntil } from '../helpers/wait.js';
import { instanceClaim } from '../helpers/claims.js';

const READ_MS = 1_000;
const WRITE_MS = 2_000;
/** "A little": the request's own work and a loaded machine's scheduling, beyond the deadline. */
const SLACK_MS = 1_500;
const DEADLINES = { PLACEMENT_DB_READ_TIMEOUT_MS: String(READ_MS), PLACEMENT_DB_WRITE_TIMEOUT_MS: String(WRITE_MS) };

const claimBody = (rp: string) => instanceClaim(rp, { VCPU: 1, MEMORY_MB: 64 });

async function timed(request: Promise<Response>): Promise<{ res: Response; ms: number }> {
  const started = performance.now();
  const res = await request;
  return { res, ms: performance.now() - started };
}

const deadlineCount = async (app: TestApp, operation: string, outcome: string) => {
  const text = await (await app.call('GET', '/metrics')).text();
  return sampleValue(parseSamples(text), 'placement_db_deadline_requests_total', { operation, outcome }) ?? 0;
};

const deadlineTotal = async (app: TestApp) => {
  const text = await (await app.call('GET', '/metrics')).text();
  return parseSamples(text)
    .filter((sample) => sample.name === 'placement_db_deadline_requests_total')
    .reduce((sum, sample) => sum + sample.value, 0);
};

interface Usage {
  usages: Record<string, number>;
}
interface ProviderAllocations {
  allocations: Record<string, { resources: Record<string, number> }>;
}

/** A provider's usage equals the sum of its allocations, and every consumer's allocation is whole. */
async function consistent(app: TestApp, rp: string): Promise<ProviderAllocations['allocations']> {
  const usage = (await (await app.call('GET', `/resource_providers/${rp}/usages`)).json()) as Usage;
  const { allocations } = (await (await app.call('GET', `/resource_providers/${rp}/allocations`)).json()) as ProviderAllocations;
  const summed: Record<string, number> = {};
  for (const { resources } of Object.values(allocations)) {
    expect(resources).toEqual({ VCPU: 1, MEMORY_MB: 64 });
    for (const [rc, n] of Object.entries(resources)) summed[rc] = (summed[rc] ?? 0) + n;
  }
  expect(Object.fromEntries(Object.entries(usage.usages).filter(([, n]) => n > 0))).toEqual(summed);
  return allocations;
}

describeWithPart(SQLD_MISSING, 'Node mode: a database that accepts and answers nothing', () => {
  let sqld: SqldServer;
  let link: PausableLink; // both ways held: nothing reaches the server, nothing comes back
  let answersLink: PausableLink; // only the server's answers held: a write reaches it, its answer does not come back
  let app: TestApp;
  let viaAnswers: TestApp;
  let rp: string;
  /** Requests a deadline ended while the link was held, and the claims among them. */
  let deadlineEnded = 0;
  const unknownClaims: string[] = [];

  beforeAll(async () => {
    sqld = await startSqld();
    [link, answersLink] = await Promise.all([startPausableLink(sqld.url), startPausableLink(sqld.url, { only: 'answers' })]);
    app = await makeTestApp({ PLACEMENT_DB_URL: link.url, ...DEADLINES });
    viaAnswers = await makeTestApp({ PLACEMENT_DB_URL: answersLink.url, ...DEADLINES });
    rp = await provider(app, { inventory: { VCPU: { total: 10_000 }, MEMORY_MB: { total: 10_000_000 } } });
  }, 60_000);

  afterAll(() => {
    link?.resume();
    answersLink?.resume();
    app?.close();
    viaAnswers?.close();
    link?.stop();
    answersLink?.stop();
    sqld?.stop();
  });

  describe('while the link is held', () => {
    beforeAll(() => link.hold());
    afterAll(() => link.resume());

    it('a read ends with 503 naming the database, within its deadline plus a little, in both APIs', async () => {
      const { res, ms } = await timed(app.call('GET', '/resource_providers'));
      expect(res.status).toBe(503);
      const error = await errorOf(res);
      expect(error.detail).toContain(`PLACEMENT_DB_URL (${link.url}) gave no answer within ${READ_MS} ms`);
      expect(error.detail).toContain('Nothing was written');
      expect(ms).toBeGreaterThanOrEqual(READ_MS - 50);
      expect(ms).toBeLessThan(READ_MS + SLACK_MS);

      const cyborg = await timed(
        Promise.resolve(app.app.request('/accelerator/v2/device_profiles', { headers: { 'x-auth-token': 'admin' } })),
      );
      expect(cyborg.res.status).toBe(503);
      const body = (await cyborg.res.json()) as { error_message: string };
      expect(body.error_message).toContain(`PLACEMENT_DB_URL (${link.url}) gave no answer`);
      expect(cyborg.ms).toBeLessThan(READ_MS + SLACK_MS);
      // Counted: the scrape reads the database gauges, so it is read below, once the link is back.
      deadlineEnded += 2;
    });

    it('/readyz answers within a second: 503 naming the database and how long ago it last answered', async () => {
      const { res, ms } = await timed(app.call('GET', '/readyz'));
      expect(ms).toBeLessThan(1_000);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        status: 'not ready',
        reason: expect.stringMatching(
          /^the database does not answer: PLACEMENT_DB_URL \(http:\/\/127\.0\.0\.1:\d+\) gave no answer within \d+ ms; it last answered \d+\.\d s ago$/,
        ),
      });
    });

    it('a claim ends with 503 naming the database and saying what is known of it; nothing is half-written', async () => {
      const consumer = crypto.randomUUID();
      const { res, ms } = await timed(app.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp) }));
      expect(res.status).toBe(503);
      const { detail } = await errorOf(res);
      expect(detail).toContain(`PLACEMENT_DB_URL (${link.url}) gave no answer`);
      expect(detail).toMatch(/Nothing was written|outcome is unknown/);
      expect(ms).toBeLessThan(READ_MS + WRITE_MS + SLACK_MS);
      unknownClaims.push(consumer);
      deadlineEnded += 1;
    });
  });

  it('once the link is back: requests are answered, /readyz is ready, /metrics counted the requests a deadline ended, nothing is half-written', async () => {
    await waitUntil('the database answers again', async () => (await app.call('GET', '/resource_providers')).status === 200);
    await waitUntil('/readyz says ready', async () => (await app.call('GET', '/readyz')).status === 200);
    expect(await deadlineTotal(app)).toBeGreaterThanOrEqual(deadlineEnded);
    const allocations = await consistent(app, rp);
    // The claim given up is whole or absent.
    for (const consumer of unknownClaims) {
      const own = (await (await app.call('GET', `/allocations/${consumer}`)).json()) as ProviderAllocations;
      expect(Object.keys(own.allocations).length === 0 || allocations[consumer] !== undefined).toBe(true);
    }
  });

  it('a write that reached the database and whose answer never came back: 503 "outcome is unknown", never retried; what it did is what the database says', async () => {
    const own = await provider(viaAnswers, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } } });
    const consumer = crypto.randomUUID();
    const before = await deadlineCount(viaAnswers, 'write', 'unknown');
    answersLink.hold();
    let claim: { res: Response; ms: number };
    try {
      claim = await timed(viaAnswers.call('PUT', `/allocations/${consumer}`, { body: claimBody(own) }));
    } finally {
      answersLink.resume();
    }
    expect(claim.res.status).toBe(503);
    const { detail } = await errorOf(claim.res);
    // The claim needs nothing read first: its one write batch was sent, and only its answer was lost.
    expect(detail).toContain(`PLACEMENT_DB_URL (${answersLink.url}) gave no answer within ${WRITE_MS} ms`);
    expect(detail).toContain('outcome is unknown');
    expect(claim.ms).toBeLessThan(WRITE_MS + SLACK_MS);
    await waitUntil('the database answers again', async () => (await viaAnswers.call('GET', '/resource_providers')).status === 200);
    expect(await deadlineCount(viaAnswers, 'write', 'unknown')).toBe(before + 1);
    // The database applied it, once: whole, and not twice (it was not retried).
    const allocations = await consistent(viaAnswers, own);
    expect(Object.keys(allocations)).toEqual([consumer]);
  });
});

describeWithPart(SQLD_MISSING, 'Node mode, chaos: clients claim while the link is held and restored several times', () => {
  it('every request ends in time, no acknowledged claim is lost, and usage equals the allocations', async () => {
    const sqld = await startSqld();
    const link = await startPausableLink(sqld.url);
    const app = await makeTestApp({ PLACEMENT_DB_URL: link.url, ...DEADLINES });
    try {
      const rp = await provider(app, { inventory: { VCPU: { total: 10_000 }, MEMORY_MB: { total: 10_000_000 } } });
      const CLIENTS = 6;
      const MOST_CLAIMS = 40; // per client: bounded in count as well as in time
      const CYCLES = 4;
      const outcomes: { consumer: string; status: number; ms: number; detail?: string }[] = [];
      let stopped = false;
      const client = async () => {
        for (let i = 0; i < MOST_CLAIMS && !stopped; i += 1) {
          const consumer = crypto.randomUUID();
          const { res, ms } = await timed(app.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp) }));
          const detail = res.status === 204 ? undefined : (await errorOf(res)).detail;
          outcomes.push({ consumer, status: res.status, ms, detail });
          // Paced, so the claims spread over the held and restored spells.
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      const clients = Array.from({ length: CLIENTS }, client);
      for (let cycle = 0; cycle < CYCLES; cycle += 1) {
        await new Promise((resolve) => setTimeout(resolve, 700));
        link.hold();
        await new Promise((resolve) => setTimeout(resolve, WRITE_MS + 500));
        link.resume();
      }
      stopped = true;
      await Promise.all(clients);
      await waitUntil('the database answers again', async () => (await app.call('GET', '/resource_providers')).status === 200);

      // Every request ended, within its deadlines plus a little; a refusal is a 503 naming the database.
      expect(outcomes.length).toBeGreaterThan(CLIENTS);
      for (const outcome of outcomes) {
        expect(outcome.ms).toBeLessThan(READ_MS + WRITE_MS + SLACK_MS);
        if (outcome.status === 204) continue;
        expect(outcome.status).toBe(503);
        expect(outcome.detail).toContain(`PLACEMENT_DB_URL (${link.url}) gave no answer`);
      }
      const refused = outcomes.filter((o) => o.status === 503);
      const acknowledged = outcomes.filter((o) => o.status === 204);
      expect(refused.length).toBeGreaterThan(0);
      expect(acknowledged.length).toBeGreaterThan(0);
      console.log(
        `database-silence.test.ts chaos: ${outcomes.length} claims, ${acknowledged.length} acknowledged, ${refused.length} ended by a deadline (${
          refused.filter((o) => o.detail?.includes('outcome is unknown')).length
        } of unknown outcome), the longest ${Math.round(Math.max(...outcomes.map((o) => o.ms)))} ms`,
      );
      // Nothing half-written, usage equal to the allocations, and every acknowledged claim there.
      const allocations = await consistent(app, rp);
      for (const { consumer } of acknowledged) expect(allocations[consumer]).toBeDefined();
      // A claim whose outcome was unknown is whole or absent; one that said nothing was written is absent.
      for (const { consumer, detail } of refused) {
        if (detail?.includes('Nothing was written')) expect(allocations[consumer]).toBeUndefined();
      }
      // At least those (a recovery probe on a loaded machine may add one).
      expect(await deadlineTotal(app)).toBeGreaterThanOrEqual(refused.length);
    } finally {
      link.resume();
      app.close();
      link.stop();
      sqld.stop();
    }
  }, 120_000);
});

describeWithPart(SQLD_MISSING, 'Node mode: a read replica that accepts and answers nothing', () => {
  it('candidates fall back to the primary within PLACEMENT_DB_READ_TIMEOUT_MS, equal to the primary’s answer', async () => {
    const sqld = await startSqld();
    // The "replica" is the primary itself behind the link: the same data, so the answers must be equal.
    const link = await startPausableLink(sqld.url);
    const exact = await makeTestApp({ PLACEMENT_DB_URL: sqld.url, ...DEADLINES });
    const viaReplica = await makeTestApp({
      PLACEMENT_DB_URL: sqld.url,
      PLACEMENT_DB_READ_URL: link.url,
      PLACEMENT_DB_READ_RETRY_MS: '60000',
      ...DEADLINES,
    });
    try {
      const rp = await provider(exact, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } });
      const query = `/allocation_candidates?resources=VCPU:1,MEMORY_MB:64&in_tree=${rp}`;
      const expected = await (await exact.call('GET', query)).json();
      expect(await (await viaReplica.call('GET', query)).json()).toEqual(expected);
      expect(viaReplica.deps.store.replica!.counts.replica).toBe(1);
      link.hold();
      const { res, ms } = await timed(viaReplica.call('GET', query));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(expected);
      expect(ms).toBeGreaterThanOrEqual(READ_MS - 50);
      expect(ms).toBeLessThan(READ_MS + SLACK_MS);
      expect(viaReplica.deps.store.replica!.counts).toMatchObject({ replica: 1, unavailable: 1 });
    } finally {
      link.resume();
      exact.close();
      viaReplica.close();
      link.stop();
      sqld.stop();
    }
  }, 60_000);
});
