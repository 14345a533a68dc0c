// The outbox makes the queue send after commit optional: a lost send (crash
// between commit and enqueue, queue down) is picked up by the drain — here
// both by an explicit drain and by Node's sweep timer.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startNodeJobs } from '../../src/jobs/node-runner.js';
import { JobRegistry } from '../../src/jobs/registry.js';
import { drainOutbox, runSweepsLogged } from '../../src/jobs/sweeps.js';
import { bindBody, fpgaProfile, makeCyborgApp, seedHost, type CyborgTestApp } from '../cyborg/helpers.js';
import { waitUntil } from '../helpers/wait.js';

describe('outbox recovery', () => {
  let t: CyborgTestApp;
  const delivered: string[] = [];
  beforeEach(async () => {
    delivered.length = 0;
    t = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1' });
    t.deps.novaFetch = async (_u, init) => {
      const body = JSON.parse(String(init?.body)) as { events: { tag: string }[] };
      delivered.push(...body.events.map((e) => e.tag));
      return Response.json(body);
    };
    await seedHost(t, 2);
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
  });
  afterEach(() => t.close());

  async function bindWithLostSend(): Promise<string> {
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } })).json()) as {
      arqs: { uuid: string }[];
    };
    const queue = t.deps.jobs;
    t.deps.jobs = {
      send: async () => {
        throw new Error('queue unavailable');
      },
    };
    const res = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, crypto.randomUUID()) });
    t.deps.jobs = queue;
    expect(res.status).toBe(202);
    const arq = (await (await t.acc('GET', `/accelerator_requests/${arqs[0]!.uuid}`)).json()) as { state: string };
    expect(arq.state).toBe('BindStarted');
    return arqs[0]!.uuid;
  }

  it('binds and notifies on the next drain after a lost send', async () => {
    const uuid = await bindWithLostSend();
    expect(await drainOutbox(t.deps)).toBe(1);
    await t.jobs.queue.idle();
    const arq = (await (await t.acc('GET', `/accelerator_requests/${uuid}`)).json()) as { state: string };
    expect(arq.state).toBe('Bound');
    expect(delivered).toEqual([uuid]);
  });

  it("Node's sweep timer delivers without any explicit call", async () => {
    const uuid = await bindWithLostSend();
    t.jobs.stop();
    const timed = startNodeJobs(t.deps, { intervalMs: 10 });
    try {
      await waitUntil('the sweep timer to deliver the lost send', () => delivered.length > 0);
      expect(delivered).toEqual([uuid]);
    } finally {
      timed.stop();
    }
  });

  it('a sweep that fails is logged once as an error, and the next run tries again (Node timer, Worker cron)', async () => {
    const errors: { msg: string; extra?: Record<string, unknown> }[] = [];
    let failing = true;
    const deps = {
      ...t.deps,
      log: { ...t.deps.log, error: (msg: string, extra?: Record<string, unknown>) => errors.push({ msg, extra }) },
      jobHandlers: new JobRegistry([
        {
          handlers: {},
          sweeps: [
            async () => {
              if (failing) throw new Error('the database went away');
              return 0;
            },
          ],
        },
      ]),
    };
    await expect(runSweepsLogged(deps)).resolves.toBeUndefined();
    expect(errors).toEqual([{ msg: 'sweep failed', extra: { err: 'Error: the database went away' } }]);
    failing = false;
    const uuid = await bindWithLostSend();
    await runSweepsLogged(deps);
    await t.jobs.queue.idle();
    expect(delivered).toEqual([uuid]);
    expect(errors).toHaveLength(1);
  });
});
