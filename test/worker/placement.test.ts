// The Placement API inside workerd, on sqld: the same endpoints as Node mode.
import { describe, expect, inject, it } from 'vitest';
import { adminCall } from './admin-call.js';

const call = (method: string, path: string, body?: unknown, version = 'latest', headers: Record<string, string> = {}): Promise<Response> =>
  adminCall(method, path, body, { version, headers });

type Json = Record<string, unknown> & { errors?: { code?: string; status: number }[] };
const json = async (res: Response) => (await res.json()) as Json;

describe('Placement in workerd against sqld', () => {
  const rp = crypto.randomUUID();

  it('serves the version document and negotiates microversions', async () => {
    const res = await call('GET', '/');
    expect(res.status).toBe(200);
    expect(res.headers.get('openstack-api-version')).toBe('placement 1.39');
    expect((await call('GET', '/', undefined, '1.99')).status).toBe(406);
  });

  it('creates a provider, sets inventory and traits, and lists it back', async () => {
    const created = await call('POST', '/resource_providers', { name: `edge-${rp}`, uuid: rp });
    expect(created.status).toBe(200);
    const inv = await call('PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } },
    });
    expect(inv.status).toBe(200);
    const traits = await call('PUT', `/resource_providers/${rp}/traits`, {
      traits: ['HW_CPU_X86_AVX2'],
      resource_provider_generation: 1,
    });
    expect(traits.status).toBe(200);
    const list = await json(await call('GET', '/resource_providers?required=HW_CPU_X86_AVX2&resources=VCPU:8'));
    expect((list.resource_providers as { uuid: string }[]).map((p) => p.uuid)).toContain(rp);
  });

  it('gives exactly one of two racing writers with the same generation a 409', async () => {
    const current = await json(await call('GET', `/resource_providers/${rp}`));
    const generation = current.generation as number;
    const [a, b] = await Promise.all([
      call('PUT', `/resource_providers/${rp}/traits`, { traits: ['HW_CPU_X86_SSE'], resource_provider_generation: generation }),
      call('PUT', `/resource_providers/${rp}/traits`, { traits: ['HW_CPU_X86_SSE2'], resource_provider_generation: generation }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const loser = a.status === 409 ? a : b;
    expect((await json(loser)).errors?.[0]?.code).toBe('placement.concurrent_update');
  });

  it('answers bad input in the error envelope', async () => {
    const res = await call('POST', '/resource_providers', { name: 'x', bogus: true });
    expect(res.status).toBe(400);
    expect((await json(res)).errors?.[0]?.status).toBe(400);
  });

  it('runs classes, aggregates, allocations, usages and candidates over libSQL HTTP', async () => {
    const host = crypto.randomUUID();
    const rc = `CUSTOM_WK_${host.slice(0, 8).toUpperCase()}`;
    expect((await call('PUT', `/resource_classes/${rc}`)).status).toBe(201);
    expect((await call('POST', '/resource_providers', { name: `wk-${host}`, uuid: host })).status).toBe(200);
    expect(
      (
        await call('PUT', `/resource_providers/${host}/inventories`, {
          resource_provider_generation: 0,
          inventories: { VCPU: { total: 4 }, [rc]: { total: 2 } },
        })
      ).status,
    ).toBe(200);
    const agg = crypto.randomUUID();
    expect(
      (await call('PUT', `/resource_providers/${host}/aggregates`, { aggregates: [agg], resource_provider_generation: 1 })).status,
    ).toBe(200);

    const candidates = await json(await call('GET', `/allocation_candidates?resources=VCPU:3,${rc}:1&member_of=${agg}`));
    const requests = candidates.allocation_requests as { allocations: Record<string, { resources: Record<string, number> }> }[];
    expect(requests).toHaveLength(1);
    expect(requests[0]?.allocations[host]?.resources).toEqual({ VCPU: 3, [rc]: 1 });

    const consumer = crypto.randomUUID();
    const claim = await call('PUT', `/allocations/${consumer}`, {
      allocations: requests[0]?.allocations,
      consumer_generation: null,
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
      consumer_type: 'INSTANCE',
    });
    expect(claim.status, await claim.clone().text()).toBe(204);
    const usages = await json(await call('GET', `/resource_providers/${host}/usages`));
    expect(usages.usages).toEqual({ VCPU: 3, [rc]: 1 });
    // Only one VCPU is left: the same request no longer fits.
    const after = await json(await call('GET', `/allocation_candidates?resources=VCPU:3&member_of=${agg}`));
    expect(after.allocation_requests).toEqual([]);
    // The class is in use, so it cannot be deleted.
    expect((await call('DELETE', `/resource_classes/${rc}`)).status).toBe(409);
  });

  it('answers allocation candidates in 1 database round trip, however many trees', async () => {
    // Round trips are counted by a proxy in front of sqld: each is a network hop at the edge.
    const agg = crypto.randomUUID();
    for (let i = 0; i < 12; i += 1) {
      const uuid = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `hop-${uuid}`, uuid })).status).toBe(200);
      expect(
        (
          await call('PUT', `/resource_providers/${uuid}/inventories`, {
            resource_provider_generation: 0,
            inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } },
          })
        ).status,
      ).toBe(200);
      expect(
        (await call('PUT', `/resource_providers/${uuid}/aggregates`, { aggregates: [agg], resource_provider_generation: 1 })).status,
      ).toBe(200);
    }
    const hopsUrl = inject('sqldHopsUrl');
    const hopsOf = async (path: string) => {
      await fetch(hopsUrl, { method: 'DELETE' });
      const res = await call('GET', path);
      expect(res.status).toBe(200);
      const body = await json(res);
      const { hops } = (await (await fetch(hopsUrl)).json()) as { hops: number };
      return { hops, count: (body.allocation_requests as unknown[]).length };
    };
    // member_of names the viable trees: they come whole with the candidates, one hop.
    expect(await hopsOf(`/allocation_candidates?resources=VCPU:1,MEMORY_MB:64&member_of=${agg}`)).toEqual({ hops: 1, count: 12 });
    expect(await hopsOf(`/allocation_candidates?resources=VCPU:1&member_of=${agg}&limit=2`)).toEqual({ hops: 1, count: 2 });
    const granular = await hopsOf(
      `/allocation_candidates?resources_A=VCPU:1&member_of_A=${agg}&resources_B=MEMORY_MB:64&group_policy=none`,
    );
    expect(granular.count).toBeGreaterThanOrEqual(12);
    expect(granular.hops).toBe(1);
    // No tree condition: the isolate keeps the trees in memory (cloud-model.ts), so one hop too
    // (the SQL engine alone, for clouds over PLACEMENT_CANDIDATE_TREE_CACHE, takes 2 here).
    const unconditioned = await hopsOf('/allocation_candidates?resources=VCPU:1,MEMORY_MB:64');
    expect(unconditioned.hops).toBe(1);
    expect(unconditioned.count).toBeGreaterThanOrEqual(12); // the suite's other providers too
    // A write to one tree: the next answer re-reads it in the same one hop.
    const [first] = (await json(await call('GET', `/resource_providers?member_of=${agg}`))).resource_providers as {
      uuid: string;
      generation: number;
    }[];
    expect(
      (
        await call('PUT', `/resource_providers/${first!.uuid}/inventories`, {
          resource_provider_generation: first!.generation,
          inventories: { VCPU: { total: 8 } },
        })
      ).status,
    ).toBe(200);
    expect(await hopsOf(`/allocation_candidates?resources=VCPU:1,MEMORY_MB:64&member_of=${agg}`)).toEqual({ hops: 1, count: 11 });
  });

  describe('writes take at most 2 database round trips (one read batch, one write batch)', () => {
    const hopsUrl = () => inject('sqldHopsUrl');
    /** Round trips of one request, counted by the proxy in front of sqld. */
    async function hopsOf(
      method: string,
      path: string,
      body?: unknown,
      extra?: Record<string, string>,
      version = 'latest',
    ): Promise<{ hops: number; status: number }> {
      await fetch(hopsUrl(), { method: 'DELETE' });
      const res = await call(method, path, body, version, extra);
      await res.arrayBuffer();
      const { hops } = (await (await fetch(hopsUrl())).json()) as { hops: number };
      return { hops, status: res.status };
    }
    async function host(
      inventories: Record<string, { total: number }> = { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } },
    ): Promise<string> {
      const uuid = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `w-${uuid}`, uuid })).status).toBe(200);
      expect((await call('PUT', `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories })).status).toBe(
        200,
      );
      return uuid;
    }
    const owner = { project_id: crypto.randomUUID(), user_id: crypto.randomUUID() };

    it('PUT /allocations/{c} (a claim of a new consumer, then a change), DELETE /allocations/{c}', async () => {
      const rp = await host();
      const consumer = crypto.randomUUID();
      expect(
        await hopsOf('PUT', `/allocations/${consumer}`, {
          allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 512 } } },
          ...owner,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        }),
      ).toEqual({ hops: 1, status: 204 }); // a new consumer's claim that fits: one write batch, nothing read
      // One that does not fit: the write batch rolls back, the ordinary read words the refusal.
      expect(
        await hopsOf('PUT', `/allocations/${crypto.randomUUID()}`, {
          allocations: { [rp]: { resources: { VCPU: 9999 } } },
          ...owner,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        }),
      ).toEqual({ hops: 2, status: 409 });
      expect(
        await hopsOf('PUT', `/allocations/${consumer}`, {
          allocations: { [rp]: { resources: { VCPU: 2 } } },
          ...owner,
          consumer_generation: 1,
          consumer_type: 'INSTANCE',
        }),
      ).toEqual({ hops: 2, status: 204 });
      // Refusals are decided from the read: one round trip.
      expect(
        await hopsOf('PUT', `/allocations/${consumer}`, {
          allocations: { [rp]: { resources: { VCPU: 99 } } },
          ...owner,
          consumer_generation: 2,
          consumer_type: 'INSTANCE',
        }),
      ).toEqual({ hops: 1, status: 409 });
      expect(await hopsOf('DELETE', `/allocations/${consumer}`)).toEqual({ hops: 1, status: 204 });
    });

    it('inventories: PUT the collection, POST, PUT and DELETE one class, DELETE all', async () => {
      const rp = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `w-${rp}`, uuid: rp })).status).toBe(200);
      const path = `/resource_providers/${rp}/inventories`;
      // The whole inventory replaced: one write batch, nothing read first.
      expect(
        await hopsOf('PUT', path, { resource_provider_generation: 0, inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } }),
      ).toEqual({ hops: 1, status: 200 });
      expect(await hopsOf('POST', path, { resource_provider_generation: 1, resource_class: 'DISK_GB', total: 100 })).toEqual({
        hops: 2,
        status: 201,
      });
      expect(await hopsOf('PUT', `${path}/VCPU`, { resource_provider_generation: 2, total: 16 })).toEqual({ hops: 2, status: 200 });
      expect(await hopsOf('DELETE', `${path}/DISK_GB`)).toEqual({ hops: 2, status: 204 });
      // Refused: the one batch rolls back, the ordinary read words the answer (2 round trips).
      expect(await hopsOf('PUT', path, { resource_provider_generation: 0, inventories: {} })).toEqual({ hops: 2, status: 409 });
      expect(await hopsOf('PUT', path, { resource_provider_generation: 4, inventories: { CUSTOM_NOPE_X: { total: 1 } } })).toEqual({
        hops: 2,
        status: 400,
      });
      const consumer = crypto.randomUUID();
      const claim = { allocations: { [rp]: { resources: { VCPU: 1 } } }, ...owner, consumer_generation: null, consumer_type: 'INSTANCE' };
      expect((await call('PUT', `/allocations/${consumer}`, claim)).status).toBe(204);
      expect(await hopsOf('PUT', path, { resource_provider_generation: 5, inventories: { MEMORY_MB: { total: 1 } } })).toEqual({
        hops: 2,
        status: 409,
      });
      expect(
        await hopsOf('PUT', `/resource_providers/${crypto.randomUUID()}/inventories`, { resource_provider_generation: 0, inventories: {} }),
      ).toEqual({
        hops: 2,
        status: 404,
      });
      // Refused by the body alone (reserved above total): the ordinary path only, one read.
      expect(await hopsOf('PUT', path, { resource_provider_generation: 5, inventories: { VCPU: { total: 1, reserved: 2 } } })).toEqual({
        hops: 1,
        status: 400,
      });
      expect((await call('DELETE', `/allocations/${consumer}`)).status).toBe(204);
      expect(await hopsOf('DELETE', path)).toEqual({ hops: 1, status: 204 });
    });

    it('POST /resource_providers (a root, then a child: one write batch; a duplicate or a missing parent refused in 2)', async () => {
      const [root, child] = [crypto.randomUUID(), crypto.randomUUID()];
      expect(await hopsOf('POST', '/resource_providers', { name: `w-${root}`, uuid: root })).toEqual({ hops: 1, status: 200 });
      expect(await hopsOf('POST', '/resource_providers', { name: `w-${child}`, uuid: child, parent_provider_uuid: root })).toEqual({
        hops: 1,
        status: 200,
      });
      expect((await json(await call('GET', `/resource_providers/${child}`))).root_provider_uuid).toBe(root);
      expect(await hopsOf('POST', '/resource_providers', { name: `w-${root}`, uuid: crypto.randomUUID() })).toEqual({
        hops: 2,
        status: 409,
      });
      expect(await hopsOf('POST', '/resource_providers', { name: `w-${crypto.randomUUID()}`, uuid: root })).toEqual({
        hops: 2,
        status: 409,
      });
      const orphan = crypto.randomUUID();
      expect(
        await hopsOf('POST', '/resource_providers', { name: `w-${orphan}`, uuid: orphan, parent_provider_uuid: crypto.randomUUID() }),
      ).toEqual({ hops: 2, status: 400 });
      // Its own parent: refused from the read alone.
      expect(await hopsOf('POST', '/resource_providers', { name: `w-${orphan}`, uuid: orphan, parent_provider_uuid: orphan })).toEqual({
        hops: 1,
        status: 400,
      });
    });

    it('PUT /resource_providers/{uuid}: rename, re-parent, un-parent; refusals from the read', async () => {
      const [a, b, child] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      for (const [uuid, parent] of [
        [a, undefined],
        [b, undefined],
        [child, a],
      ] as const) {
        expect((await call('POST', '/resource_providers', { name: `w-${uuid}`, uuid, parent_provider_uuid: parent })).status).toBe(200);
      }
      expect(await hopsOf('PUT', `/resource_providers/${a}`, { name: `w2-${a}` })).toEqual({ hops: 2, status: 200 });
      expect(await hopsOf('PUT', `/resource_providers/${child}`, { name: `w-${child}`, parent_provider_uuid: b })).toEqual({
        hops: 2,
        status: 200,
      });
      expect((await json(await call('GET', `/resource_providers/${child}`))).root_provider_uuid).toBe(b);
      expect(await hopsOf('PUT', `/resource_providers/${child}`, { name: `w-${child}`, parent_provider_uuid: null })).toEqual({
        hops: 2,
        status: 200,
      });
      expect((await json(await call('GET', `/resource_providers/${child}`))).root_provider_uuid).toBe(child);
      // Refused from the read alone: a loop, a taken name, an unknown provider, re-parenting before 1.37.
      expect((await call('PUT', `/resource_providers/${child}`, { name: `w-${child}`, parent_provider_uuid: a })).status).toBe(200);
      expect(await hopsOf('PUT', `/resource_providers/${a}`, { name: `w2-${a}`, parent_provider_uuid: child })).toEqual({
        hops: 1,
        status: 400,
      });
      expect(await hopsOf('PUT', `/resource_providers/${a}`, { name: `w-${b}` })).toEqual({ hops: 1, status: 409 });
      expect(await hopsOf('PUT', `/resource_providers/${crypto.randomUUID()}`, { name: 'nobody' })).toEqual({ hops: 1, status: 404 });
      expect(
        await hopsOf('PUT', `/resource_providers/${child}`, { name: `w-${child}`, parent_provider_uuid: b }, undefined, '1.36'),
      ).toEqual({ hops: 1, status: 400 });
    });

    it('DELETE /resource_providers/{uuid}: a leaf; a parent, a provider in use and an unknown one refused from the read', async () => {
      const [parent, child] = [crypto.randomUUID(), crypto.randomUUID()];
      expect((await call('POST', '/resource_providers', { name: `w-${parent}`, uuid: parent })).status).toBe(200);
      expect((await call('POST', '/resource_providers', { name: `w-${child}`, uuid: child, parent_provider_uuid: parent })).status).toBe(
        200,
      );
      expect(await hopsOf('DELETE', `/resource_providers/${parent}`)).toEqual({ hops: 1, status: 409 });
      const used = await host();
      const consumer = crypto.randomUUID();
      const claim = { allocations: { [used]: { resources: { VCPU: 1 } } }, ...owner, consumer_generation: null, consumer_type: 'INSTANCE' };
      expect((await call('PUT', `/allocations/${consumer}`, claim)).status).toBe(204);
      expect(await hopsOf('DELETE', `/resource_providers/${used}`)).toEqual({ hops: 1, status: 409 });
      // With inventories, traits and aggregates: still one write batch.
      expect(
        (await call('PUT', `/resource_providers/${child}/traits`, { resource_provider_generation: 0, traits: ['HW_CPU_X86_AVX2'] })).status,
      ).toBe(200);
      expect(
        (
          await call('PUT', `/resource_providers/${child}/aggregates`, {
            resource_provider_generation: 1,
            aggregates: [crypto.randomUUID()],
          })
        ).status,
      ).toBe(200);
      expect(await hopsOf('DELETE', `/resource_providers/${child}`)).toEqual({ hops: 2, status: 204 });
      expect(await hopsOf('DELETE', `/resource_providers/${child}`)).toEqual({ hops: 1, status: 404 });
      expect(await hopsOf('DELETE', `/resource_providers/${parent}`)).toEqual({ hops: 2, status: 204 });
    });

    it('resource classes: POST, PUT (create, confirm, rename before 1.7), DELETE: one round trip each, refusals too', async () => {
      const suffix = crypto.randomUUID().slice(0, 8).toUpperCase();
      const [posted, put, renamed] = [`CUSTOM_WP_${suffix}`, `CUSTOM_WQ_${suffix}`, `CUSTOM_WR_${suffix}`];
      expect(await hopsOf('POST', '/resource_classes', { name: posted })).toEqual({ hops: 1, status: 201 });
      expect(await hopsOf('POST', '/resource_classes', { name: posted })).toEqual({ hops: 1, status: 409 });
      expect(await hopsOf('PUT', `/resource_classes/${put}`)).toEqual({ hops: 1, status: 201 });
      expect(await hopsOf('PUT', `/resource_classes/${put}`)).toEqual({ hops: 1, status: 204 });
      expect(await hopsOf('PUT', `/resource_classes/${put}`, { name: renamed }, undefined, '1.6')).toEqual({ hops: 1, status: 200 });
      expect(await hopsOf('PUT', `/resource_classes/${renamed}`, { name: posted }, undefined, '1.6')).toEqual({ hops: 1, status: 409 });
      expect(await hopsOf('PUT', '/resource_classes/VCPU', { name: `CUSTOM_X_${suffix}` }, undefined, '1.6')).toEqual({
        hops: 1,
        status: 400,
      });
      const rp = await host({ [renamed]: { total: 4 } });
      expect(await hopsOf('DELETE', `/resource_classes/${renamed}`)).toEqual({ hops: 1, status: 409 });
      expect((await call('DELETE', `/resource_providers/${rp}`)).status).toBe(204);
      expect(await hopsOf('DELETE', `/resource_classes/${renamed}`)).toEqual({ hops: 1, status: 204 });
      expect(await hopsOf('DELETE', `/resource_classes/${renamed}`)).toEqual({ hops: 1, status: 404 });
      expect(await hopsOf('DELETE', '/resource_classes/VCPU')).toEqual({ hops: 1, status: 400 });
    });

    it('DELETE /traits/{name}: one round trip, deleted or refused', async () => {
      const name = `CUSTOM_WD_${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
      expect((await call('PUT', `/traits/${name}`)).status).toBe(201);
      const rp = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `w-${rp}`, uuid: rp })).status).toBe(200);
      expect((await call('PUT', `/resource_providers/${rp}/traits`, { resource_provider_generation: 0, traits: [name] })).status).toBe(200);
      expect(await hopsOf('DELETE', `/traits/${name}`)).toEqual({ hops: 1, status: 409 });
      expect((await call('DELETE', `/resource_providers/${rp}/traits`)).status).toBe(204);
      expect(await hopsOf('DELETE', `/traits/${name}`)).toEqual({ hops: 1, status: 204 });
      expect(await hopsOf('DELETE', `/traits/${name}`)).toEqual({ hops: 1, status: 404 });
      expect(await hopsOf('DELETE', '/traits/HW_CPU_X86_AVX2')).toEqual({ hops: 1, status: 400 });
    });

    it('POST /diagnostics/audit/repairs: one write batch', async () => {
      const unknown = crypto.randomUUID();
      expect(
        await hopsOf('POST', '/diagnostics/audit/repairs', {
          dry_run: false,
          delete_empty_consumers: [unknown],
          resend_dead_letters: [999999],
        }),
      ).toEqual({
        hops: 1,
        status: 200,
      });
    });

    it("a provider's aggregates: PUT with and without a generation", async () => {
      const rp = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `w-${rp}`, uuid: rp })).status).toBe(200);
      const path = `/resource_providers/${rp}/aggregates`;
      expect(
        await hopsOf('PUT', path, { resource_provider_generation: 0, aggregates: [crypto.randomUUID(), crypto.randomUUID()] }),
      ).toEqual({ hops: 2, status: 200 });
      expect(await hopsOf('PUT', path, { resource_provider_generation: 0, aggregates: [] })).toEqual({ hops: 1, status: 409 });
      await fetch(hopsUrl(), { method: 'DELETE' });
      const old = await call('PUT', path, [crypto.randomUUID()], '1.1');
      expect(old.status).toBe(200);
      expect(((await (await fetch(hopsUrl())).json()) as { hops: number }).hops).toBe(2);
    });

    it('PUT /traits/{name}: one round trip, created or already there', async () => {
      const name = `CUSTOM_W_${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
      expect(await hopsOf('PUT', `/traits/${name}`)).toEqual({ hops: 1, status: 201 });
      expect(await hopsOf('PUT', `/traits/${name}`)).toEqual({ hops: 1, status: 204 });
    });

    it("a provider's traits: PUT and DELETE, one write batch; refusals in 2", async () => {
      const rp = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `w-${rp}`, uuid: rp })).status).toBe(200);
      const path = `/resource_providers/${rp}/traits`;
      expect(await hopsOf('PUT', path, { resource_provider_generation: 0, traits: ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2'] })).toEqual({
        hops: 1,
        status: 200,
      });
      expect(await hopsOf('PUT', path, { resource_provider_generation: 0, traits: [] })).toEqual({ hops: 2, status: 409 });
      expect(await hopsOf('PUT', path, { resource_provider_generation: 1, traits: ['CUSTOM_NOPE_X'] })).toEqual({ hops: 2, status: 400 });
      expect(
        await hopsOf('PUT', `/resource_providers/${crypto.randomUUID()}/traits`, { resource_provider_generation: 0, traits: [] }),
      ).toEqual({
        hops: 2,
        status: 404,
      });
      expect(await hopsOf('DELETE', path)).toEqual({ hops: 1, status: 204 });
    });

    it('POST /allocations (move a consumer between providers) and POST /reshaper', async () => {
      const [a, b] = [await host(), await host()];
      const consumer = crypto.randomUUID();
      expect(
        (
          await call('PUT', `/allocations/${consumer}`, {
            allocations: { [a]: { resources: { VCPU: 2 } } },
            ...owner,
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          })
        ).status,
      ).toBe(204);
      const migration = crypto.randomUUID();
      expect(
        await hopsOf('POST', '/allocations', {
          [consumer]: { allocations: { [b]: { resources: { VCPU: 2 } } }, ...owner, consumer_generation: 1, consumer_type: 'INSTANCE' },
          [migration]: {
            allocations: { [a]: { resources: { VCPU: 2 } } },
            ...owner,
            consumer_generation: null,
            consumer_type: 'MIGRATION',
          },
        }),
      ).toEqual({ hops: 2, status: 204 });
      // Reshape b: its VCPU moves to a new child, with the consumer's allocation.
      const child = crypto.randomUUID();
      expect((await call('POST', '/resource_providers', { name: `w-${child}`, uuid: child, parent_provider_uuid: b })).status).toBe(200);
      const generationOf = async (uuid: string) => (await json(await call('GET', `/resource_providers/${uuid}`))).generation as number;
      expect(
        await hopsOf(
          'POST',
          '/reshaper',
          {
            inventories: {
              [b]: { resource_provider_generation: await generationOf(b), inventories: { MEMORY_MB: { total: 4096 } } },
              [child]: { resource_provider_generation: await generationOf(child), inventories: { VCPU: { total: 8 } } },
            },
            allocations: {
              [consumer]: {
                allocations: { [child]: { resources: { VCPU: 2 } } },
                ...owner,
                consumer_generation: 2,
                consumer_type: 'INSTANCE',
              },
            },
          },
          { 'x-auth-token': 'nova', 'x-roles': 'service' },
        ),
      ).toEqual({ hops: 2, status: 204 });
      expect((await json(await call('GET', `/resource_providers/${child}/usages`))).usages).toEqual({ VCPU: 2 });
    });
  });
});
