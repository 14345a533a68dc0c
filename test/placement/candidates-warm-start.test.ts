// What a Node-mode server process does beside its requests so its first
// answers are as fast as later ones (the warm-up hook of src/entry/warm-up.ts,
// candidates/model-refresh.ts): the trees read and their answer summaries
// built ahead of the first request change nothing in any answer, leave the
// request no tree to read, and follow another process's writes without a
// request asking, re-warming the engine when the trees take a new shape.
import type { InStatement } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { nodeRewarm } from '../../src/entry/warm-up.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { waitUntil } from '../helpers/wait.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const sqlOf = (statement: InStatement): string => (typeof statement === 'string' ? statement : statement.sql);
const CACHE = 20_000;

/** Another server process on the same database file: its own deps, its own trees in memory. */
async function otherProcess(app: TestApp): Promise<{ deps: Deps; get(path: string, version?: string): Promise<string>; close(): void }> {
  const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: app.dbUrl, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent, {
    prepare: false,
  });
  const served = createApp(deps);
  return {
    deps,
    async get(path, version = 'latest') {
      const res = await served.request(path, {
        headers: { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': `placement ${version}` },
      });
      expect(res.status).toBe(200);
      return res.text();
    },
    close: () => deps.store.close(),
  };
}

const QUERIES: [string, string][] = [
  ['resources=VCPU:1,MEMORY_MB:256&required=HW_CPU_X86_AVX2', 'latest'],
  ['resources=VCPU:1,MEMORY_MB:256', '1.21'],
  ['resources=DISK_GB:10&resources_COMPUTE=VCPU:1&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA', 'latest'],
  ['resources=VCPU:1&limit=2', '1.29'],
  ['resources=FPGA:1', '1.36'],
];

/**
 * Another process with its trees read (as at a server process's start) and then kept fresh with no
 * request asking (its refresher), and a wait for them to apply every tree change this app made.
 */
async function watching(app: TestApp) {
  const watcher = await otherProcess(app);
  await watcher.deps.candidates.refresh(watcher.deps.store);
  const refresher = watcher.deps.candidates.keepFresh(watcher.deps.store, 5, (err) => {
    throw err;
  });
  const model = watcher.deps.candidates.trees.modelFor(watcher.deps.store, CACHE);
  const latestSeq = async () =>
    Number((await app.deps.store.client.execute('SELECT MAX(seq) AS s FROM placement_tree_changes')).rows[0]!.s);
  const caughtUp = async () => {
    const latest = await latestSeq();
    await waitUntil(`the watcher's trees to apply change ${latest} (at ${model.appliedSeq})`, () => model.appliedSeq === latest);
    return model.appliedSeq;
  };
  const stop = () => {
    refresher.stop();
    watcher.close();
  };
  return { watcher, model, latestSeq, caughtUp, stop };
}

describe('trees read and summaries built before the first request', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await makeTestApp();
    for (let i = 0; i < 5; i += 1)
      await provider(app, {
        inventory: { VCPU: { total: 32 }, MEMORY_MB: { total: 8192 }, DISK_GB: { total: 100 } },
        traits: i % 2 ? ['HW_CPU_X86_AVX2'] : [],
      });
    for (let i = 0; i < 3; i += 1) {
      const cn = await provider(app, { inventory: { DISK_GB: { total: 20480 } } });
      const numa = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048 } } });
      await provider(app, { parent: numa, inventory: { FPGA: { total: 1 } } });
      await provider(app, { parent: numa, inventory: { FPGA: { total: 1 } } });
    }
  });
  afterAll(() => app.close());

  it('answers byte for byte as a process that reads the trees on its first request, and that request reads no tree', async () => {
    const cold = await otherProcess(app);
    const prepared = await otherProcess(app);
    try {
      await prepared.deps.candidates.refresh(prepared.deps.store);
      // What the prepared process's requests read: every batch carries the change check, none a whole tree.
      const batches: string[][] = [];
      const readBatch = prepared.deps.store.readBatch;
      prepared.deps.store.readBatch = (statements) => {
        batches.push(statements.map(sqlOf));
        return readBatch(statements);
      };
      for (const [query, version] of QUERIES) {
        const path = `/allocation_candidates?${query}`;
        expect(await prepared.get(path, version)).toBe(await cold.get(path, version));
      }
      expect(batches.length).toBeGreaterThanOrEqual(QUERIES.length);
      expect(batches.every((b) => b.some((sql) => sql.includes('placement_tree_changes')))).toBe(true);
      expect(batches.every((b) => b.every((sql) => !sql.includes('resource_providers p WHERE')))).toBe(true);
    } finally {
      cold.close();
      prepared.close();
    }
  });

  it('keeps the trees current as another process writes, with no request asking', async () => {
    const { watcher, model, latestSeq, caughtUp, stop } = await watching(app);
    try {
      expect(await caughtUp()).toBe(await latestSeq());
      // This process adds a host and changes one; the watcher's trees follow on their own.
      const added = await provider(app, { inventory: { VCPU: { total: 2 }, MEMORY_MB: { total: 512 } }, traits: ['HW_CPU_X86_AVX2'] });
      expect(await caughtUp()).toBe(await latestSeq());
      const ids = (await app.deps.store.client.execute({ sql: 'SELECT id FROM resource_providers WHERE uuid = ?', args: [added] })).rows;
      expect(model.tree(Number(ids[0]!.id)).map((p) => p.uuid)).toEqual([added]);
      const path = `/allocation_candidates?${QUERIES[0]![0]}`;
      const res = await app.call('GET', path);
      expect(await watcher.get(path)).toBe(await res.text());
    } finally {
      stop();
    }
  });

  it('writes the summaries of trees it re-reads with their usage, and answers as a fresh process when usage moved since', async () => {
    const { watcher, model, caughtUp, stop } = await watching(app);
    try {
      // A host written and used by this process: the watcher re-reads its tree with no request asking.
      const host = await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } }, traits: ['HW_CPU_X86_AVX2'] });
      const claim = (consumer: string, vcpu: number) =>
        app.call('PUT', `/allocations/${consumer}`, {
          version: '1.28',
          body: {
            allocations: { [host]: { resources: { VCPU: vcpu, MEMORY_MB: 256 } } },
            project_id: crypto.randomUUID(),
            user_id: crypto.randomUUID(),
            consumer_generation: null,
          },
        });
      expect((await claim(crypto.randomUUID(), 2)).status).toBe(204);
      // An inventory change after the claim: the tree is re-read with that usage on it.
      const inventories = await app.call('GET', `/resource_providers/${host}/inventories`);
      const generation = ((await inventories.json()) as { resource_provider_generation: number }).resource_provider_generation;
      const res = await app.call('PUT', `/resource_providers/${host}/inventories`, {
        body: { resource_provider_generation: generation, inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 4096 } } },
      });
      expect(res.status).toBe(200);
      await caughtUp();
      const [node] = model.tree(model.roots().find((root) => model.tree(root)[0]!.uuid === host)!);
      // Written by the refresh, before any request named the host: the summary with its 2 VCPU used.
      const summary = watcher.deps.candidates.keptBytes.nodeBytes(node!).summary;
      expect(new TextDecoder().decode(summary!.bytes)).toContain('"VCPU":{"capacity":16,"used":2}');
      const path = `/allocation_candidates?${QUERIES[0]![0]}`;
      expect(await watcher.get(path)).toBe(await (await app.call('GET', path)).text());
      // Usage moved since the summary was written (no tree changed): the answer shows it, as a fresh process's does.
      expect((await claim(crypto.randomUUID(), 3)).status).toBe(204);
      const fresh = await otherProcess(app);
      try {
        const answer = await watcher.get(path);
        expect(answer).toContain('"VCPU":{"capacity":16,"used":5}');
        expect(answer).toBe(await fresh.get(path));
      } finally {
        fresh.close();
      }
    } finally {
      stop();
    }
  });

  it('writes the summaries of trees a request re-read, at the next refresh', async () => {
    const watcher = await otherProcess(app);
    try {
      await watcher.deps.candidates.refresh(watcher.deps.store);
      const host = await provider(app, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } } });
      // A request whose answer does not name the host applies its tree (its batch reads the trees changed since).
      await watcher.get('/allocation_candidates?resources=FPGA:1');
      const model = watcher.deps.candidates.trees.modelFor(watcher.deps.store, CACHE);
      const node = () => model.tree(model.roots().find((root) => model.tree(root)[0]!.uuid === host)!)[0]!;
      expect(node().uuid).toBe(host);
      await watcher.deps.candidates.refresh(watcher.deps.store);
      const summary = watcher.deps.candidates.keptBytes.nodeBytes(node()).summary;
      expect(new TextDecoder().decode(summary!.bytes)).toContain('"VCPU":{"capacity":4,"used":0}');
    } finally {
      watcher.close();
    }
  });

  it('re-warms once the trees take a shape the process has not answered over, only refills when only amounts change', async () => {
    const watcher = await otherProcess(app);
    // As a server process: the trees read by the warm-up at its start, then kept fresh.
    await watcher.deps.candidates.refresh(watcher.deps.store);
    const rewarms: number[] = [];
    let refills = 0;
    // The refreshes are counted as they read (one read batch each), so the test waits for
    // refreshes that happened, however slowly a loaded machine runs the timer.
    let refreshes = 0;
    // While a tree is being written (a root, then its inventory, then its child) the watcher reads
    // nothing, so it meets each tree whole, never one of the half-built shapes on the way (each of
    // those would be a shape of its own, and a re-warm, whenever a refresh fell between two writes).
    let unseen: Promise<void> | undefined;
    const readBatch = watcher.deps.store.readBatch;
    watcher.deps.store.readBatch = async (statements) => {
      while (unseen) await unseen;
      refreshes += 1;
      return readBatch(statements);
    };
    const unseenWhile = async (write: () => Promise<void>) => {
      let done!: () => void;
      unseen = new Promise((resolve) => {
        done = resolve;
      });
      try {
        await write();
      } finally {
        unseen = undefined;
        done();
      }
    };
    const model = watcher.deps.candidates.trees.modelFor(watcher.deps.store, CACHE);
    const refresher = watcher.deps.candidates.keepFresh(
      watcher.deps.store,
      5,
      (err) => {
        throw err;
      },
      async (kind) => {
        if (kind === 'shape') rewarms.push(Date.now());
        else refills += 1;
      },
    );
    /** The re-warms once the watcher has read every change written so far and refreshed three more times (a due re-warm runs on the first quiet one, before the next starts). */
    const settled = async () => {
      const latest = Number((await app.deps.store.client.execute('SELECT MAX(seq) AS s FROM placement_tree_changes')).rows[0]!.s);
      await waitUntil(`the watcher's trees to apply change ${latest} (at ${model.appliedSeq})`, () => model.appliedSeq === latest);
      const seen = refreshes;
      await waitUntil(`three more refreshes of the watcher's trees (${refreshes - seen} so far)`, () => refreshes >= seen + 3);
      return rewarms.length;
    };
    try {
      // The trees held at the start were warmed over: nothing to do.
      expect(await settled()).toBe(0);
      // A tree of a new shape (a root with a PGPU child): one re-warm.
      let host = '';
      await unseenWhile(async () => {
        host = await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } });
        await provider(app, { parent: host, inventory: { PGPU: { total: 1 } } });
      });
      expect(await settled()).toBe(1);
      // Another tree of that shape, and an inventory's total changed: no new shape, no re-warm.
      await unseenWhile(async () => {
        const other = await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } });
        await provider(app, { parent: other, inventory: { PGPU: { total: 1 } } });
      });
      const res = await app.call('PUT', `/resource_providers/${host}/inventories`, {
        body: { resource_provider_generation: 1, inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 4096 } } },
      });
      expect(res.status).toBe(200);
      const refillsBefore = refills;
      expect(await settled()).toBe(1);
      // Trees re-read since the last re-warm: once the writes settle, one refill.
      await waitUntil(`a refill after the writes settled (${refills - refillsBefore} so far)`, () => refills > refillsBefore);
    } finally {
      refresher.stop();
      watcher.close();
    }
  });

  it('re-warms and refills through the real path without changing an answer (a query naming what the cloud lacks is dropped)', async () => {
    const watcher = await otherProcess(app);
    try {
      const path = `/allocation_candidates?${QUERIES[2]![0]}`;
      const before = await watcher.get(path);
      // A host's summary as a client's answer at the newest microversion kept it.
      await watcher.get(`/allocation_candidates?${QUERIES[0]![0]}`);
      const model = watcher.deps.candidates.trees.modelFor(watcher.deps.store, CACHE);
      const host = model
        .roots()
        .map((root) => model.tree(root)[0]!)
        .find((p) => p.traits.has('HW_CPU_X86_AVX2'))!;
      const summary = watcher.deps.candidates.keptBytes.nodeBytes(host).summary;
      expect(summary).not.toBeNull();
      const counted = () => JSON.stringify(watcher.deps.metrics.candidatesReturned.snapshot());
      const answersCounted = counted();
      await nodeRewarm(watcher.deps);
      await nodeRewarm(watcher.deps, 'refill');
      // Not counted as answers, and what clients' answers kept left as it was (the re-warm asks older microversions too).
      expect(counted()).toBe(answersCounted);
      expect(watcher.deps.candidates.keptBytes.nodeBytes(host).summary).toBe(summary);
      expect(await watcher.get(path)).toBe(before);
      expect(before).toBe(await (await app.call('GET', path)).text());
    } finally {
      watcher.close();
    }
  });
});
