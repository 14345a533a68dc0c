// `placement-agent reaper` against a live placement-edge in process (makeTestApp)
// and a stand-in Nova that, as Nova does, frees a deleted server's allocations
// (DELETE /allocations/{server}) once its compute host has deleted it. The
// stand-in is the only fake: the events, leases, holds and claims are real.
// The same command against a real Nova: test/openstack/preemption.test.ts.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepExpiredLeases } from '../../src/ext/allocation-ends.js';
import { provider } from '../../test/helpers/providers.js';
import { makeTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { waitUntil } from '../../test/helpers/wait.js';
import { main } from '../src/main.js';

const SPOT = '6b4e8a0c-0000-4000-8000-00000000005a';
const GOLD = '6b4e8a0c-0000-4000-8000-0000000000a9';
const USER = '6b4e8a0c-0000-4000-8000-000000000002';

let svc: TestApp;
let dir: string;
beforeEach(async () => {
  svc = await makeTestApp();
  dir = mkdtempSync(join(tmpdir(), 'reaper-'));
  expect((await svc.call('PUT', `/ext/priorities/${SPOT}`, { body: { priority: 0 } })).status).toBe(200);
});
afterEach(() => {
  svc.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Nova as the reaper sees it: DELETE /servers/{id}; the compute host's delete (freeing the allocations) when `computeFrees` says. */
class StandInNova {
  readonly servers = new Set<string>();
  readonly deletes: string[] = [];
  /** Answer this status to the next deletes (Nova down: 503; the reaper's user not allowed: 403). */
  failWith: number[] = [];
  /** false: the compute host has not got round to it yet (deleteServer frees later, by `computeCatchesUp`). */
  computeFrees = true;
  private queued: string[] = [];

  async fetch(req: Request): Promise<Response> {
    const match = /\/v2\.1\/servers\/([0-9a-f-]+)$/.exec(new URL(req.url).pathname);
    if (req.method !== 'DELETE' || !match) return new Response('not here', { status: 404 });
    expect(req.headers.get('x-auth-token')).toBe('admin');
    const id = match[1]!;
    const failure = this.failWith.shift();
    if (failure) return new Response(JSON.stringify({ error: failure }), { status: failure });
    this.deletes.push(id);
    if (!this.servers.has(id)) return new Response('{"itemNotFound": {}}', { status: 404 });
    this.queued.push(id);
    if (this.computeFrees) await this.computeCatchesUp();
    return new Response(null, { status: 204 });
  }

  async computeCatchesUp(): Promise<void> {
    for (const id of this.queued.splice(0)) {
      this.servers.delete(id);
      expect((await svc.call('DELETE', `/allocations/${id}`)).status).toBe(204);
    }
  }
}

let nova: StandInNova;
beforeEach(() => {
  nova = new StandInNova();
});

async function server(host: string, vcpu: number, project = SPOT): Promise<string> {
  const id = crypto.randomUUID();
  const res = await svc.call('PUT', `/allocations/${id}`, {
    body: {
      allocations: { [host]: { resources: { VCPU: vcpu } } },
      project_id: project,
      user_id: USER,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
  expect(res.status, await res.clone().text()).toBe(204);
  nova.servers.add(id);
  return id;
}

interface Made {
  id: string;
  hold_uuid: string;
  victims_leased_until: string;
}

async function preempt(host: string, victims: string[], vcpu: number): Promise<Made> {
  const res = await svc.call('POST', '/ext/preemptions', {
    body: {
      preemptor: {
        consumer_uuid: crypto.randomUUID(),
        project_id: GOLD,
        priority: 100,
        allocations: { [host]: { resources: { VCPU: vcpu } } },
      },
      victims,
      grace_seconds: 30,
    },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Made;
}

interface Run {
  lines: Record<string, unknown>[];
  warnings: string[];
  done: Promise<number>;
  stop(): Promise<number>;
}

function reaper(args: string[] = [], env: Record<string, string> = {}, placementDownFor = 0): Run {
  let down = placementDownFor;
  const lines: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  const stopper = new AbortController();
  const done = main(['reaper', ...args], {
    out: (text) => lines.push(JSON.parse(text) as Record<string, unknown>),
    err: (text) => warnings.push(text),
    fetch: async (req) => {
      if (new URL(req.url).host === 'nova.test') return nova.fetch(req);
      if (down > 0) {
        down -= 1;
        throw new TypeError('fetch failed: connection refused');
      }
      return svc.app.fetch(req);
    },
    env: {
      PLACEMENT_AGENT_ENDPOINT: 'http://placement.test',
      PLACEMENT_AGENT_TOKEN: 'admin',
      PLACEMENT_AGENT_COMPUTE_ENDPOINT: 'http://nova.test/v2.1',
      PLACEMENT_AGENT_REAPER_STATE_FILE: join(dir, 'state.json'),
      PLACEMENT_AGENT_REAPER_WAIT_SECONDS: '5',
      ...env,
    },
    signal: stopper.signal,
  });
  return {
    lines,
    warnings,
    done,
    stop: () => {
      stopper.abort();
      return done;
    },
  };
}

const actions = (run: Run, action: string) => run.lines.filter((l) => l.action === action);
const saved = () => JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { after: number; pending: string[] };

describe('placement-agent reaper', () => {
  it(
    'deletes exactly the victims within their grace, then releases the nomination: a stock claim of the preemptor fits',
    { timeout: 60_000 },
    async () => {
      const host = await provider(svc, { inventory: { VCPU: { total: 8 } } });
      const other = await provider(svc, { inventory: { VCPU: { total: 8 } } });
      const [a, b] = [await server(host, 4), await server(host, 4)];
      const bystanders = [await server(other, 4), await server(other, 4)];
      const run = reaper();
      const made = await preempt(host, [a, b], 8);
      await waitUntil('the nomination released', () => actions(run, 'nomination_released').length === 1);
      expect(await run.stop()).toBe(0);
      expect(nova.deletes.sort()).toEqual([a, b].sort());
      for (const id of bystanders) expect(nova.servers.has(id)).toBe(true);
      expect(
        actions(run, 'delete_server')
          .map((l) => [l.server, l.result, l.within_grace])
          .sort(),
      ).toEqual(
        [
          [a, 'accepted', true],
          [b, 'accepted', true],
        ].sort(),
      );
      expect(actions(run, 'nomination_released')).toEqual([expect.objectContaining({ preemption: made.id, hold: made.hold_uuid })]);
      expect((await svc.call('GET', `/ext/holds/${made.hold_uuid}`)).status).toBe(404);
      // The preemptor's boot, as Nova claims (no ext_hold), fits where the victims were.
      expect((await server(host, 8, GOLD)).length).toBe(36);
      const events = (await (await svc.call('GET', '/ext/events?kind=preemption')).json()) as { events: { seq: number; kind: string }[] };
      expect(events.events.map((e) => e.kind)).toEqual([
        'preemption.created',
        'preemption.victim_released',
        'preemption.victim_released',
        'preemption.nomination_lapsed',
      ]);
      expect(saved().pending).toEqual([]);
      expect(run.warnings).toEqual([]);
    },
  );

  it('resumes a preemption under way after a restart, from its state file, handling no event twice', { timeout: 60_000 }, async () => {
    const host = await provider(svc, { inventory: { VCPU: { total: 8 } } });
    const [a, b] = [await server(host, 4), await server(host, 4)];
    nova.computeFrees = false;
    const first = reaper();
    const made = await preempt(host, [a, b], 8);
    await waitUntil('both deletes asked', () => actions(first, 'delete_server').length === 2);
    expect(await first.stop()).toBe(0);
    expect(saved().pending).toEqual([made.id]);
    // While the reaper is down, the compute host deletes the servers (the allocations go).
    await nova.computeCatchesUp();
    // Placement does not answer the first two requests of the restarted reaper (its reads of the preemption under way).
    const second = reaper(['--once'], {}, 2);
    expect(await second.done).toBe(0);
    expect(second.warnings).toEqual([expect.stringContaining('placement unavailable'), expect.stringContaining('placement unavailable')]);
    expect(actions(second, 'resumed')).toEqual([
      expect.objectContaining({ preemption: made.id, released: expect.arrayContaining([a, b]) }),
    ]);
    expect(actions(second, 'preemption')).toEqual([]);
    expect(actions(second, 'delete_server')).toEqual([]);
    expect(actions(second, 'nomination_released')).toHaveLength(1);
    expect(nova.deletes.sort()).toEqual([a, b].sort());
    expect(saved()).toEqual({ after: expect.any(Number), pending: [] });
    // A third start has nothing to do.
    const third = reaper(['--once']);
    expect(await third.done).toBe(0);
    expect(third.lines).toEqual([]);
  });

  it('tries again while Nova is down; a delete Nova refuses is left to the lease sweep at the grace end', { timeout: 60_000 }, async () => {
    const host = await provider(svc, { inventory: { VCPU: { total: 8 } } });
    const [a, b] = [await server(host, 4), await server(host, 4)];
    nova.failWith = [503, 503, 403];
    const run = reaper();
    const made = await preempt(host, [a, b], 8);
    await waitUntil(
      'a deleted, b refused',
      () => actions(run, 'delete_server').length === 1 && run.warnings.some((w) => w.includes('403')),
    );
    expect(run.warnings.filter((w) => w.includes('503') && w.includes('trying again'))).toHaveLength(2);
    const refused = nova.deletes.includes(a) ? b : a;
    // Its grace over, the lease sweep releases the refused victim's allocations; then the nomination goes.
    expect((await sweepExpiredLeases(svc.deps.store, Date.parse(made.victims_leased_until))).released).toEqual([refused]);
    await waitUntil('the nomination released', () => actions(run, 'nomination_released').length === 1);
    expect(await run.stop()).toBe(0);
  });

  it('says what is missing: no compute endpoint without Keystone', async () => {
    const run = reaper(['--once'], { PLACEMENT_AGENT_COMPUTE_ENDPOINT: '' });
    expect(await run.done).toBe(2);
    expect(run.warnings.join('\n')).toContain('no compute endpoint');
  });
});
