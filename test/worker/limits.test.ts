// Project limits inside workerd against sqld (docs/limits.md): the isolate's boot
// installs the usage ledger and reads the limits (PLACEMENT_LIMITS=static in
// vitest.worker.config.ts, on a class only this file uses), claims past the
// limit get placement's 409 limit_exceeded, and /ext/limits answers; a resize
// of an existing consumer (the ordinary path's decision) to exactly the limit
// is granted and one more refused, also beside a class without a limit.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { adminCall } from './admin-call.js';

const RC = 'CUSTOM_LIMITS_WORKER';
const call = adminCall;

describe('project limits in Worker mode', () => {
  it('grants claims up to the limit and refuses the next with placement.ext.limit_exceeded', async () => {
    expect((env as Record<string, unknown>).PLACEMENT_LIMITS).toBe('static');
    expect((await call('PUT', `/resource_classes/${RC}`)).status).toBeLessThan(300);
    const rp = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `limits-${rp}`, uuid: rp })).status).toBe(200);
    const inv = await call('PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: 0,
      inventories: { [RC]: { total: 10 } },
    });
    expect(inv.status).toBe(200);
    const project = crypto.randomUUID();
    const claim = () =>
      call('PUT', `/allocations/${crypto.randomUUID()}`, {
        allocations: { [rp]: { resources: { [RC]: 1 } } },
        project_id: project,
        user_id: project,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      });
    const answers = await Promise.all(Array.from({ length: 6 }, () => claim()));
    expect(answers.filter((r) => r.status === 204)).toHaveLength(3);
    for (const refused of answers.filter((r) => r.status !== 204)) {
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('placement.ext.limit_exceeded');
    }
    const shown = await call('GET', `/ext/limits?project_id=${project}`);
    expect(await shown.json()).toEqual({ project_id: project, limits: { [RC]: { limit: 3, usage: 3, remaining: 0 } } });
  });

  it('resizes an existing consumer to exactly the limit, beside an unlimited class, and refuses one more', async () => {
    const rp = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `limits-${rp}`, uuid: rp })).status).toBe(200);
    const inv = await call('PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: 0,
      inventories: { [RC]: { total: 10 }, DISK_GB: { total: 100 } },
    });
    expect(inv.status).toBe(200);
    const project = crypto.randomUUID();
    const consumer = crypto.randomUUID();
    const put = (amount: number, generation: number | null) =>
      call('PUT', `/allocations/${consumer}`, {
        allocations: { [rp]: { resources: { DISK_GB: 10, [RC]: amount } } },
        project_id: project,
        user_id: project,
        consumer_generation: generation,
        consumer_type: 'INSTANCE',
      });
    expect((await put(1, null)).status).toBe(204);
    expect((await put(3, 1)).status).toBe(204);
    const past = await put(4, 2);
    expect(past.status).toBe(409);
    const error = ((await past.json()) as { errors: { code: string; detail: string }[] }).errors[0]!;
    expect(error.code).toBe('placement.ext.limit_exceeded');
    expect(error.detail).toContain('(limit 3, usage 3, requested 1)');
  });
});
