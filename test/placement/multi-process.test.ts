// `npm start` with several server processes (PLACEMENT_WORKERS): one primary
// forks HTTP servers on the same port and database file. They answer, their
// writes stay exact (racing claims grant exactly the capacity; racing binds
// get distinct devices and Nova hears of each exactly once), a crashed
// process is replaced, and stopping the server leaves no process behind.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindBody, fpgaProfile, seedHost, startFakeNova } from '../cyborg/helpers.js';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { descendants } from '../lifecycle/processes.js';
import { PROJECT as project, USER as user } from '../helpers/claims.js';

const WORKERS = 3;

/** The node processes running the server: the primary (the process started, npm start's launcher) and the HTTP workers it forks (the start bundle). */
const serverProcesses = (server: ServerProcess) => {
  const primary = server.child.pid!;
  return descendants(process.pid).filter((p) => p.pid === primary || (p.ppid === primary && p.cmd.includes('server.mjs')));
};

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  body?: unknown,
  version = '1.28',
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      'x-auth-token': 'admin',
      'content-type': 'application/json',
      accept: 'application/json',
      'openstack-api-version': `placement ${version}`,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

describe(`npm start with PLACEMENT_WORKERS=${WORKERS}`, () => {
  let dir: string;
  let server: ServerProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'placement-workers-'));
    server = await startServer(`file:${join(dir, 'placement.db')}`, { PLACEMENT_WORKERS: String(WORKERS) });
    // The port answers as soon as one worker listens; wait for all of them.
    await until(() => serverProcesses(server).length === WORKERS + 1, 60_000);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a primary and one HTTP server process per worker', () => {
    const processes = serverProcesses(server);
    expect(processes).toHaveLength(WORKERS + 1);
    const primary = processes.filter((p) => !processes.some((q) => q.pid === p.ppid));
    expect(primary).toHaveLength(1);
    expect(processes.filter((p) => p.ppid === primary[0]!.pid)).toHaveLength(WORKERS);
  });

  it('grants exactly the capacity to 30 racing claims spread over its processes', async () => {
    const rp = crypto.randomUUID();
    expect((await call(server, 'POST', '/resource_providers', { name: `race-${rp}`, uuid: rp })).status).toBe(200);
    expect(
      (
        await call(server, 'PUT', `/resource_providers/${rp}/inventories`, {
          resource_provider_generation: 0,
          inventories: { VCPU: { total: 8, reserved: 1 } },
        })
      ).status,
    ).toBe(200);
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () =>
        call(server, 'PUT', `/allocations/${crypto.randomUUID()}`, {
          allocations: { [rp]: { resources: { VCPU: 1 } } },
          project_id: project,
          user_id: user,
          consumer_generation: null,
        }),
      ),
    );
    expect(outcomes.filter((o) => o.status === 204)).toHaveLength(7);
    for (const refused of outcomes.filter((o) => o.status !== 204)) {
      expect(refused).toMatchObject({
        status: 409,
        body: { errors: [{ status: 409, detail: expect.stringContaining('would exceed the capacity') }] },
      });
    }
    // Every process reads the committed result.
    for (let i = 0; i < 2 * WORKERS; i += 1) {
      expect(await call(server, 'GET', `/resource_providers/${rp}/usages`)).toMatchObject({ status: 200, body: { usages: { VCPU: 7 } } });
    }
    expect(await call(server, 'GET', `/resource_providers/${rp}`)).toMatchObject({ body: { generation: 8 } });
  }, 60_000);

  it('replaces a server process that dies and keeps answering', async () => {
    const before = serverProcesses(server);
    const primaryPid = before.find((p) => !before.some((q) => q.pid === p.ppid))!.pid;
    const victim = before.find((p) => p.ppid === primaryPid)!;
    process.kill(victim.pid, 'SIGKILL');
    const replaced = await until(() => {
      const now = serverProcesses(server);
      return now.length === WORKERS + 1 && !now.some((p) => p.pid === victim.pid);
    }, 60_000);
    expect(replaced).toBe(true);
    for (let i = 0; i < 2 * WORKERS; i += 1) expect((await call(server, 'GET', '/resource_providers')).status).toBe(200);
  }, 90_000);

  it('replaces a server process killed before it got to listen', async () => {
    // The primary forks a replacement; kill it at once, while it is still loading.
    const before = serverProcesses(server);
    const primaryPid = before.find((p) => !before.some((q) => q.pid === p.ppid))!.pid;
    process.kill(before.find((p) => p.ppid === primaryPid)!.pid, 'SIGKILL');
    let starting: number | undefined;
    expect(
      await until(() => {
        starting = serverProcesses(server).find((p) => p.ppid === primaryPid && !before.some((q) => q.pid === p.pid))?.pid;
        return starting !== undefined;
      }, 10_000),
    ).toBe(true);
    process.kill(starting!, 'SIGKILL');
    // Killed by a signal, not exiting on its own: started again after a pause.
    const replaced = await until(() => {
      const now = serverProcesses(server);
      return now.length === WORKERS + 1 && !now.some((p) => p.pid === starting);
    }, 30_000);
    expect(replaced).toBe(true);
    for (let i = 0; i < 2 * WORKERS; i += 1) expect((await call(server, 'GET', '/resource_providers')).status).toBe(200);
  }, 60_000);

  it('leaves no process behind when stopped', async () => {
    const processes = serverProcesses(server);
    await server.stop();
    expect(await until(() => processes.every((p) => !readdirSync('/proc').includes(String(p.pid))), 10_000)).toBe(true);
  }, 30_000);
});

describe(`accelerator binds through npm start with PLACEMENT_WORKERS=${WORKERS}`, () => {
  const HANDLES = 6;
  let dir: string;
  let server: ServerProcess;
  let nova: Awaited<ReturnType<typeof startFakeNova>>;

  /** call/acc as the in-process helpers have them, over real HTTP to the server. */
  const http =
    (prefix: string, family: string, fallback: string) =>
    (method: string, path: string, opts: { body?: unknown; version?: string; headers?: Record<string, string> } = {}) =>
      fetch(`${server.url}${prefix}${path}`, {
        method,
        headers: {
          'x-auth-token': 'admin',
          accept: 'application/json',
          'openstack-api-version': `${family} ${opts.version ?? fallback}`,
          ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...opts.headers,
        },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      });
  const client = () => ({ call: http('', 'placement', 'latest'), acc: http('/accelerator/v2', 'accelerator', '2.0') });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'placement-workers-bind-'));
    nova = await startFakeNova();
    server = await startServer(`file:${join(dir, 'placement.db')}`, {
      PLACEMENT_WORKERS: String(WORKERS),
      NOVA_URL: nova.url,
      NOVA_TOKEN: 'nova-secret',
      JOBS_SWEEP_INTERVAL_MS: '50',
    });
    await until(() => serverProcesses(server).length === WORKERS + 1, 60_000);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await nova?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('binds racing ARQs to distinct devices and tells Nova once per ARQ', async () => {
    const { call, acc } = client();
    await seedHost({ call, acc }, HANDLES);
    expect((await acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
    const arqs = await Promise.all(
      Array.from({ length: HANDLES }, async () => {
        const res = await acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } });
        expect(res.status).toBe(201);
        return ((await res.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
      }),
    );
    const instances = arqs.map(() => crypto.randomUUID());
    const patches = await Promise.all(arqs.map((arq, i) => acc('PATCH', '/accelerator_requests', { body: bindBody(arq, instances[i]!) })));
    expect(patches.map((p) => p.status)).toEqual(arqs.map(() => 202));

    expect(await until(() => nova.calls.length >= HANDLES, 30_000)).toBe(true);
    // Many sweeps later (the primary re-sends due outbox rows; the claim on each row keeps it to one): one event each.
    await new Promise((r) => setTimeout(r, 1000));
    expect(nova.calls.map((c) => c.events[0]!.tag).sort()).toEqual([...arqs].sort());

    const shown = await Promise.all(
      arqs.map(
        async (arq) =>
          (await (await acc('GET', `/accelerator_requests/${arq}`)).json()) as {
            state: string;
            attach_handle_info: Record<string, string>;
          },
      ),
    );
    expect(shown.map((a) => a.state)).toEqual(arqs.map(() => 'Bound'));
    const handles = new Set(shown.map((a) => JSON.stringify(a.attach_handle_info)));
    expect(handles.size).toBe(HANDLES);
  }, 90_000);
});
