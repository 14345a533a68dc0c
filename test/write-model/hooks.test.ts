// The write kernel's claim guards (placement/writes/kernel.ts), with
// the kind of guard the next issues install: a per-project VCPU limit that
// reads the project's usage across providers (what no provider generation
// protects) and refuses with a 409 code of its own. Installed into one app's
// Deps, it reads in the claim's snapshot, decides on the ordinary path, and
// guards the write batch of both paths, so racing claims of one project on
// different providers never pass the limit together.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALLOC, CONSUMER, PROJECT, RC } from '../../src/db/columns.js';
import { guard } from '../../src/db/write-batch.js';
import { conflict } from '../../src/errors.js';
import { type ClaimDecision, type ClaimGuard, type ClaimView, type ConsumerState, writeHooks } from '../../src/placement/writes/kernel.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { seedProvider } from '../helpers/placement-seed.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

const LIMIT = 4;
const VCPU_ID = `(SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} = 'VCPU')`;

/** A project may hold at most LIMIT VCPU, over every provider. */
const projectLimit: ClaimGuard = {
  name: 'project VCPU limit',
  snapshotStatements: (_providers, consumers) => [
    {
      // Each project's VCPU usage by consumers other than those claimed (their allocations are replaced).
      sql: `SELECT p.${PROJECT.externalId} AS project, SUM(a.${ALLOC.used}) AS used FROM allocations a
        JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId} JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId}
        WHERE a.${ALLOC.resourceClassId} = ${VCPU_ID} AND a.${ALLOC.consumerId} NOT IN (SELECT value FROM json_each(?))
        GROUP BY p.${PROJECT.externalId}`,
      args: [JSON.stringify(consumers)],
    },
  ],
  decider: ([usage]) => {
    const used = new Map(usage!.rows.map((r) => [String(r.project), Number(r.used)]));
    return (claim) => {
      const wanted = new Map<string, number>();
      for (const c of claim.claims) {
        const vcpu = Object.values(c.allocations).reduce((sum, resources) => sum + (resources.VCPU ?? 0), 0);
        const project = c.projectId ?? '';
        wanted.set(project, (wanted.get(project) ?? used.get(project) ?? 0) + vcpu);
      }
      for (const [project, total] of wanted) {
        if (total > LIMIT)
          return { error: conflict(`Project ${project} would hold ${total} VCPU, over its limit ${LIMIT}.`, 'ext.limits.over_limit') };
      }
      return null;
    };
  },
  holdsSql: (consumers) => `NOT EXISTS (SELECT 1 FROM allocations a JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId}
    WHERE a.${ALLOC.resourceClassId} = ${VCPU_ID}
      AND c.${CONSUMER.projectId} IN (SELECT ${CONSUMER.projectId} FROM consumers WHERE ${CONSUMER.uuid} IN (${consumers}))
    GROUP BY c.${CONSUMER.projectId} HAVING SUM(a.${ALLOC.used}) > ${LIMIT})`,
  beyondProviderGenerations: true,
};

let t: TestApp;
let providers: string[];
beforeEach(async () => {
  t = await makeTestApp();
  providers = [];
  for (let i = 0; i < 4; i += 1) providers.push((await seedProvider(t.deps, { VCPU: { total: 1000, maxUnit: 16 } })).uuid);
  t.deps.writeHooks = writeHooks([...t.deps.extensions.writes(), { claimGuards: [projectLimit] }]);
});
afterEach(() => t.close());

const claim = (project: string, provider: string, vcpu: number, version: string) =>
  t.call('PUT', `/allocations/${randomUUID()}`, {
    version,
    body: {
      allocations: { [provider]: { resources: { VCPU: vcpu } } },
      project_id: project,
      user_id: 'u',
      ...(version === '1.27' ? {} : { consumer_generation: null }),
    },
  });

async function projectUsage(project: string): Promise<number> {
  const res = await t.call('GET', `/usages?project_id=${project}`, { version: '1.9' });
  return ((await res.json()) as { usages: Record<string, number> }).usages.VCPU ?? 0;
}

describe('a claim guard installed into the write kernel', () => {
  for (const version of ['1.28', '1.27']) {
    it(`refuses, at ${version}, a claim over the project's limit with its own 409 code, across providers`, async () => {
      const project = randomUUID();
      expect((await claim(project, providers[0]!, 3, version)).status).toBe(204);
      const refused = await claim(project, providers[1]!, 2, version);
      expect(refused.status).toBe(409);
      expect(await errorOf(refused)).toMatchObject({ code: 'ext.limits.over_limit', detail: expect.stringContaining('over its limit 4') });
      expect((await claim(project, providers[1]!, 1, version)).status).toBe(204);
      expect((await claim(randomUUID(), providers[1]!, 4, version)).status).toBe(204);
      expect(await projectUsage(project)).toBe(4);
    });
  }

  it('never lets racing claims of one project on different providers pass the limit together (both paths)', async () => {
    for (const version of ['1.27', '1.28']) {
      for (let round = 0; round < 5; round += 1) {
        const project = randomUUID();
        const answers = await Promise.all(providers.map((rp) => claim(project, rp, 3, version)));
        const statuses = answers.map((r) => r.status).sort();
        expect(statuses, `${version} round ${round}`).toEqual([204, 409, 409, 409]);
        for (const r of answers.filter((a) => a.status === 409)) expect((await errorOf(r)).code).toBe('ext.limits.over_limit');
        expect(await projectUsage(project)).toBe(3);
      }
    }
  });

  it('belongs to the app it was installed in: another app claims past the limit', async () => {
    const other = await makeTestApp();
    try {
      const rp = (await seedProvider(other.deps, { VCPU: { total: 16 } })).uuid;
      const res = await other.call('PUT', `/allocations/${randomUUID()}`, {
        version: '1.28',
        body: { allocations: { [rp]: { resources: { VCPU: 8 } } }, project_id: 'p', user_id: 'u', consumer_generation: null },
      });
      expect(res.status).toBe(204);
      expect(other.deps.writeHooks.claimGuards.map((g) => g.name)).toEqual(['shared counters', 'holds']);
    } finally {
      other.close();
    }
  });
});

/** A guard that shows what the kernel hands it (its ClaimView) and answers what the test says. */
function witness(answer: (view: ClaimView) => ReturnType<ClaimDecision>) {
  const seen: { consumers: Record<string, Omit<ConsumerState, 'id'>>; before: number; after: number; elsewhere: number[] }[] = [];
  const g: ClaimGuard = {
    name: 'witness',
    snapshotStatements: () => [],
    decider: () => (view) => {
      const e = view.entries[0]!;
      seen.push({
        consumers: Object.fromEntries([...view.consumers].map(([uuid, { id: _, ...state }]) => [uuid, state])),
        before: view.usedBefore(e.provider.id, e.classId),
        after: view.usedAfter(e.provider.id, e.classId),
        // A (provider, class) without inventory there: no usage, before or after.
        elsewhere: [view.usedBefore(e.provider.id, -1), view.usedAfter(e.provider.id, -1)],
      });
      return answer(view);
    },
    holdsSql: () => '1',
  };
  return { guard: g, seen };
}

describe('what the write kernel hands a claim guard, and what it does with the answer', () => {
  const put = (
    consumer: string,
    rp: string,
    vcpu: number,
    generation: number | null,
    extra: Record<string, unknown> = {},
    version = '1.28',
  ) =>
    t.call('PUT', `/allocations/${consumer}`, {
      version,
      body: {
        allocations: { [rp]: { resources: { VCPU: vcpu } } },
        project_id: 'p-w',
        user_id: 'u-w',
        consumer_generation: generation,
        ...extra,
      },
    });
  /** Capacity refusals of VCPU, and of every class together. */
  const capacityRefusals = async () => {
    const samples = parseSamples(await (await t.app.request('/metrics')).text());
    const all = samples.filter((s) => s.name === 'placement_capacity_refusals_total').reduce((sum, s) => sum + s.value, 0);
    return { vcpu: sampleValue(samples, 'placement_capacity_refusals_total', { resource_class: 'VCPU' }) ?? 0, all };
  };

  it('the claimed consumers as read (project, user, type) and the usage before and after the claim', async () => {
    const w = witness(() => null);
    t.deps.writeHooks = writeHooks([...t.deps.extensions.writes(), { claimGuards: [w.guard] }]);
    const rp = providers[0]!;
    const [typed, untyped] = [randomUUID(), randomUUID()];
    expect((await put(randomUUID(), rp, 3, null)).status).toBe(204);
    expect((await put(typed, rp, 2, null, { consumer_type: 'INSTANCE' }, '1.38')).status).toBe(204);
    expect((await put(untyped, rp, 1, null)).status).toBe(204);
    // New consumers take the one-batch path (no snapshot, no decision): nothing seen yet.
    expect(w.seen).toEqual([]);
    expect((await put(typed, rp, 5, 1, { consumer_type: 'INSTANCE', project_id: 'p-new' }, '1.38')).status).toBe(204);
    expect((await put(untyped, rp, 4, 1)).status).toBe(204);
    expect(w.seen).toEqual([
      // 3 + 2 + 1 held; the typed consumer's 2 replaced by 5.
      { consumers: { [typed]: { generation: 1, project: 'p-w', user: 'u-w', type: 'INSTANCE' } }, before: 6, after: 9, elsewhere: [0, 0] },
      { consumers: { [untyped]: { generation: 1, project: 'p-w', user: 'u-w', type: null } }, before: 9, after: 12, elsewhere: [0, 0] },
    ]);
  });

  it("a refusal answers the guard's error and, naming a class, counts among that class's capacity refusals (else none); nothing is written", async () => {
    let naming = true;
    const w = witness((view) => ({
      ...(naming ? { resourceClass: view.entries[0]!.resourceClass } : {}),
      error: conflict('the witness says no', 'ext.test.witness'),
    }));
    const consumer = randomUUID();
    expect((await put(consumer, providers[0]!, 1, null)).status).toBe(204);
    t.deps.writeHooks = writeHooks([...t.deps.extensions.writes(), { claimGuards: [w.guard] }]);
    const before = await capacityRefusals();
    const res = await put(consumer, providers[0]!, 2, 1);
    expect(await errorOf(res)).toMatchObject({
      status: 409,
      code: 'ext.test.witness',
      detail: expect.stringContaining('the witness says no'),
    });
    expect(await capacityRefusals()).toEqual({ vcpu: before.vcpu + 1, all: before.all + 1 });
    naming = false;
    expect((await put(consumer, providers[0]!, 2, 1)).status).toBe(409);
    expect(await capacityRefusals()).toEqual({ vcpu: before.vcpu + 1, all: before.all + 1 });
    expect(await projectUsage('p-w')).toBe(1);
  });

  it('a grant with checks: the checks run in the write batch, and one that fails there is a lost race (decided again, then 409 concurrent_update)', async () => {
    let holds = true;
    const w = witness(() => ({ checks: [guard(holds ? '1' : '0')] }));
    const consumer = randomUUID();
    expect((await put(consumer, providers[0]!, 1, null)).status).toBe(204);
    t.deps.writeHooks = writeHooks([...t.deps.extensions.writes(), { claimGuards: [w.guard] }]);
    expect((await put(consumer, providers[0]!, 2, 1)).status).toBe(204);
    holds = false;
    const res = await put(consumer, providers[0]!, 3, 2);
    expect(await errorOf(res)).toMatchObject({ status: 409, code: 'placement.concurrent_update' });
    expect(w.seen.length).toBeGreaterThan(2);
    expect(await projectUsage('p-w')).toBe(2);
  });
});
