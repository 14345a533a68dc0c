// Preemption priorities: a consumer's own and its project's default, admin
// only, validated; a consumer with neither is not preemptible; a consumer's
// priority goes with the consumer.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim, PROJECT } from './helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

async function claimed(): Promise<string> {
  const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
  const consumer = crypto.randomUUID();
  expect((await claim(t, { [host]: { resources: { VCPU: 2 } } }, consumer)).status).toBe(204);
  return consumer;
}

describe('consumer priority', () => {
  it('is set, read back, replaced and removed', async () => {
    const consumer = await claimed();
    expect((await t.call('GET', `/ext/consumers/${consumer}/priority`)).status).toBe(404);
    const put = await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: 10 } });
    expect(put.status, await put.clone().text()).toBe(200);
    expect(await put.json()).toEqual({ consumer_uuid: consumer, priority: 10, source: 'consumer' });
    await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: 20 } });
    expect(await (await t.call('GET', `/ext/consumers/${consumer}/priority`)).json()).toEqual({
      consumer_uuid: consumer,
      priority: 20,
      source: 'consumer',
    });
    expect((await t.call('DELETE', `/ext/consumers/${consumer}/priority`)).status).toBe(204);
    expect((await t.call('GET', `/ext/consumers/${consumer}/priority`)).status).toBe(404);
    expect((await t.call('DELETE', `/ext/consumers/${consumer}/priority`)).status).toBe(404);
  });

  it('falls back to the project default, and its own wins over it', async () => {
    const consumer = await claimed();
    const put = await t.call('PUT', `/ext/priorities/${PROJECT}`, { body: { priority: 5 } });
    expect(put.status).toBe(200);
    expect(await (await t.call('GET', `/ext/consumers/${consumer}/priority`)).json()).toMatchObject({ priority: 5, source: 'project' });
    await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: 7 } });
    expect(await (await t.call('GET', `/ext/consumers/${consumer}/priority`)).json()).toMatchObject({ priority: 7, source: 'consumer' });
    const list = (await (await t.call('GET', '/ext/priorities')).json()) as { priorities: { project_id: string; priority: number }[] };
    expect(list.priorities.map((p) => [p.project_id, p.priority])).toEqual([[PROJECT, 5]]);
    expect((await t.call('DELETE', `/ext/priorities/${PROJECT}`)).status).toBe(204);
    expect((await t.call('GET', `/ext/priorities/${PROJECT}`)).status).toBe(404);
    expect(await (await t.call('GET', `/ext/consumers/${consumer}/priority`)).json()).toMatchObject({ priority: 7 });
  });

  it('refuses an unknown consumer with 404 and writes nothing', async () => {
    const unknown = crypto.randomUUID();
    const res = await t.call('PUT', `/ext/consumers/${unknown}/priority`, { body: { priority: 1 } });
    expect(res.status).toBe(404);
    expect((await errorOf(res)).detail).toContain(unknown);
    const rows = await t.deps.store.readBatch([{ sql: 'SELECT COUNT(*) AS n FROM ext_consumer_priorities', args: [] }]);
    expect(Number(rows[0]!.rows[0]!.n)).toBe(0);
  });

  it.each([[-1], [1_000_000_001], [1.5], ['high']])('refuses priority %s with 400 in placement envelope', async (priority) => {
    const consumer = await claimed();
    const res = await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority } });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).title).toBe('Bad Request');
    expect((await t.call('PUT', `/ext/priorities/${PROJECT}`, { body: { priority } })).status).toBe(400);
    expect((await t.call('GET', `/ext/consumers/${consumer}/priority`)).status).toBe(404);
  });

  it('is admin only', async () => {
    const consumer = await claimed();
    const member = { 'x-roles': 'member', 'x-auth-token': 'user' };
    expect((await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: 1 }, headers: member })).status).toBe(403);
    expect((await t.call('GET', '/ext/priorities', { headers: member })).status).toBe(403);
  });

  it('goes when the consumer goes', async () => {
    const consumer = await claimed();
    await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: 3 } });
    expect((await t.call('DELETE', `/allocations/${consumer}`)).status).toBe(204);
    const rows = await t.deps.store.readBatch([{ sql: 'SELECT COUNT(*) AS n FROM ext_consumer_priorities', args: [] }]);
    expect(Number(rows[0]!.rows[0]!.n)).toBe(0);
  });
});
