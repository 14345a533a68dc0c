// Differential test: allocation candidates answered from a replica, once it
// has caught up, equal the primary's answers, over many random clouds and
// queries. One instance writes on the primary (random trees, sharing
// providers, traits, aggregates, claims, deletions) and answers exactly; a
// second instance reads from a real sqld replica, its primary behind a
// counting proxy so the test sees that the replica, not the primary, answered.
// Its in-memory tree model is fed from the replica only, so it must follow
// every kind of write through replication.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type CountingProxy, startCountingProxy } from '../helpers/counting-proxy.js';
import { provider, randomInventory } from '../helpers/providers.js';
import { random, type Random } from '../helpers/random.js';
import { describeWithPart } from '../helpers/parts.js';
import { replicaCaughtUp, SQLD_MISSING, type SqldServer, startSqldPair } from '../helpers/sqld.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const SEED = Number(process.env.REPLICA_DIFF_SEED ?? 2724);
const ROUNDS = 8;
const QUERIES_PER_ROUND = 80;

const CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF'] as const;
const SHARED = ['DISK_GB', 'IPV4_ADDRESS'] as const;
const TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE', 'CUSTOM_A', 'CUSTOM_B'] as const;
const AGGREGATES = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];

/** Inventories without unit rules but for a step size now and then. */
const inventory = (r: Random, classes: readonly string[]) => randomInventory(r, classes, { units: false, stepChance: 0.1 });

interface Cloud {
  providers: string[];
  consumers: string[];
}

async function generationOf(app: TestApp, uuid: string): Promise<number | null> {
  const res = await app.call('GET', `/resource_providers/${uuid}`);
  return res.status === 200 ? ((await res.json()) as { generation: number }).generation : null;
}

/** One random write (a refusal is fine: it must change nothing on either side). */
async function mutate(app: TestApp, r: Random, cloud: Cloud): Promise<void> {
  const kind = r.int(0, 7);
  const target = r.pick(cloud.providers);
  const current = await generationOf(app, target);
  const gen = current ?? 0;
  switch (kind) {
    case 0:
      await app.call('PUT', `/resource_providers/${target}/inventories`, {
        body: { resource_provider_generation: gen, inventories: inventory(r, r.chance(0.8) ? CLASSES : SHARED) },
      });
      return;
    case 1:
      await app.call('PUT', `/resource_providers/${target}/traits`, {
        body: { resource_provider_generation: gen, traits: r.chance(0.15) ? ['MISC_SHARES_VIA_AGGREGATE'] : r.some(TRAITS, 2) },
      });
      return;
    case 2:
      await app.call('PUT', `/resource_providers/${target}/aggregates`, {
        body: { resource_provider_generation: gen, aggregates: r.chance(0.2) ? [] : r.some(AGGREGATES, 2) },
      });
      return;
    case 3:
      cloud.providers.push(
        await provider(app, { parent: current !== null && r.chance(0.6) ? target : undefined, inventory: inventory(r, CLASSES) }),
      );
      return;
    case 4:
      await app.call('DELETE', `/resource_providers/${target}`);
      return;
    case 5:
    case 6: {
      const res = await app.call('GET', `/allocation_candidates?resources=${r.pick(CLASSES)}:${r.int(1, 2)}&limit=3`);
      const body = (await res.json()) as { allocation_requests: { allocations: Record<string, unknown> }[] };
      const choice = body.allocation_requests[r.int(0, 2)] ?? body.allocation_requests[0];
      if (!choice) return;
      const consumer = crypto.randomUUID();
      const claim = await app.call('PUT', `/allocations/${consumer}`, {
        body: {
          allocations: choice.allocations,
          project_id: crypto.randomUUID(),
          user_id: crypto.randomUUID(),
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      });
      if (claim.status === 204) cloud.consumers.push(consumer);
      return;
    }
    default: {
      if (!cloud.consumers.length) return;
      await app.call('DELETE', `/allocations/${cloud.consumers.splice(r.int(0, cloud.consumers.length - 1), 1)[0]}`);
    }
  }
}

function randomQuery(r: Random, cloud: Cloud): { query: string; version: string } {
  const minor = r.int(10, 39);
  const params: [string, string][] = [];
  const resources = () =>
    r
      .some([...CLASSES, ...SHARED], r.chance(0.5) ? 1 : 3)
      .map((c) => `${c}:${r.pick([1, 1, 2, 3, 40])}`)
      .join(',');
  const group = (suffix: string) => {
    params.push([`resources${suffix}`, resources()]);
    if (minor >= 17 && r.chance(0.3)) {
      params.push([
        `required${suffix}`,
        r
          .some(TRAITS, 2)
          .map((t) => (minor >= 22 && r.chance(0.3) ? `!${t}` : t))
          .join(','),
      ]);
    }
    if (minor >= 21 && r.chance(0.25)) {
      const uuids = r.some(AGGREGATES, 2);
      params.push([`member_of${suffix}`, minor >= 24 && uuids.length > 1 ? `in:${uuids.join(',')}` : uuids[0]!]);
    }
    if (minor >= 31 && r.chance(0.1)) params.push([`in_tree${suffix}`, r.pick(cloud.providers)]);
  };
  group('');
  if (minor >= 25) {
    for (let i = r.int(0, 2); i > 0; i -= 1) group(String(i));
    if (r.chance(0.4)) params.push(['group_policy', r.pick(['none', 'isolate'])]);
  }
  if (minor >= 16 && r.chance(0.4)) params.push(['limit', String(r.int(1, 8))]);
  return { query: new URLSearchParams(params).toString(), version: `1.${minor}` };
}

/** Status and body, errors reduced to what a client reads (request ids differ per answer). */
async function answer(app: TestApp, query: string, version: string): Promise<{ status: number; body: unknown }> {
  const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
  const body = (await res.json()) as { errors?: { detail: string; code?: string }[] };
  if (res.status !== 200) return { status: res.status, body: body.errors?.map((e) => [e.detail, e.code]) };
  return { status: 200, body };
}

describeWithPart(SQLD_MISSING, "candidates from a caught-up replica equal the primary's", () => {
  let primary: SqldServer;
  let replica: SqldServer;
  let proxy: CountingProxy;
  let writer: TestApp; // writes, and answers from the primary
  let reader: TestApp; // reads from the replica; its primary sits behind the counting proxy

  beforeAll(async () => {
    ({ primary, replica } = await startSqldPair());
    proxy = await startCountingProxy(primary.url);
    writer = await makeTestApp({ PLACEMENT_DB_URL: primary.url });
    reader = await makeTestApp({ PLACEMENT_DB_URL: proxy.url, PLACEMENT_DB_READ_URL: replica.url });
  }, 60_000);

  afterAll(() => {
    writer?.close();
    reader?.close();
    proxy?.stop();
    replica?.stop();
    primary?.stop();
  });

  async function caughtUp(): Promise<void> {
    // The writer raises no mark (it has no replica): throwaway writes through the reader do, on the primary.
    expect((await reader.call('PUT', '/traits/CUSTOM_REPLICA_DIFF_SYNC')).status).toBe(201);
    expect((await reader.call('DELETE', '/traits/CUSTOM_REPLICA_DIFF_SYNC')).status).toBe(204);
    await replicaCaughtUp(replica, primary);
  }

  it(`${ROUNDS} rounds of random writes, then ${QUERIES_PER_ROUND} random queries each (seed ${SEED})`, async () => {
    const r = random(SEED);
    await writer.call('PUT', '/traits/CUSTOM_A');
    await writer.call('PUT', '/traits/CUSTOM_B');
    const cloud: Cloud = { providers: [], consumers: [] };
    for (let i = r.int(4, 6); i > 0; i -= 1) {
      const root = await provider(writer, { inventory: inventory(r, CLASSES), traits: r.chance(0.5) ? r.some(TRAITS, 2) : undefined });
      cloud.providers.push(root);
      for (let j = r.int(0, 2); j > 0; j -= 1)
        cloud.providers.push(await provider(writer, { parent: root, inventory: inventory(r, CLASSES) }));
    }
    cloud.providers.push(
      await provider(writer, { inventory: inventory(r, SHARED), traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: r.some(AGGREGATES, 2) }),
    );
    let compared = 0;
    let nonEmpty = 0;
    const counts = reader.deps.store.replica!.counts;
    for (let round = 0; round < ROUNDS; round += 1) {
      for (let i = r.int(3, 8); i > 0; i -= 1) await mutate(writer, r, cloud);
      await caughtUp();
      await fetch(`${proxy.url}/__hops`, { method: 'DELETE' });
      const served = counts.replica;
      for (let q = 0; q < QUERIES_PER_ROUND; q += 1) {
        const { query, version } = randomQuery(r, cloud);
        const fromReplica = await answer(reader, query, version);
        const fromPrimary = await answer(writer, query, version);
        expect(fromReplica, `round ${round}, ${version}: ${query}`).toEqual(fromPrimary);
        compared += 1;
        const requests = (fromPrimary.body as { allocation_requests?: unknown[] }).allocation_requests;
        if (requests?.length) nonEmpty += 1;
      }
      // Every answer that read the database read the replica: not one request reached the primary.
      const hops = ((await (await fetch(`${proxy.url}/__hops`)).json()) as { hops: number }).hops;
      expect(hops).toBe(0);
      expect(counts.replica).toBeGreaterThan(served);
      expect(counts.behind + counts.unavailable).toBe(0);
    }
    console.log(
      `replica-differential.test.ts: ${compared} queries compared, ${nonEmpty} with candidates, ${cloud.providers.length} providers`,
    );
    expect(nonEmpty).toBeGreaterThan(compared / 5);
  }, 300_000);
});
