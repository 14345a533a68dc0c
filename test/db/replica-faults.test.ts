// A replica that fails in each way a network or a server can make it fail,
// against a real sqld primary and real sqld replicas (--primary-grpc-url):
// lagging (its link to the primary held), slow (answers later than
// PLACEMENT_DB_READ_TIMEOUT_MS), down (killed). Every answer must equal the
// primary's and include this instance's own writes; each fallback is logged
// once per episode and counted in /metrics (placement_db_replica_reads_total,
// replica reads timed as db_client_operation_duration_seconds).
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Logger } from '../../src/deps.js';
import { type CountingProxy, startCountingProxy } from '../helpers/counting-proxy.js';
import { type PausableLink, startPausableLink } from '../helpers/pausable-link.js';
import { describeWithPart, itWithPart } from '../helpers/parts.js';
import { PROMTOOL_MISSING, parseSamples, promtoolCheck, type Sample, sampleValue } from '../helpers/prometheus-text.js';
import { provider } from '../helpers/providers.js';
import { heldReplicaMarkAt, replicaCaughtUp, SQLD_MISSING, type SqldServer, startSqld, writeMarkAt } from '../helpers/sqld.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const CANDIDATES = '/allocation_candidates?resources=VCPU:1,MEMORY_MB:64';

interface Instance extends TestApp {
  logs: { level: string; msg: string }[];
}

/** An instance (app + deps) whose log lines are kept, as buildNodeDeps wires the replica's log. */
async function instance(env: Record<string, string>): Promise<Instance> {
  const logs: { level: string; msg: string }[] = [];
  const keep =
    (level: string) =>
    (msg: string): void => {
      logs.push({ level, msg });
    };
  const log: Logger = { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') };
  return { ...(await makeTestApp(env, log)), logs };
}

async function json(app: TestApp, path: string): Promise<unknown> {
  const res = await app.call('GET', path);
  expect(res.status).toBe(200);
  return res.json();
}

async function scrape(app: TestApp): Promise<{ text: string; samples: Sample[] }> {
  const res = await app.call('GET', '/metrics');
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parseSamples(text) };
}
const replicaReads = (s: Sample[], outcome: string) => sampleValue(s, 'placement_db_replica_reads_total', { outcome }) ?? 0;
const replicaTimed = (s: Sample[], suffix: '_count' | '_sum') =>
  sampleValue(s, `db_client_operation_duration_seconds${suffix}`, { db_operation_name: 'replica_read_batch' }) ?? 0;

const claimBody = (rp: string, vcpu: number) => ({
  allocations: { [rp]: { resources: { VCPU: vcpu } } },
  project_id: crypto.randomUUID(),
  user_id: crypto.randomUUID(),
  consumer_generation: null,
  consumer_type: 'INSTANCE',
});

describeWithPart(SQLD_MISSING, 'a replica that lags, answers slowly or dies', () => {
  let primary: SqldServer;
  let link: PausableLink; // the lagging replica's only way to the primary
  let lagging: SqldServer;
  let doomed: SqldServer;
  let slow: CountingProxy; // holds every replica read until released: never within the instance's 300 ms timeout
  let exact: Instance; // no replica: the primary's own answers
  const opened: Instance[] = [];
  const open = async (env: Record<string, string>) => {
    const made = await instance({ PLACEMENT_DB_URL: primary.url, ...env });
    opened.push(made);
    return made;
  };

  beforeAll(async () => {
    primary = await startSqld({ grpc: true });
    link = await startPausableLink(primary.grpcUrl!, { only: 'answers' });
    [lagging, doomed] = await Promise.all([startSqld({ primaryGrpcUrl: link.url }), startSqld({ primaryGrpcUrl: primary.grpcUrl })]);
    slow = await startCountingProxy(doomed.url, { hold: true });
    exact = await open({});
    for (let i = 0; i < 3; i++) await provider(exact, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } });
  }, 60_000);

  afterAll(() => {
    for (const app of opened) app.close();
    slow?.release();
    slow?.stop();
    link?.stop();
    for (const server of [lagging, doomed, primary]) server?.stop();
  });

  it('lagging: reads needing our writes go to the primary (counted "behind"), the replica serves again once caught up', async () => {
    const viaLag = await open({ PLACEMENT_DB_READ_URL: lagging.url });
    const counts = viaLag.deps.store.replica!.counts;
    await replicaCaughtUp(lagging, primary);
    expect(await json(viaLag, CANDIDATES)).toEqual(await json(exact, CANDIDATES));
    expect(counts.replica).toBeGreaterThan(0);

    link.hold();
    try {
      const before = { ...counts, metrics: (await scrape(viaLag)).samples };
      // Our own writes while the replica cannot see them.
      const rp = await provider(viaLag, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } } });
      expect(await heldReplicaMarkAt(lagging)).toBeLessThan(await writeMarkAt(primary.url)); // it really lags
      const inTree = `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`;
      for (let used = 0; used < 4; used += 1) {
        const answer = (await json(viaLag, inTree)) as { provider_summaries: Record<string, { resources: { VCPU: { used: number } } }> };
        expect(answer.provider_summaries[rp]!.resources.VCPU.used).toBe(used);
        expect(answer).toEqual(await json(exact, inTree));
        expect((await viaLag.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claimBody(rp, 1) })).status).toBe(204);
      }
      expect(await json(viaLag, inTree)).toEqual({ allocation_requests: [], provider_summaries: {} });
      expect(counts.behind - before.behind).toBeGreaterThanOrEqual(5);
      expect(counts.replica).toBe(before.replica);
      const after = (await scrape(viaLag)).samples;
      expect(replicaReads(after, 'behind') - replicaReads(before.metrics, 'behind')).toBe(counts.behind - before.behind);
      // Lag is not a failure: nothing logged, the replica is not rested.
      expect(viaLag.logs.filter((l) => l.msg.startsWith('read replica'))).toEqual([]);

      link.resume();
      await replicaCaughtUp(lagging, primary);
      const served = counts.replica;
      expect(await json(viaLag, inTree)).toEqual(await json(exact, inTree));
      expect(counts.replica).toBe(served + 1);
    } finally {
      // A failure above must not leave the link held for the file's other tests (resuming twice is harmless).
      link.resume();
    }
  }, 60_000);

  it('slow beyond PLACEMENT_DB_READ_TIMEOUT_MS: the primary answers after the timeout, and reads skip the replica while it rests', async () => {
    const viaSlow = await open({
      PLACEMENT_DB_READ_URL: slow.url,
      PLACEMENT_DB_READ_TIMEOUT_MS: '300',
      PLACEMENT_DB_READ_RETRY_MS: '60000',
    });
    const counts = viaSlow.deps.store.replica!.counts;
    const expected = await json(exact, CANDIDATES);
    const before = (await scrape(viaSlow)).samples;
    const started = performance.now();
    expect(await json(viaSlow, CANDIDATES)).toEqual(expected);
    const waited = performance.now() - started;
    // It gave up on the replica at its timeout: the replica never answered (its read is still held), and
    // the answer did not come before the timeout.
    expect(slow.held()).toBe(1);
    expect(waited).toBeGreaterThanOrEqual(290);
    console.log(`replica-faults.test.ts: a replica that does not answer cost ${Math.round(waited)} ms (PLACEMENT_DB_READ_TIMEOUT_MS=300)`);
    expect(counts).toMatchObject({ replica: 0, unavailable: 1 });
    // Resting: straight to the primary, no replica read at all.
    for (let i = 0; i < 3; i++) expect(await json(viaSlow, CANDIDATES)).toEqual(expected);
    expect(counts).toMatchObject({ replica: 0, unavailable: 4 });
    // Our writes while it rests are read back at once.
    const rp = await provider(viaSlow, { inventory: { VCPU: { total: 2 }, MEMORY_MB: { total: 256 } } });
    const inTree = (await json(viaSlow, `/allocation_candidates?resources=VCPU:2&in_tree=${rp}`)) as { allocation_requests: unknown[] };
    expect(inTree.allocation_requests).toHaveLength(1);

    expect(viaSlow.logs.filter((l) => l.msg === 'read replica failed: reading from the primary')).toHaveLength(1);
    const after = (await scrape(viaSlow)).samples;
    expect(replicaReads(after, 'unavailable') - replicaReads(before, 'unavailable')).toBe(counts.unavailable);
    // The one replica read that was tried is timed, the time it waited included.
    expect(replicaTimed(after, '_count') - replicaTimed(before, '_count')).toBe(1);
    expect(replicaTimed(after, '_sum') - replicaTimed(before, '_sum')).toBeGreaterThanOrEqual(0.29);
  }, 60_000);

  it('down (killed): answers come from the primary, one warning per episode, writes unaffected', async () => {
    const viaDoomed = await open({ PLACEMENT_DB_READ_URL: doomed.url, PLACEMENT_DB_READ_RETRY_MS: '50' });
    const counts = viaDoomed.deps.store.replica!.counts;
    await replicaCaughtUp(doomed, primary);
    const expected = await json(exact, CANDIDATES);
    expect(await json(viaDoomed, CANDIDATES)).toEqual(expected);
    expect(counts.replica).toBe(1);

    doomed.child.kill('SIGKILL');
    await new Promise((resolve) => doomed.child.once('exit', resolve));
    for (let i = 0; i < 5; i++) {
      expect(await json(viaDoomed, CANDIDATES)).toEqual(expected);
      await new Promise((r) => setTimeout(r, 60)); // past the retry: each read tries the dead replica again
    }
    expect(counts.replica).toBe(1);
    expect(counts.unavailable).toBe(5);
    const rp = await provider(viaDoomed, { inventory: { VCPU: { total: 3 }, MEMORY_MB: { total: 256 } } });
    expect((await viaDoomed.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claimBody(rp, 3) })).status).toBe(204);
    expect(await json(viaDoomed, `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`)).toEqual({
      allocation_requests: [],
      provider_summaries: {},
    });
    // One episode: one warning, however many reads it sent to the primary.
    expect(viaDoomed.logs.filter((l) => l.msg.startsWith('read replica'))).toEqual([
      { level: 'warn', msg: 'read replica failed: reading from the primary' },
    ]);
  }, 60_000);

  itWithPart(PROMTOOL_MISSING, "the replica's metrics pass promtool check metrics", async () => {
    // Each app counts into its own metrics: the episodes above are spread over the instances.
    const scrapes = await Promise.all(opened.map((app) => scrape(app)));
    for (const outcome of ['replica', 'behind', 'unavailable'])
      expect(
        scrapes.some(({ samples }) => replicaReads(samples, outcome) > 0),
        outcome,
      ).toBe(true);
    for (const { text } of scrapes) {
      expect(text).toContain('# TYPE placement_db_replica_reads_total counter');
      // The one lint metrics.test.ts accepts: openstack-exporter's own gauge name, ending in _total.
      const problems = promtoolCheck(text).problems.filter((p) => !p.startsWith('openstack_placement_resource_total '));
      expect(problems).toEqual([]);
    }
  });
});
