// A full disk under the database, for real: the database lives on a small
// tmpfs, a filler file takes the rest of its space. Writes of both APIs then
// answer 503 with the cause in the API's envelope, the episode is logged once
// (not once per request), reads keep serving, and writes succeed again once
// the filler is gone. Two apps in one process, each on its own database, keep
// an episode each. Needs `mount -t tmpfs` (root); fails, saying so, where
// mounting is not permitted.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Logger } from '../../src/deps.js';
import { describeWithPart } from '../helpers/parts.js';
import { makeTestApp } from '../helpers/test-app.js';
import { ADMIN_HEADERS, type Running, spawnServer, stopServer } from './processes.js';

const dir = mkdtempSync(join(tmpdir(), 'placement-disk-full-'));
const volume = join(dir, 'volume');
mkdirSync(volume);
let mounted = false;
let why = '';
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', volume], { stdio: 'pipe' });
  mounted = true;
} catch (err) {
  why = String((err as { stderr?: Buffer }).stderr ?? err).trim();
}
const cannotMount = mounted ? undefined : `root, to mount a 16 MiB tmpfs (mount -t tmpfs refused: ${why})`;

/** Fills the volume with one file until the kernel refuses; returns its path. */
function fill(): string {
  const path = join(volume, 'filler');
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  // Whatever is left is less than a page of it: take it too.
  const tail = openSync(path, 'a');
  try {
    for (;;) writeSync(tail, Buffer.alloc(512, 1));
  } catch {
    // full
  } finally {
    closeSync(tail);
  }
  return path;
}

describeWithPart(cannotMount, 'a full disk under the database', () => {
  let server: Running;
  const rp = crypto.randomUUID();
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = ADMIN_HEADERS) =>
    fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const cyborg = { ...ADMIN_HEADERS, 'openstack-api-version': 'accelerator 2.0' };
  const fullLines = () =>
    server
      .log()
      .split('\n')
      .filter((l) => l.includes('database disk is full'));

  beforeAll(async () => {
    server = await spawnServer({ PLACEMENT_DB_URL: `file:${join(volume, 'placement.db')}`, PLACEMENT_WORKERS: '1', LOG_LEVEL: 'info' });
    expect((await call('POST', '/resource_providers', { name: 'disk-test', uuid: rp })).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await stopServer(server);
    // Lazily: a closed in-process store may hold its files open until the garbage collector (or,
    // where its last write was refused, the process's end) lets go of them.
    if (mounted) execFileSync('umount', ['--lazy', volume]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses writes with 503 in both envelopes, logs the episode once, keeps reading, and recovers', async () => {
    const filler = fill();

    // Placement: several writes, each a 503 that says why.
    for (let i = 0; i < 3; i += 1) {
      const res = await call('POST', '/resource_providers', { name: `refused-${i}` });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('60');
      const { errors } = (await res.json()) as { errors: { status: number; detail: string }[] };
      expect(errors[0]).toMatchObject({ status: 503, detail: expect.stringContaining('database disk is full') });
    }
    const inventory = await call('PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 4 } },
    });
    expect(inventory.status).toBe(503);

    // Cyborg: the same cause in its own envelope.
    const profile = await call(
      'POST',
      '/accelerator/v2/device_profiles',
      [{ name: 'dp-full', groups: [{ 'resources:FPGA': '1' }] }],
      cyborg,
    );
    expect(profile.status).toBe(503);
    const fault = JSON.parse(((await profile.json()) as { error_message: string }).error_message) as { faultstring: string };
    expect(fault.faultstring).toContain('database disk is full');

    // Reads go on.
    const read = await call('GET', `/resource_providers/${rp}`);
    expect(read.status).toBe(200);
    expect((await call('GET', '/accelerator/v2/device_profiles', undefined, cyborg)).status).toBe(200);

    // One line for the whole episode, no stack.
    expect(fullLines()).toHaveLength(1);
    expect(server.log()).not.toMatch(/\n\s+at /);

    // Space returns: writes succeed, and the recovery is logged.
    rmSync(filler);
    const after = await call('PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 4 } },
    });
    expect(after.status).toBe(200);
    expect(server.log()).toContain('database disk has space again');
    const recovered = JSON.parse(
      server
        .log()
        .split('\n')
        .find((l) => l.includes('space again'))!,
    ) as { writes_refused: number };
    expect(recovered.writes_refused).toBeGreaterThanOrEqual(5);

    // A second episode is logged again.
    const again = fill();
    expect((await call('POST', '/resource_providers', { name: 'refused-again' })).status).toBe(503);
    expect(fullLines()).toHaveLength(2);
    rmSync(again);
  }, 120_000);

  it('with two server processes (their writes committed by the primary): refuses claims with 503, writes none, grants them once space returns', async () => {
    const pair = await spawnServer({ PLACEMENT_DB_URL: `file:${join(volume, 'two.db')}`, PLACEMENT_WORKERS: '2', LOG_LEVEL: 'info' });
    const send = (method: string, path: string, body?: unknown) =>
      fetch(`${pair.url}${path}`, { method, headers: ADMIN_HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
    const provider = crypto.randomUUID();
    const claimBody = {
      allocations: { [provider]: { resources: { VCPU: 1 } } },
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
    const claim = (consumer: string) => send('PUT', `/allocations/${consumer}`, claimBody);
    try {
      expect((await send('POST', '/resource_providers', { name: 'disk-test-two', uuid: provider })).status).toBe(200);
      const inventories = { resource_provider_generation: 0, inventories: { VCPU: { total: 100 } } };
      expect((await send('PUT', `/resource_providers/${provider}/inventories`, inventories)).status).toBe(200);
      const consumers = Array.from({ length: 6 }, () => crypto.randomUUID());
      const filler = fill();
      // Concurrent, so they reach the writer together.
      for (const res of await Promise.all(consumers.map(claim))) {
        expect(res.status).toBe(503);
        const { errors } = (await res.json()) as { errors: { status: number; detail: string }[] };
        expect(errors[0]).toMatchObject({ status: 503, detail: expect.stringContaining('database disk is full') });
      }
      const usages = async () =>
        ((await (await send('GET', `/resource_providers/${provider}/usages`)).json()) as { usages: { VCPU: number } }).usages.VCPU;
      expect(await usages()).toBe(0);
      rmSync(filler);
      for (const res of await Promise.all(consumers.map(claim))) expect(res.status).toBe(204);
      expect(await usages()).toBe(consumers.length);
    } finally {
      pair.child.kill('SIGTERM');
      await pair.exited;
    }
  }, 120_000);

  it("with two apps in one process on two databases: a write on the other's database does not end this one's episode", async () => {
    type Line = { msg: string; extra?: Record<string, unknown> };
    const logInto = (lines: Line[]): Logger => ({
      debug() {},
      warn() {},
      info: (msg, extra) => lines.push({ msg, extra }),
      error: (msg, extra) => lines.push({ msg, extra }),
    });
    const onFullLines: Line[] = [];
    const elsewhereLines: Line[] = [];
    const saying = (lines: Line[], words: string) => lines.filter((l) => l.msg.includes(words));
    const onFull = await makeTestApp({ PLACEMENT_DB_URL: `file:${join(volume, 'in-process.db')}` }, logInto(onFullLines));
    const elsewhere = await makeTestApp({}, logInto(elsewhereLines));
    const create = (app: typeof onFull, name: string) => app.call('POST', '/resource_providers', { body: { name } });
    try {
      const filler = fill();
      expect((await create(onFull, 'refused-first')).status).toBe(503);
      expect(saying(onFullLines, 'database disk is full')).toHaveLength(1);

      // The other app's database is on another disk: its write succeeds and says nothing of this one.
      expect((await create(elsewhere, 'written-elsewhere')).status).toBe(200);
      expect(saying(onFullLines, 'space again')).toEqual([]);
      expect(saying(elsewhereLines, 'disk')).toEqual([]);

      // Still the same episode: refused again, not logged again.
      expect((await create(onFull, 'refused-second')).status).toBe(503);
      expect(saying(onFullLines, 'database disk is full')).toHaveLength(1);

      // Space returns: this app's own write ends its episode, which counted both refusals.
      rmSync(filler);
      expect((await create(onFull, 'written-after')).status).toBe(200);
      const recovered = saying(onFullLines, 'space again');
      expect(recovered).toHaveLength(1);
      expect(recovered[0]!.extra?.writes_refused).toBeGreaterThanOrEqual(2);
      expect(saying(elsewhereLines, 'disk')).toEqual([]);
    } finally {
      onFull.close();
      elsewhere.close();
    }
  }, 120_000);
});
