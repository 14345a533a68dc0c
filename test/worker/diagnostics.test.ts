// Operator diagnostics inside workerd against sqld: the audit and its repairs,
// the same routes as Node mode. The database is shared with the other worker
// files, so assertions look for this file's own providers and consumers.
import { describe, expect, it } from 'vitest';
import { adminCall, worker } from './admin-call.js';

const call = (method: string, path: string, body?: unknown, token = 'admin'): Promise<Response> => adminCall(method, path, body, { token });

interface Audit {
  summary: Record<string, number>;
  over_capacity_providers?: { items: { uuid: string; resources: { resource_class: string; capacity: number; used: number }[] }[] };
}

describe('diagnostics in workerd', () => {
  it('audits a provider whose inventory shrank below usage', async () => {
    const host = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `audit-${host}`, uuid: host })).status).toBe(200);
    expect(
      (
        await call('PUT', `/resource_providers/${host}/inventories`, {
          resource_provider_generation: 0,
          inventories: { VCPU: { total: 8 } },
        })
      ).status,
    ).toBe(200);
    const consumer = crypto.randomUUID();
    expect(
      (
        await call('PUT', `/allocations/${consumer}`, {
          allocations: { [host]: { resources: { VCPU: 6 } } },
          consumer_generation: null,
          project_id: crypto.randomUUID(),
          user_id: crypto.randomUUID(),
          consumer_type: 'INSTANCE',
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await call('PUT', `/resource_providers/${host}/inventories`, {
          resource_provider_generation: 2,
          inventories: { VCPU: { total: 8, allocation_ratio: 0.5 } },
        })
      ).status,
    ).toBe(200);

    const res = await call('GET', '/diagnostics/audit?section=over_capacity_providers&limit=1000');
    expect(res.status).toBe(200);
    const report = (await res.json()) as Audit;
    expect(report.summary.over_capacity_providers).toBeGreaterThanOrEqual(1);
    const mine = report.over_capacity_providers!.items.find((p) => p.uuid === host);
    expect(mine?.resources).toEqual([expect.objectContaining({ resource_class: 'VCPU', capacity: 4, used: 6 })]);
  });

  it('runs the repairs as a dry run and refuses non-admins', async () => {
    const unknown = crypto.randomUUID();
    const dry = await call('POST', '/diagnostics/audit/repairs', { dry_run: true, delete_empty_consumers: [unknown] });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toMatchObject({ dry_run: true, deleted_empty_consumers: [], skipped: { empty_consumers: [unknown] } });
    const member = await call('GET', '/diagnostics/audit', undefined, 'alice:proj');
    expect(member.status).toBe(403);
  });

  it('serves the OpenAPI document without a token', async () => {
    const res = await worker.fetch(new Request('http://placement.test/openapi.json'));
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/allocation_candidates', '/accelerator/v2/accelerator_requests', '/diagnostics/audit']),
    );
  });

  it('explains why a host gets no candidate', async () => {
    const host = crypto.randomUUID();
    const agg = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `why-${host}`, uuid: host })).status).toBe(200);
    expect(
      (
        await call('PUT', `/resource_providers/${host}/inventories`, {
          resource_provider_generation: 0,
          inventories: { VCPU: { total: 4 } },
        })
      ).status,
    ).toBe(200);
    expect(
      (await call('PUT', `/resource_providers/${host}/aggregates`, { aggregates: [agg], resource_provider_generation: 1 })).status,
    ).toBe(200);
    const res = await call('GET', `/diagnostics/allocation_candidates?resources=VCPU:10&member_of=${agg}&host=why-${host}`);
    expect(res.status).toBe(200);
    const diagnosis = (await res.json()) as {
      steps: { constraint: string; trees: number }[];
      hosts: { fits: boolean; failed_at?: { reason: string } }[];
    };
    expect(diagnosis.steps.map((s) => s.constraint)).toEqual(['inventory', 'resources', 'member_of']);
    expect(diagnosis.hosts).toEqual([
      expect.objectContaining({ fits: false, failed_at: expect.objectContaining({ reason: `VCPU: needs 10, free 4 on ${host}` }) }),
    ]);
  });
});
