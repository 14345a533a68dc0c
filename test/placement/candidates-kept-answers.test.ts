// Kept answers (candidates/index.ts KeptAnswers): a full JSON answer reused
// while its request's one read batch reads the same trees, names and usage.
// Differential: the route's answers (kept answers on) against the same engine
// with none kept and a tree cache of its own (no usage held), byte for byte, over random clouds, a small pool of repeated
// queries across microversions (so most are answered from a kept answer), and
// between them writes of every kind from this app and from a second app on
// the same database file (another process to this one's engine), holds whose
// windows open and close as the app's clock moves, and the clock itself.
// Also: the presenter's kept bytes belong to one app and are swept.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Microversion } from '../../src/http/microversion.js';
import { TreeCache } from '../../src/placement/candidates/cloud-model.js';
import { findAllocationCandidatesJson } from '../../src/placement/candidates/index.js';
import { KeptBytes } from '../../src/placement/candidates/present/json.js';
import { provider, randomInventory } from '../helpers/providers.js';
import { random, type Random } from '../helpers/random.js';
import { makeTestApp, sameDatabaseApp, type TestApp } from '../helpers/test-app.js';

const CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB'] as const;
const TRAITS = ['HW_CPU_X86_AVX2', 'CUSTOM_A', 'CUSTOM_B'] as const;
const AGGREGATES = [crypto.randomUUID(), crypto.randomUUID()];
const T0 = Date.parse('2030-01-01T00:00:00Z');
const MINUTE = 60_000;
const at = (ms: number) => new Date(ms).toISOString();
const decoder = new TextDecoder();
/** The projects claims are made for (a hold names a project placement knows a consumer of). */
const PROJECTS = [crypto.randomUUID(), crypto.randomUUID()];

let now = T0;

interface Cloud {
  providers: string[];
  consumers: string[];
  holds: string[];
}

async function buildCloud(app: TestApp, r: Random): Promise<Cloud> {
  const providers: string[] = [];
  for (const name of TRAITS.filter((t) => t.startsWith('CUSTOM_'))) await app.call('PUT', `/traits/${name}`);
  for (let i = r.int(4, 8); i > 0; i -= 1) {
    const root = await provider(app, {
      inventory: randomInventory(r, CLASSES),
      traits: r.chance(0.6) ? r.some(TRAITS, 2) : undefined,
      aggregates: r.chance(0.5) ? r.some(AGGREGATES, 1) : undefined,
    });
    providers.push(root);
    for (let j = r.chance(0.4) ? r.int(1, 2) : 0; j > 0; j -= 1) {
      providers.push(
        await provider(app, {
          parent: root,
          inventory: randomInventory(r, CLASSES),
          traits: r.chance(0.5) ? r.some(TRAITS, 1) : undefined,
        }),
      );
    }
  }
  if (r.chance(0.5)) {
    providers.push(
      await provider(app, { inventory: randomInventory(r, ['DISK_GB']), traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: AGGREGATES }),
    );
  }
  return { providers, consumers: [], holds: [] };
}

/** A pool of queries, each asked many times: resources, traits, aggregates, limits, groups, across microversions. */
function queryPool(r: Random): { query: string; mv: Microversion }[] {
  const pool: { query: string; mv: Microversion }[] = [];
  for (let i = 0; i < 10; i += 1) {
    const minor = r.pick([10, 17, 21, 25, 29, 34, 36, 39]);
    const params = new URLSearchParams();
    params.set(
      'resources',
      r
        .some(CLASSES, 3)
        .map((c) => `${c}:${r.pick([1, 1, 2])}`)
        .join(','),
    );
    if (minor >= 17 && r.chance(0.3)) params.set('required', r.pick(TRAITS));
    if (minor >= 21 && r.chance(0.3)) params.set('member_of', r.pick(AGGREGATES));
    if (minor >= 25 && r.chance(0.4)) {
      params.set('resources1', `${r.pick(CLASSES)}:1`);
      params.set('group_policy', r.pick(['none', 'isolate']));
    }
    if (minor >= 16 && r.chance(0.3)) params.set('limit', String(r.int(1, 4)));
    pool.push({ query: params.toString(), mv: new Microversion(1, minor) });
  }
  return pool;
}

/** One random write, by `app` (this one or the second), or a move of the clock; refusals are fine. */
async function write(app: TestApp, r: Random, cloud: Cloud): Promise<string> {
  const target = r.pick(cloud.providers);
  const shown = await app.call('GET', `/resource_providers/${target}`);
  const generation = shown.status === 200 ? ((await shown.json()) as { generation: number }).generation : 0;
  switch (r.int(0, 10)) {
    case 0:
    case 1:
    case 2: {
      const res = await app.call('GET', `/allocation_candidates?resources=${r.pick(CLASSES)}:${r.int(1, 2)}&limit=3`);
      const body = (await res.json()) as { allocation_requests: { allocations: unknown }[] };
      const choice = body.allocation_requests[r.int(0, 2)] ?? body.allocation_requests[0];
      if (!choice) return 'no claim';
      const consumer = crypto.randomUUID();
      const project = r.pick(PROJECTS);
      const claim = await app.call('PUT', `/allocations/${consumer}`, {
        body: {
          allocations: choice.allocations,
          project_id: project,
          user_id: project,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      });
      if (claim.status === 204) cloud.consumers.push(consumer);
      return `claim ${claim.status}`;
    }
    case 3:
    case 4: {
      if (!cloud.consumers.length) return 'no consumer';
      const consumer = cloud.consumers.splice(r.int(0, cloud.consumers.length - 1), 1)[0];
      return `unclaim ${(await app.call('DELETE', `/allocations/${consumer}`)).status}`;
    }
    case 5: {
      const res = await app.call('PUT', `/resource_providers/${target}/inventories`, {
        body: { resource_provider_generation: generation, inventories: randomInventory(r, CLASSES) },
      });
      return `inventories ${res.status}`;
    }
    case 6: {
      const [what, names] = r.chance(0.6)
        ? ['traits', { traits: r.some(TRAITS, 2) }]
        : ['aggregates', { aggregates: r.some(AGGREGATES, 1) }];
      const body = { resource_provider_generation: generation, ...(r.chance(0.3) ? { [what]: [] } : names) };
      return `${what} ${(await app.call('PUT', `/resource_providers/${target}/${what}`, { body })).status}`;
    }
    case 7: {
      // A hold on a provider, its window opening soon: while it constrains the request, nothing is kept or reused.
      // Begun or about to: outsiders' answers lose what it holds (its whole inventory, often).
      const start = now + r.int(-10, 30) * MINUTE;
      const project = r.pick(PROJECTS);
      const held = (await (await app.call('GET', `/resource_providers/${target}/inventories`)).json()) as {
        inventories?: Record<string, { total: number }>;
      };
      const classes = Object.keys(held.inventories ?? {});
      if (!classes.length) return 'no inventory';
      const heldClass = r.pick(classes);
      const res = await app.call('POST', '/ext/holds', {
        body: {
          project_id: project,
          start: at(start),
          end: at(start + r.int(5, 60) * MINUTE),
          end_action: 'release',
          allocations: { [target]: { resources: { [heldClass]: r.chance(0.5) ? held.inventories![heldClass]!.total : 1 } } },
        },
      });
      if (res.status === 201) cloud.holds.push(((await res.json()) as { uuid: string }).uuid);
      return `hold ${res.status}`;
    }
    case 8: {
      if (!cloud.holds.length) return 'no hold';
      const hold = cloud.holds.splice(r.int(0, cloud.holds.length - 1), 1)[0];
      return `unhold ${(await app.call('DELETE', `/ext/holds/${hold}`)).status}`;
    }
    case 9: {
      // Allocations changed in SQL, bypassing the API: no provider generation moves, only the rows (and their triggers).
      const { client } = app.deps.store;
      const row = (await client.execute('SELECT id FROM allocations ORDER BY random() LIMIT 1')).rows[0];
      if (!row) return 'no allocation';
      const id = Number(row.id);
      const other = (await client.execute({ sql: 'SELECT id FROM resource_providers WHERE uuid = ?', args: [target] })).rows[0];
      const [kind, sql, args] = r.pick([
        ['sql-used', 'UPDATE allocations SET used = used + 1 WHERE id = ?', [id]],
        ['sql-delete', 'DELETE FROM allocations WHERE id = ?', [id]],
        ['sql-move', 'UPDATE allocations SET resource_provider_id = ? WHERE id = ?', [Number(other?.id ?? 0), id]],
      ] as const);
      await client.execute({ sql, args: [...args] });
      return `${kind} 200`;
    }
    case 10: {
      if (!r.chance(0.3)) break;
      // What a name resolves to, changed: a custom trait removed and made again (a new id; refused while a
      // provider has it), and the rows of aggregates no provider is in removed in SQL (a member_of names them).
      const trait = r.pick(TRAITS.filter((t) => t.startsWith('CUSTOM_')));
      const removed = await app.call('DELETE', `/traits/${trait}`);
      await app.call('PUT', `/traits/${trait}`);
      // A provider carries it at once: an answer over its old id would leave that provider out.
      await app.call('PUT', `/resource_providers/${target}/traits`, {
        body: { resource_provider_generation: generation, traits: [trait] },
      });
      await app.deps.store.client.execute(
        'DELETE FROM placement_aggregates WHERE id NOT IN (SELECT aggregate_id FROM resource_provider_aggregates)',
      );
      return `names ${removed.status}`;
    }
  }
  now += r.int(1, 90) * MINUTE;
  return 'clock';
}

const SEEDS = [3, 17, 29, 43, 59, 71];
/** Answers put together from a kept one with the trees whose usage changed computed again, over every seed. */
let splices = 0;
const STEPS = 700;

describe('kept answers: the route against the engine with none kept', () => {
  for (const seed of SEEDS) {
    describe(`seed ${seed}`, () => {
      let first: TestApp;
      let second: TestApp;
      beforeAll(async () => {
        now = T0;
        first = await makeTestApp();
        first.deps.clock = () => new Date(now);
        second = await sameDatabaseApp(first, () => now);
      });
      afterAll(() => {
        second.close();
        first.close();
      });

      it(`answers ${STEPS} repeated queries byte for byte between writes of both apps and clock moves`, async () => {
        const r = random(seed);
        const cloud = await buildCloud(first, r);
        const pool = queryPool(r);
        const engine = first.deps.candidates;
        const hitsBefore = engine.answers.hits;
        const splicesBefore = engine.answers.splices;
        const writes: string[] = [];
        const compare = async (step: number, query: string, mv: Microversion) => {
          const res = await first.call('GET', `/allocation_candidates?${query}`, { version: mv.toString() });
          expect(res.status, query).toBe(200);
          const kept = await res.text();
          const fresh = await findAllocationCandidatesJson(
            first.deps.store.nearby,
            engine.parse(Object.fromEntries([...new URLSearchParams(query)].map(([k, v]) => [k, [v]])), mv),
            mv,
            // Nothing of the app's: no kept answer, and a tree cache of its own (it holds no usage read before).
            engine.options({ answers: undefined, trees: new TreeCache(), keptBytes: undefined }),
          );
          expect(kept, `seed ${seed} step ${step} at ${mv}: ${query} after ${writes.slice(-3).join(', ')}`).toBe(decoder.decode(fresh));
        };
        for (let step = 0; step < STEPS; step += 1) {
          if (r.chance(0.2)) {
            const written = await write(r.chance(0.5) ? first : second, r, cloud);
            writes.push(written);
            // What changes no usage and no tree (a hold, the clock): every query at once, while their kept answers are there.
            if (/^(hold|unhold|clock)/.test(written)) for (const { query, mv } of pool) await compare(step, query, mv);
          }
          const { query, mv } = r.pick(pool);
          await compare(step, query, mv);
        }
        // Most answers came from a kept one, and the writes were of every kind, from both apps.
        expect(engine.answers.hits - hitsBefore).toBeGreaterThan(STEPS / 10);
        splices += engine.answers.splices - splicesBefore;
        const done = new Set(writes.filter((w) => / 20\d$/.test(w)).map((w) => w.split(' ')[0]));
        expect([...done].sort()).toEqual(
          expect.arrayContaining(['claim', 'hold', 'inventories', 'sql-delete', 'sql-move', 'sql-used', 'traits', 'unclaim', 'unhold']),
        );
      }, 120_000);
    });
  }

  it('put answers together from kept ones, the trees whose usage changed computed again', () => {
    expect(splices).toBeGreaterThan(SEEDS.length * 5);
  });

  it("reads the usage whole when the usage changes are numbered below a kept answer's (a database restored under the service)", async () => {
    const app = await makeTestApp();
    try {
      const rp = await provider(app, { inventory: { VCPU: { total: 8 } } });
      const claim = async () =>
        app.call('PUT', `/allocations/${crypto.randomUUID()}`, {
          body: {
            allocations: { [rp]: { resources: { VCPU: 1 } } },
            project_id: PROJECTS[0],
            user_id: PROJECTS[0],
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          },
        });
      for (let i = 0; i < 3; i += 1) expect((await claim()).status).toBe(204);
      const used = async (amount = 1) =>
        (
          (await (await app.call('GET', `/allocation_candidates?resources=VCPU:${amount}`)).json()) as {
            provider_summaries: Record<string, { resources: { VCPU: { used: number } } }>;
          }
        ).provider_summaries[rp]!.resources.VCPU.used;
      expect(await used()).toBe(3);
      expect(await used()).toBe(3);
      expect(app.deps.candidates.answers.hits).toBe(1);
      // The change rows start again from 1 (an older copy of the file), with one claim fewer.
      const { client } = app.deps.store;
      await client.execute('DELETE FROM placement_usage_changes');
      await client.execute('DELETE FROM allocations WHERE id = (SELECT MAX(id) FROM allocations)');
      // Read whole in the request's one batch, as any other usage: a query the app has not answered (over the
      // usage its model holds) and the kept one's.
      const batches = vi.spyOn(app.deps.store.nearby, 'readBatch');
      expect(await used(2)).toBe(2);
      expect(await used()).toBe(2);
      expect(batches).toHaveBeenCalledTimes(2);
      batches.mockRestore();
      expect(await used()).toBe(2);
      expect(app.deps.candidates.answers.hits).toBe(2);
    } finally {
      app.close();
    }
  });

  it('keeps nothing in random order, and each app keeps its own', async () => {
    const shuffled = await makeTestApp({ PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: 'true' });
    const plain = await makeTestApp({ PLACEMENT_DB_URL: shuffled.dbUrl });
    try {
      await provider(shuffled, { inventory: { VCPU: { total: 8 } } });
      for (let i = 0; i < 3; i += 1) {
        expect((await shuffled.call('GET', '/allocation_candidates?resources=VCPU:1')).status).toBe(200);
        expect((await plain.call('GET', '/allocation_candidates?resources=VCPU:1')).status).toBe(200);
      }
      expect(shuffled.deps.candidates.answers.size).toBe(0);
      expect(plain.deps.candidates.answers.size).toBe(1);
      expect(plain.deps.candidates.answers.hits).toBe(2);
      expect(plain.deps.candidates.keptBytes).not.toBe(shuffled.deps.candidates.keptBytes);
    } finally {
      plain.deps.store.close();
      shuffled.close();
    }
  });
});

/**
 * A query answered twice by `first` (the second time from its kept answer), then `change` by another app on the
 * same database, then the query again: `first` sees the change first in that request's own kept read (no other
 * request of its re-reads its model before), and the change marks one tree, not every tree (which would make the
 * model read whole, and the names with it). Checks the answer against the engine with nothing kept; its providers.
 */
async function answeredAfterUnseenChange(
  build: (app: TestApp) => Promise<string>,
  change: (other: TestApp) => Promise<void>,
): Promise<{ before: string[]; after: string[] }> {
  const first = await makeTestApp();
  const second = await sameDatabaseApp(first);
  const mv = new Microversion(1, 39);
  try {
    const query = await build(first);
    const ask = async () => {
      const res = await first.call('GET', `/allocation_candidates?${query}`, { version: mv.toString() });
      expect(res.status, query).toBe(200);
      return res.text();
    };
    const engine = first.deps.candidates;
    const before = await ask();
    const hits = engine.answers.hits;
    expect(await ask()).toBe(before);
    expect(engine.answers.hits, 'the query is answered from its kept answer').toBe(hits + 1);
    await change(second);
    const after = await ask();
    const fresh = await findAllocationCandidatesJson(
      first.deps.store.nearby,
      engine.parse(Object.fromEntries([...new URLSearchParams(query)].map(([k, v]) => [k, [v]])), mv),
      mv,
      engine.options({ answers: undefined, trees: new TreeCache(), keptBytes: undefined }),
    );
    expect(after, query).toBe(decoder.decode(fresh));
    const providers = (body: string) => Object.keys((JSON.parse(body) as { provider_summaries: object }).provider_summaries).sort();
    return { before: providers(before), after: providers(after) };
  } finally {
    second.close();
    first.close();
  }
}

const generationOf = async (app: TestApp, rp: string) =>
  ((await (await app.call('GET', `/resource_providers/${rp}`)).json()) as { generation: number }).generation;

// A kept answer's names (keptReadStatement) are not read again while no tree changed; once one did, they are, even
// when nothing else made the model read them: what an in_tree uuid or member_of aggregate resolves to moves with a
// provider's write, which marks its tree only.
describe('kept answers: the names read again in the kept read that first sees a tree change', () => {
  it('an in_tree provider removed and made again (another id, another root)', async () => {
    let named = '';
    const { before, after } = await answeredAfterUnseenChange(
      async (app) => {
        await provider(app, { inventory: { VCPU: { total: 8 } } });
        named = await provider(app, { inventory: { VCPU: { total: 4 } } });
        return `resources=VCPU:1&in_tree=${named}`;
      },
      async (other) => {
        expect((await other.call('DELETE', `/resource_providers/${named}`)).status).toBe(204);
        const made = await other.call('POST', '/resource_providers', { body: { name: `rp-${named}`, uuid: named } });
        expect(made.status).toBe(200);
        const res = await other.call('PUT', `/resource_providers/${named}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 2 } } },
        });
        expect(res.status).toBe(200);
      },
    );
    expect(before).toEqual([named]);
    expect(after).toEqual([named]);
  });

  it('an in_tree child moved under another root', async () => {
    let [rootA, rootB, child] = ['', '', ''];
    const { before, after } = await answeredAfterUnseenChange(
      async (app) => {
        rootA = await provider(app, { inventory: { VCPU: { total: 8 } } });
        rootB = await provider(app, { inventory: { VCPU: { total: 8 } } });
        child = await provider(app, { parent: rootA, inventory: { VCPU: { total: 4 } } });
        return `resources=VCPU:1&in_tree=${child}`;
      },
      async (other) => {
        const moved = await other.call('PUT', `/resource_providers/${child}`, {
          body: { name: `rp-${child}`, parent_provider_uuid: rootB },
          version: '1.37',
        });
        expect(moved.status).toBe(200);
      },
    );
    expect(before).toEqual([rootA, child].sort());
    expect(after).toEqual([rootB, child].sort());
  });

  it('a member_of aggregate no provider was in, a provider put in it', async () => {
    const aggregate = crypto.randomUUID();
    let member = '';
    const { before, after } = await answeredAfterUnseenChange(
      async (app) => {
        member = await provider(app, { inventory: { VCPU: { total: 8 } } });
        return `resources=VCPU:1&member_of=${aggregate}`;
      },
      async (other) => {
        const res = await other.call('PUT', `/resource_providers/${member}/aggregates`, {
          body: { resource_provider_generation: await generationOf(other, member), aggregates: [aggregate] },
        });
        expect(res.status).toBe(200);
      },
    );
    expect(before).toEqual([]);
    expect(after).toEqual([member]);
  });

  it('a kept read that comes back after another request moved the model (reads out of order, as over sqld)', async () => {
    const first = await makeTestApp();
    const second = await sameDatabaseApp(first);
    const mv = new Microversion(1, 39);
    try {
      await provider(first, { inventory: { VCPU: { total: 8 } } });
      const named = await provider(first, { inventory: { VCPU: { total: 4 } } });
      const query = `resources=VCPU:1&in_tree=${named}`;
      const ask = async (q: string) => {
        const res = await first.call('GET', `/allocation_candidates?${q}`, { version: mv.toString() });
        expect(res.status, q).toBe(200);
        return res.text();
      };
      await ask(query);
      await ask(query);
      expect(first.deps.candidates.answers.hits).toBe(1);
      // The next batch runs at once (its snapshot is before the change) but its rows are handed back only later.
      const reader = first.deps.store.nearby;
      const original = reader.readBatch.bind(reader);
      let release = () => {};
      const handBack = new Promise<void>((resolve) => {
        release = resolve;
      });
      let readDone = () => {};
      const read = new Promise<void>((resolve) => {
        readDone = resolve;
      });
      let holdNext = true;
      const batches = vi.spyOn(reader, 'readBatch').mockImplementation(async (statements) => {
        const rows = await original(statements);
        if (holdNext) {
          holdNext = false;
          readDone();
          await handBack;
        }
        return rows;
      });
      const racing = ask(query);
      await read;
      // The named provider removed and made again (another id, another root) by another process, and another query
      // of this app's re-reading its model past that, all before the held batch's rows arrive.
      expect((await second.call('DELETE', `/resource_providers/${named}`)).status).toBe(204);
      expect((await second.call('POST', '/resource_providers', { body: { name: `rp-${named}`, uuid: named } })).status).toBe(200);
      const stocked = await second.call('PUT', `/resource_providers/${named}/inventories`, {
        body: { resource_provider_generation: 0, inventories: { VCPU: { total: 2 } } },
      });
      expect(stocked.status).toBe(200);
      await ask('resources=VCPU:1');
      release();
      const answered = await racing;
      batches.mockRestore();
      const fresh = decoder.decode(
        await findAllocationCandidatesJson(
          reader,
          first.deps.candidates.parse(Object.fromEntries([...new URLSearchParams(query)].map(([k, v]) => [k, [v]])), mv),
          mv,
          first.deps.candidates.options({ answers: undefined, trees: new TreeCache(), keptBytes: undefined }),
        ),
      );
      expect(fresh).toContain(`"${named}":{"resources":{"VCPU":{"capacity":2`);
      // Neither the late answer (old names over the moved model: no snapshot's answer) nor the answer kept from it.
      expect(answered).toBe(fresh);
      expect(await ask(query)).toBe(fresh);
    } finally {
      second.close();
      first.close();
    }
  });
});

describe('kept presentation bytes', () => {
  it('drops the entries no answer used for a sweep interval, and renews an entry whose node was replaced', () => {
    const kept = new KeptBytes(4);
    const used = { id: 1 };
    const idle = { id: 2 };
    kept.nodeBytes(used).summary = null;
    const idleEntry = kept.nodeBytes(idle);
    idleEntry.template = { shape: 'k', parts: [new Uint8Array([1])], classIds: [] };
    expect(kept.entries).toBe(2);
    // Four answers name only the first provider: the sweep after the fourth keeps the second (unused for 4, not more).
    for (let i = 0; i < 4; i += 1) {
      kept.nodeBytes(used);
      kept.answerWritten(10);
    }
    expect(kept.entries).toBe(2);
    for (let i = 0; i < 4; i += 1) {
      kept.nodeBytes(used);
      kept.answerWritten(10);
    }
    expect(kept.entries).toBe(1);
    expect(kept.nodeBytes(idle).template).toBeNull();
    // Another node of the same id (its tree re-read) starts empty.
    const entry = kept.nodeBytes(used);
    entry.template = { shape: 'k', parts: [new Uint8Array([2])], classIds: [] };
    expect(kept.nodeBytes({ id: 1 }).template).toBeNull();
  });
});
