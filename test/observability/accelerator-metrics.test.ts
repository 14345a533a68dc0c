// The accelerator side of GET /metrics: ARQs by state, bind durations, and
// the outbox's depth and dead letters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitGuarded } from '../../src/db/write-batch.js';
import { finishOutbox, newOutboxRow } from '../../src/jobs/outbox.js';
import { bindBody, type CyborgTestApp, fpgaProfile, makeCyborgApp, seedHost } from '../cyborg/helpers.js';
import { parseSamples, type Sample, sampleValue } from '../helpers/prometheus-text.js';

let t: CyborgTestApp;
beforeAll(async () => {
  t = await makeCyborgApp();
  await seedHost(t, 2);
  expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
});
afterAll(() => t.close());

const scrape = async (): Promise<Sample[]> => parseSamples(await (await t.app.request('/metrics')).text());

describe('accelerator metrics', () => {
  it('shows ARQs by state and times each bind from BindStarted to its outcome', async () => {
    const binds = (s: Sample[]) => sampleValue(s, 'cyborg_arq_bind_duration_seconds_count', { outcome: 'Bound' }) ?? 0;
    const before = await scrape();
    expect(sampleValue(before, 'cyborg_accelerator_requests', { state: 'Bound' })).toBe(0);
    const created = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
      arqs: { uuid: string }[];
    };
    const arq = created.arqs[0]!.uuid;
    expect(sampleValue(await scrape(), 'cyborg_accelerator_requests', { state: 'Initial' })).toBe(1);
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq, crypto.randomUUID()) })).status).toBe(202);
    await t.jobs.queue.idle();
    const after = await scrape();
    expect(sampleValue(after, 'cyborg_accelerator_requests', { state: 'Bound' })).toBe(1);
    expect(sampleValue(after, 'cyborg_accelerator_requests', { state: 'Initial' })).toBe(0);
    expect(binds(after) - binds(before)).toBe(1);
    // In-process, the job runs as the PATCH commits: within the first bucket (10 ms) on the injected clock.
    const quick = (s: Sample[]) => sampleValue(s, 'cyborg_arq_bind_duration_seconds_bucket', { outcome: 'Bound', le: '0.01' }) ?? 0;
    expect(quick(after) - quick(before)).toBe(1);
  });

  it('shows the outbox depth and its dead letters by topic', async () => {
    const [pending, dead] = await commitGuarded(t.deps.store, [
      newOutboxRow(
        'nova-event',
        { instanceUuid: crypto.randomUUID(), events: [{ arqUuid: crypto.randomUUID(), status: 'completed' }] },
        4e12,
      ).statement,
      newOutboxRow('nova-event', { instanceUuid: crypto.randomUUID(), events: [{ arqUuid: crypto.randomUUID(), status: 'failed' }] }, 4e12)
        .statement,
    ]);
    await finishOutbox(t.deps.store, Number(dead!.rows[0]!.id), Date.now(), 'dead', 'Nova answered 500');
    expect(pending!.rows).toHaveLength(1);
    const samples = await scrape();
    expect(sampleValue(samples, 'placement_outbox_depth', { topic: 'nova-event' })).toBe(1);
    expect(sampleValue(samples, 'placement_outbox_dead_letters', { topic: 'nova-event' })).toBe(1);
    expect(sampleValue(samples, 'placement_outbox_dead_letters', { topic: 'bind' })).toBe(0);
  });
});
