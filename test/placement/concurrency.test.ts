// Claims racing for a pool too small for all of them, over real HTTP against
// Node server processes sharing one database file, and again against two
// instances on one sqld primary that each read from their own replica: no
// overcommit, every refusal a 409 in placement's envelope, successes +
// refusals = attempts, whatever a replica says.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { providerGeneration, seedProvider, usageOf } from '../helpers/placement-seed.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING, startSqld } from '../helpers/sqld.js';
import { makeTestApp } from '../helpers/test-app.js';
import { PROJECT as project, USER as user } from '../helpers/claims.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

interface Outcome {
  status: number;
  body: unknown;
}

async function claim(server: ServerProcess, consumer: string, body: unknown): Promise<Outcome> {
  const res = await fetch(`${server.url}/allocations/${consumer}`, {
    method: 'PUT',
    headers: {
      'x-auth-token': 'admin',
      'content-type': 'application/json',
      accept: 'application/json',
      'openstack-api-version': 'placement 1.28',
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** A 409 rendered in placement's error envelope, with the given code. */
function expectConflictEnvelope(outcome: Outcome, code: string, detail: string): void {
  expect(outcome.status).toBe(409);
  expect(outcome.body).toMatchObject({ errors: [{ status: 409, title: 'Conflict', code, detail: expect.stringContaining(detail) }] });
}

interface RaceSetup {
  /** The database URL the checks read, and the environment of each server. */
  dbUrl: string;
  serverEnv: Record<string, string>[];
  stop(): void;
}

const setups: { name: string; missing: string | undefined; start(): Promise<RaceSetup> }[] = [
  {
    name: 'two Node server processes on one database file',
    missing: undefined,
    async start() {
      const dir = mkdtempSync(join(tmpdir(), 'placement-race-'));
      return { dbUrl: `file:${join(dir, 'placement.db')}`, serverEnv: [{}, {}], stop: () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'two Node instances on one sqld primary, each reading from its own replica',
    missing: SQLD_MISSING,
    async start() {
      const primary = await startSqld({ grpc: true });
      const replicas = await Promise.all([startSqld({ primaryGrpcUrl: primary.grpcUrl }), startSqld({ primaryGrpcUrl: primary.grpcUrl })]);
      return {
        dbUrl: primary.url,
        serverEnv: replicas.map((r) => ({ PLACEMENT_DB_READ_URL: r.url, PLACEMENT_WORKERS: '1' })),
        stop() {
          for (const server of [...replicas, primary]) server.stop();
        },
      };
    },
  },
];

for (const { name, missing, start } of setups)
  describeWithPart(missing, `concurrent claims: ${name}`, () => {
    let setup: RaceSetup | undefined;
    let deps: Deps;
    const servers: ServerProcess[] = [];

    beforeAll(async () => {
      setup = await start();
      deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: setup.dbUrl }), silent);
      // One after the other: each process migrates the database on boot.
      for (const env of setup.serverEnv) servers.push(await startServer(setup.dbUrl, env));
    }, 120_000);

    afterAll(async () => {
      await Promise.all(servers.map((s) => s.stop()));
      deps?.store.close();
      setup?.stop();
    });

    it('never overcommits: 24 claims of 1 VCPU for 6, split across two processes', async () => {
      const capacity = 6;
      const rp = await seedProvider(deps, { VCPU: { total: 8, reserved: 2 } });
      const attempts = 24;
      const outcomes = await Promise.all(
        Array.from({ length: attempts }, (_, i) =>
          claim(servers[i % servers.length]!, crypto.randomUUID(), {
            allocations: { [rp.uuid]: { resources: { VCPU: 1 } } },
            project_id: project,
            user_id: user,
            consumer_generation: null,
          }),
        ),
      );
      const successes = outcomes.filter((o) => o.status === 204);
      const refusals = outcomes.filter((o) => o.status !== 204);
      for (const refused of refusals)
        expectConflictEnvelope(refused, 'placement.undefined_code', 'The requested amount would exceed the capacity');
      expect(successes.length + refusals.length).toBe(attempts);
      expect(successes.length).toBe(capacity);
      expect(await usageOf(deps, rp.id)).toEqual({ VCPU: capacity });
      expect(await providerGeneration(deps, rp.id)).toBe(capacity);
    }, 60_000);

    it('lets exactly one of 16 writers with the same consumer generation win', async () => {
      const rp = await seedProvider(deps, { VCPU: { total: 64 } });
      const consumer = crypto.randomUUID();
      const base = { project_id: project, user_id: user };
      expect(
        (await claim(servers[0]!, consumer, { ...base, allocations: { [rp.uuid]: { resources: { VCPU: 1 } } }, consumer_generation: null }))
          .status,
      ).toBe(204);
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          claim(servers[i % servers.length]!, consumer, {
            ...base,
            allocations: { [rp.uuid]: { resources: { VCPU: 2 + i } } },
            consumer_generation: 1,
          }),
        ),
      );
      const winners = outcomes.filter((o) => o.status === 204);
      expect(winners).toHaveLength(1);
      for (const lost of outcomes.filter((o) => o.status !== 204)) {
        expectConflictEnvelope(lost, 'placement.concurrent_update', 'consumer generation conflict - expected 2 but got 1');
      }
      const usage = await usageOf(deps, rp.id);
      expect(Object.keys(usage)).toEqual(['VCPU']);
      expect(usage.VCPU).toBeGreaterThanOrEqual(2);
    }, 60_000);

    it('lets exactly one of 16 one-batch provider writes with the same generation win, across two processes', async () => {
      const rp = await seedProvider(deps, { VCPU: { total: 8 } });
      const send = (server: ServerProcess, path: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: 'PUT',
          headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
          body: JSON.stringify(body),
        }).then(async (res) => ({ status: res.status, body: (await res.json()) as unknown }));
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          i % 2 === 0
            ? send(servers[i % servers.length]!, `/resource_providers/${rp.uuid}/inventories`, {
                resource_provider_generation: 0,
                inventories: { VCPU: { total: 8 + i } },
              })
            : send(servers[(i >> 1) % servers.length]!, `/resource_providers/${rp.uuid}/traits`, {
                resource_provider_generation: 0,
                traits: ['HW_CPU_X86_AVX2'],
              }),
        ),
      );
      expect(outcomes.filter((o) => o.status === 200)).toHaveLength(1);
      for (const lost of outcomes.filter((o) => o.status !== 200)) {
        expect(lost.status).toBe(409);
        expect(lost.body).toMatchObject({ errors: [{ status: 409, code: 'placement.concurrent_update' }] });
      }
      expect(await providerGeneration(deps, rp.id)).toBe(1);
    }, 60_000);
  });

describe('a failure in the middle of a write', () => {
  it('leaves the database exactly as before (POST /allocations aborted after its inserts)', async () => {
    const t = await makeTestApp();
    try {
      const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
      const victim = crypto.randomUUID();
      const other = crypto.randomUUID();
      const body = (_uuid: string) => ({
        allocations: { [rp.uuid]: { resources: { VCPU: 1 } } },
        project_id: project,
        user_id: user,
        consumer_generation: null,
      });
      expect((await t.call('PUT', `/allocations/${victim}`, { body: { ...body(victim) }, version: '1.28' })).status).toBe(204);
      // The consumer-generation compare-and-swap comes after the allocation rows
      // and the provider generation in the write batch: make it fail there.
      await t.deps.store.client.execute(`CREATE TRIGGER fail_consumer_bump BEFORE UPDATE OF generation ON consumers
        WHEN NEW.uuid = '${victim}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
      const dump = async () => ({
        allocations: (
          await t.deps.store.client.execute(
            'SELECT resource_provider_id, consumer_id, resource_class_id, used FROM allocations ORDER BY id',
          )
        ).rows,
        consumers: (await t.deps.store.client.execute('SELECT uuid, generation, project_id, user_id FROM consumers ORDER BY id')).rows,
        providers: (await t.deps.store.client.execute('SELECT uuid, generation FROM resource_providers ORDER BY id')).rows,
      });
      const before = await dump();
      const logged: Record<string, unknown>[] = [];
      t.deps.log = {
        ...t.deps.log,
        error: (msg, extra) => {
          logged.push({ msg, ...extra });
        },
      };
      const res = await t.call('POST', '/allocations', {
        version: '1.28',
        body: {
          [other]: body(other),
          [victim]: { ...body(victim), allocations: { [rp.uuid]: { resources: { VCPU: 5 } } }, consumer_generation: 1 },
        },
      });
      expect(res.status).toBe(500);
      // It failed at the consumer-generation step, i.e. after the inserts; the
      // cause is in the log under the request id, and not in the answer.
      const requestId = res.headers.get('x-openstack-request-id');
      const { errors } = (await res.json()) as { errors: { status: number; detail: string; request_id: string }[] };
      expect(errors[0]).toMatchObject({ status: 500, request_id: requestId, detail: expect.stringContaining(`request id ${requestId}`) });
      expect(errors[0]!.detail).not.toMatch(/consumers|injected|SQLITE/);
      expect(JSON.stringify(logged)).toContain('injected failure');
      expect(logged[0]).toMatchObject({ requestId });
      expect(await dump()).toEqual(before);
    } finally {
      t.close();
    }
  });
});
