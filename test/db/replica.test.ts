// Reads from a replica near the instance (PLACEMENT_DB_READ_URL), against a
// real sqld primary and real sqld replicas of it (--primary-grpc-url), with a
// counting proxy in front of the primary so the tests see which reads reach it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { instanceClaim, usedIn } from '../helpers/claims.js';
import { type CountingProxy, startCountingProxy } from '../helpers/counting-proxy.js';
import { type PausableLink, startPausableLink } from '../helpers/pausable-link.js';
import { startServer } from '../helpers/node-server.js';
import { provider } from '../helpers/providers.js';
import { describeWithPart } from '../helpers/parts.js';
import {
  heldReplicaMarkAt,
  replicaCaughtUp,
  SQLD_MISSING,
  type SqldServer,
  startSqld,
  startSqldPair,
  writeMarkAt,
} from '../helpers/sqld.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { waitUntil } from '../helpers/wait.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';

const CANDIDATES = '/allocation_candidates?resources=VCPU:1,MEMORY_MB:64';
const READ_TIMEOUT_MS = 5_000;
const READ_RETRY_MS = 1_000;

/** Requests to `base` as admin at 1.39, a new connection each: a cluster hands them to its processes in turn. */
const sender = (base: string) => async (method: string, path: string, payload?: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      'x-auth-token': 'admin',
      'content-type': 'application/json',
      'openstack-api-version': 'placement 1.39',
      connection: 'close',
    },
    body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  return { status: res.status, body: (await res.text()) || 'null' };
};

describeWithPart(SQLD_MISSING, 'reads from a replica near the instance', () => {
  let primary: SqldServer;
  let replicaA: SqldServer;
  let replicaB: SqldServer;
  let link: PausableLink; // replica C's only way to the primary: held, C lags on purpose
  let replicaC: SqldServer;
  let proxy: CountingProxy;
  let viaA: TestApp; // an instance reading from replica A
  let viaB: TestApp; // another instance, on the same primary, reading from replica B
  let viaC: TestApp; // an instance reading from replica C, its primary behind the counting proxy
  let exact: TestApp; // an instance without a replica: the primary's own answers

  const hops = async () => ((await (await fetch(`${proxy.url}/__hops`)).json()) as { hops: number }).hops;
  const resetHops = () => fetch(`${proxy.url}/__hops`, { method: 'DELETE' });

  /** Waits until a replica has applied every write the primary has acknowledged so far. */
  const caughtUp = (replica: SqldServer) => replicaCaughtUp(replica, primary);

  /** One new consumer claiming 1 VCPU on `rp`: one write batch. */
  const claimOne = (app: TestApp, rp: string) =>
    app.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [rp]: { resources: { VCPU: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });

  const body = async (app: TestApp, path: string) => {
    const res = await app.call('GET', path);
    expect(res.status).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    primary = await startSqld({ grpc: true });
    link = await startPausableLink(primary.grpcUrl!, { only: 'answers' });
    [replicaA, replicaB, replicaC] = await Promise.all([
      startSqld({ primaryGrpcUrl: primary.grpcUrl }),
      startSqld({ primaryGrpcUrl: primary.grpcUrl }),
      startSqld({ primaryGrpcUrl: link.url }),
    ]);
    proxy = await startCountingProxy(primary.url);
    exact = await makeTestApp({ PLACEMENT_DB_URL: primary.url });
    // A replica read given up after 500 ms counted a loaded machine's slow answer as a replica
    // down (a read the tests expect the replica to answer went to the primary): 5 s here.
    const replicaEnv = { PLACEMENT_DB_READ_TIMEOUT_MS: String(READ_TIMEOUT_MS), PLACEMENT_DB_READ_RETRY_MS: String(READ_RETRY_MS) };
    viaA = await makeTestApp({ PLACEMENT_DB_URL: proxy.url, PLACEMENT_DB_READ_URL: replicaA!.url, ...replicaEnv });
    viaB = await makeTestApp({ PLACEMENT_DB_URL: primary.url, PLACEMENT_DB_READ_URL: replicaB!.url, ...replicaEnv });
    viaC = await makeTestApp({ PLACEMENT_DB_URL: proxy.url, PLACEMENT_DB_READ_URL: replicaC!.url, ...replicaEnv });
    for (let i = 0; i < 3; i++) await provider(exact, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } });
  }, 60_000);

  afterAll(() => {
    for (const app of [viaA, viaB, viaC, exact]) app?.close();
    proxy?.stop();
    link?.stop();
    for (const server of [replicaA, replicaB, replicaC, primary]) server?.stop();
  });

  it('answers allocation candidates from the replica, with no round trip to the primary, exactly as the primary would', async () => {
    await caughtUp(replicaA);
    await body(viaA, CANDIDATES); // the tree model's first load
    await resetHops();
    const before = viaA.deps.store.replica!.counts.replica;
    const fromReplica = await body(viaA, CANDIDATES);
    expect(await hops()).toBe(0);
    expect(viaA.deps.store.replica!.counts.replica).toBeGreaterThan(before);
    expect(fromReplica).toEqual(await body(exact, CANDIDATES));
  });

  it('every other read, and every write, goes to the primary', async () => {
    await resetHops();
    await body(viaA, '/resource_providers');
    expect(await hops()).toBe(1);
    const made = await viaA.call('POST', '/resource_providers', { body: { name: `rp-${crypto.randomUUID()}` } });
    expect(made.status).toBe(200);
    expect(await hops()).toBeGreaterThan(1);
  });

  // Three catch-up waits of up to 20 s each (replicaCaughtUp): on a loaded CI machine the
  // default 30 s ran out before any of them could say which one was slow.
  it('reads its own write when the replica is held exactly one write behind: the read goes to the primary, counted "behind"', async () => {
    const rp = await provider(viaC, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } } });
    const query = `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`;
    const used = async () =>
      ((await body(viaC, query)) as { provider_summaries: Record<string, { resources: { VCPU: { used: number } } }> }).provider_summaries[
        rp
      ]!.resources.VCPU.used;
    const counts = viaC.deps.store.replica!.counts;
    await caughtUp(replicaC);
    const start = { ...counts };
    expect(await used()).toBe(0);
    expect(counts.replica, JSON.stringify({ start, counts })).toBeGreaterThan(start.replica); // caught up: the replica answers
    expect(counts.behind).toBe(start.behind);

    link.hold();
    try {
      // One write: one claim, one write batch, the mark raised once.
      expect((await claimOne(viaC, rp)).status).toBe(204);
      expect(viaC.deps.store.marks.last).toBe(await writeMarkAt(primary.url));
      // Asked until it answers: a replica held like this may leave its first request hanging (heldReplicaMarkAt).
      expect(await heldReplicaMarkAt(replicaC)).toBe(viaC.deps.store.marks.last - 1);
      const held = { ...counts };
      await resetHops();
      expect(await used()).toBe(1);
      expect(await hops()).toBeGreaterThan(0); // the primary answered
      expect(counts.behind).toBeGreaterThan(held.behind);
      expect(counts.replica).toBe(held.replica);
      const metrics = await (await viaC.call('GET', '/metrics')).text();
      expect(metrics).toMatch(/^placement_db_replica_reads_total\{outcome="behind"\} [1-9]/m);
    } finally {
      link.resume();
    }
    await caughtUp(replicaC);
    const resumed = { ...counts };
    await resetHops();
    expect(await used()).toBe(1);
    expect(await hops()).toBe(0);
    expect(counts.replica).toBeGreaterThan(resumed.replica);
    expect(counts.behind).toBe(resumed.behind);
  }, 90_000);

  it('reads its own writes: each claim shows in the next candidates at once, whether or not the replica has caught up', async () => {
    const rp = await provider(viaA, { inventory: { VCPU: { total: 40 }, MEMORY_MB: { total: 4096 } } });
    const query = `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`;
    const counts = viaA.deps.store.replica!.counts;
    const behindBefore = counts.behind;
    for (let used = 1; used <= 20; used += 1) {
      expect((await claimOne(viaA, rp)).status).toBe(204);
      const answer = (await body(viaA, query)) as { provider_summaries: Record<string, { resources: { VCPU: { used: number } } }> };
      expect(answer.provider_summaries[rp]!.resources.VCPU.used).toBe(used);
    }
    // sqld's replication is fast but not instant: some of those reads found the replica behind.
    console.log(
      `replica.test.ts: 20 claim-then-read pairs, ${counts.behind - behindBefore} reads found the replica behind and went to the primary`,
    );
  });

  it('racing claims through two instances with their own replicas grant exactly the capacity', async () => {
    const rp = await provider(exact, { inventory: { VCPU: { total: 12 }, MEMORY_MB: { total: 4096 } } });
    await Promise.all([caughtUp(replicaA), caughtUp(replicaB)]);
    // A scheduler's loop on each instance: candidates (from its replica), claim the first (on the primary), retry on 409.
    const schedule = async (app: TestApp): Promise<boolean> => {
      for (let attempt = 0; attempt < 30; attempt += 1) {
        const answer = (await body(app, `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`)) as {
          allocation_requests: { allocations: Record<string, unknown> }[];
        };
        const first = answer.allocation_requests[0];
        if (!first) return false;
        const res = await app.call('PUT', `/allocations/${crypto.randomUUID()}`, {
          body: {
            ...first,
            project_id: crypto.randomUUID(),
            user_id: crypto.randomUUID(),
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          },
        });
        if (res.status === 204) return true;
        expect(res.status).toBe(409);
      }
      return false;
    };
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => schedule(i % 2 ? viaA : viaB)));
    expect(outcomes.filter(Boolean)).toHaveLength(12);
    const usage = (await body(exact, `/resource_providers/${rp}/usages`)) as { usages: { VCPU: number } };
    expect(usage.usages.VCPU).toBe(12);
  });

  it('a replica that hangs or dies: reads fall back to the primary after the timeout, and the replica is used again once it answers', async () => {
    await caughtUp(replicaB);
    const expected = await body(exact, CANDIDATES);
    const counts = viaB.deps.store.replica!.counts;
    replicaB.child.kill('SIGSTOP');
    try {
      const started = Date.now();
      expect(await body(viaB, CANDIDATES)).toEqual(expected);
      const hung = Date.now() - started;
      // The replica's timeout plus the primary's own answer (generous: the primary answers in ms idle).
      expect(hung).toBeLessThan(READ_TIMEOUT_MS + 15_000);
      console.log(
        `replica.test.ts: a hung replica cost ${hung} ms before the primary answered (PLACEMENT_DB_READ_TIMEOUT_MS=${READ_TIMEOUT_MS})`,
      );
      // While it rests, reads go straight to the primary.
      const unavailable = counts.unavailable;
      expect(await body(viaB, CANDIDATES)).toEqual(expected);
      expect(counts.unavailable).toBe(unavailable + 1);
    } finally {
      replicaB.child.kill('SIGCONT');
    }
    // Once it answers again (a replica just resumed may leave its first request hanging,
    // heldReplicaMarkAt), and past PLACEMENT_DB_READ_RETRY_MS, reads go to it again.
    await heldReplicaMarkAt(replicaB);
    await new Promise((r) => setTimeout(r, READ_RETRY_MS + 100));
    const served = counts.replica;
    expect(await body(viaB, CANDIDATES)).toEqual(expected);
    expect(counts.replica, JSON.stringify(counts)).toBe(served + 1);
  }, 90_000);
});

describeWithPart(SQLD_MISSING, 'several server processes on one replica', () => {
  it("one process's writes count for the others' replica reads one IPC hop later (new connection per request, so the cluster spreads them)", async () => {
    const { primary, replica } = await startSqldPair();
    const server = await startServer(primary.url, { PLACEMENT_WORKERS: '2', PLACEMENT_DB_READ_URL: replica.url });
    try {
      const send = sender(server.url);
      const rp = crypto.randomUUID();
      expect((await send('POST', '/resource_providers', { name: `rp-${rp}`, uuid: rp })).status).toBe(200);
      expect(
        (
          await send('PUT', `/resource_providers/${rp}/inventories`, {
            resource_provider_generation: 0,
            inventories: { VCPU: { total: 64 } },
          })
        ).status,
      ).toBe(200);
      for (let used = 1; used <= 20; used += 1) {
        const claim = await send('PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(rp, { VCPU: 1 }));
        expect(claim.status).toBe(204);
        // The next process may be another one: the mark relay (src/entry/write-marks-sharing.ts) is
        // one IPC hop behind the write, so a read racing it is asked again after the hop (bounded
        // by the clock: on a loaded machine a process may wait its turn for longer than 10 reads take).
        let seen = -1;
        const deadline = Date.now() + 15_000;
        for (let attempt = 0; seen !== used && (attempt === 0 || Date.now() < deadline); attempt += 1) {
          if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 50));
          const answer = await send('GET', `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`);
          seen = usedIn(JSON.parse(answer.body), rp, 'VCPU') ?? -1;
          expect(seen).toBeLessThanOrEqual(used);
        }
        expect(seen).toBe(used);
      }
    } finally {
      await server.stop();
      replica.stop();
      primary.stop();
    }
  }, 120_000);

  it("with the replica held behind, each process reads the other's writes: only the relayed mark can send the read to the primary", async () => {
    const primary = await startSqld({ grpc: true });
    // The replica's only way to the primary: held, it applies nothing new, so it cannot catch up by itself.
    const link = await startPausableLink(primary.grpcUrl!, { only: 'answers' });
    const replica = await startSqld({ primaryGrpcUrl: link.url });
    const server = await startServer(primary.url, {
      PLACEMENT_WORKERS: '2',
      PLACEMENT_DB_READ_URL: replica.url,
      PLACEMENT_DB_READ_TIMEOUT_MS: String(READ_TIMEOUT_MS),
    });
    const send = sender(server.url);
    try {
      const rp = crypto.randomUUID();
      expect((await send('POST', '/resource_providers', { name: `rp-${rp}`, uuid: rp })).status).toBe(200);
      const inventories = { resource_provider_generation: 0, inventories: { VCPU: { total: 64 } } };
      expect((await send('PUT', `/resource_providers/${rp}/inventories`, inventories)).status).toBe(200);
      const usedNow = async () => {
        const answer = await send('GET', `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`);
        const summaries = (JSON.parse(answer.body) as { provider_summaries: Record<string, { resources: { VCPU: { used: number } } }> })
          .provider_summaries;
        return summaries[rp]?.resources.VCPU.used ?? -1;
      };
      const replicaReads = async (outcome: string) => {
        const text = (await send('GET', '/metrics')).body;
        return sampleValue(parseSamples(text), 'placement_db_replica_reads_total', { outcome }) ?? 0;
      };
      for (let used = 1; used <= 4; used += 1) {
        await replicaCaughtUp(replica, primary);
        link.hold();
        try {
          const claim = await send('PUT', `/allocations/${crypto.randomUUID()}`, {
            allocations: { [rp]: { resources: { VCPU: 1 } } },
            project_id: crypto.randomUUID(),
            user_id: crypto.randomUUID(),
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          });
          expect(claim.status).toBe(204);
          const written = await writeMarkAt(primary.url);
          // The relay is one IPC hop behind the write: the first read may race it.
          await waitUntil(`a read seeing ${used} VCPU used`, async () => (await usedNow()) === used);
          // Then ten reads at once, which the cluster spreads over both processes: every one sees the claim, and
          // none was answered by the replica (each process knew the replica was behind). Without the relay, the
          // process that did not write would answer from the held replica, which lacks the claim.
          const before = { behind: await replicaReads('behind'), replica: await replicaReads('replica') };
          expect(await Promise.all(Array.from({ length: 10 }, usedNow))).toEqual(Array(10).fill(used));
          expect(await replicaReads('replica')).toBe(before.replica);
          expect(await replicaReads('behind')).toBe(before.behind + 10);
          // Still held: the fresh reads were not the replica's.
          expect(await heldReplicaMarkAt(replica)).toBeLessThan(written);
        } finally {
          link.resume();
        }
      }
    } finally {
      await server.stop();
      link.stop();
      replica.stop();
      primary.stop();
    }
  }, 180_000);
});
