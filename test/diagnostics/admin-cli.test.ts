// `placement-admin audit` as an operator runs it: the bin (through its tsx
// launcher) against a real `npm start` server on a database that holds an
// empty consumer and a dead-lettered Nova event. Table, --json, and --fix
// (dry run printed, then applied; the re-sent event reaches Nova).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindBody, FPGA_RP, fpgaProfile, makeCyborgApp, seedHost, startFakeNova, type CyborgTestApp } from '../cyborg/helpers.js';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { waitUntil } from '../helpers/wait.js';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'placement-admin.js');

async function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let seed: CyborgTestApp;
let server: ServerProcess;
let nova: Awaited<ReturnType<typeof startFakeNova>>;
const emptyConsumer = crypto.randomUUID();
let deadArq = '';

beforeAll(async () => {
  // Seed in-process on a file database, then serve that file with `npm start`.
  seed = await makeCyborgApp({ NOVA_URL: 'http://nova.test/v2.1', NOVA_EVENT_MAX_ATTEMPTS: '1' });
  seed.deps.novaFetch = async () => new Response('{"error":"down"}', { status: 503 });
  await seedHost(seed, 2);
  await seed.acc('POST', '/device_profiles', { body: fpgaProfile() });
  const made = await seed.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } });
  deadArq = ((await made.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid;
  await seed.acc('PATCH', '/accelerator_requests', { body: bindBody(deadArq, crypto.randomUUID()) });
  await seed.jobs.queue.idle();
  const claimed = await seed.call('PUT', `/allocations/${emptyConsumer}`, {
    body: {
      allocations: { [FPGA_RP]: { resources: { FPGA: 1 } } },
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
  expect(claimed.status).toBe(204);
  // A consumer whose allocations vanished without it (no API path does this).
  await seed.deps.store.client.execute({ sql: 'DELETE FROM allocations WHERE consumer_id = ?', args: [emptyConsumer] });
  seed.jobs.stop();

  nova = await startFakeNova();
  server = await startServer(seed.dbUrl, { NOVA_URL: nova.url, NOVA_TOKEN: 'nova-secret', JOBS_SWEEP_INTERVAL_MS: '100' });
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await nova?.close();
  seed?.close();
});

describe('placement-admin audit', () => {
  it('prints the findings as tables, and exits 1: something to repair', async () => {
    const { code, stdout, stderr } = await admin('audit', '--endpoint', server.url, '--token', 'admin');
    expect(code, stderr).toBe(1);
    expect(stdout).toContain('Consumers with no allocations: 1');
    expect(stdout).toMatch(new RegExp(`${emptyConsumer}\\s+\\S+\\s+\\S+\\s+INSTANCE`));
    expect(stdout).toContain('Dead-letter events: 1');
    expect(stdout).toMatch(/\d+\s+nova-event\s+1\s+.*503/);
    expect(stdout).toContain('Providers whose usage exceeds capacity: 0');
  }, 60_000);

  it('prints the report as JSON with --json, every page merged', async () => {
    const { code, stdout, stderr } = await admin('audit', '--endpoint', server.url, '--token', 'admin', '--json', '--limit', '1');
    expect(code, stderr).toBe(1);
    const { report } = JSON.parse(stdout) as {
      report: { summary: Record<string, number>; empty_consumers: { items: { uuid: string }[] } };
    };
    expect(report.summary).toMatchObject({ empty_consumers: 1, dead_letters: 1 });
    expect(report.empty_consumers.items.map((c) => c.uuid)).toEqual([emptyConsumer]);
  }, 60_000);

  it('fails clearly on a bad token or endpoint: 3, no audit; 2, a usage error', async () => {
    const denied = await admin('audit', '--endpoint', server.url, '--token', 'alice:proj');
    expect(denied.code).toBe(3);
    expect(denied.stderr).toContain('HTTP 403');
    const unreachable = await admin('audit', '--endpoint', 'http://127.0.0.1:9');
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain('cannot reach http://127.0.0.1:9');
    const usage = await admin('audit');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--endpoint is required');
  }, 60_000);

  it('--help documents the exit codes; --version names the release', async () => {
    for (const args of [['--help'], ['audit', '--help'], ['simulate', '--help']]) {
      const help = await admin(...args);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/exit codes: 0 .* 1 .*something to repair/s);
      // The shipped extensions' commands (simulate's, from its object), each with its line and its paragraph.
      expect(help.stdout).toContain('       placement-admin simulate --endpoint URL [--token TOKEN] [--json] FILE.yaml\n');
      expect(help.stdout).toMatch(/\n\nsimulate {3}reads FILE\.yaml .* exit 1 when a consumer would be displaced\.\n\nexit codes:/s);
    }
    const version = await admin('--version');
    expect(version).toMatchObject({ code: 0, stdout: expect.stringMatching(/^placement-admin \d+\.\d+\.\d+\n$/) });
  }, 60_000);

  it('--fix shows the dry run, then applies only the safe repairs', async () => {
    // The bound ARQ whose instance holds no allocation is no safe repair: left, so exit 1.
    const { code, stdout, stderr } = await admin('audit', '--endpoint', server.url, '--token', 'admin', '--fix');
    expect(code, stderr).toBe(1);
    const dry = stdout.indexOf('Dry run: would delete 1 empty consumer(s)');
    const applied = stdout.indexOf('Applied: delete 1 empty consumer(s)');
    expect(dry).toBeGreaterThan(0);
    expect(applied).toBeGreaterThan(dry);
    expect(stdout).toContain('Dry run: would re-send 1 dead letter(s)');
    expect(stdout).toContain('Applied: re-send 1 dead letter(s)');

    // The re-sent event reaches Nova; the audit is clean afterwards.
    await waitUntil('the re-sent event to reach Nova', () => nova.calls.length > 0);
    expect(nova.calls.flatMap((c) => c.events.map((e) => e.tag))).toEqual([deadArq]);
    const after = await admin('audit', '--endpoint', server.url, '--json');
    expect(after.code).toBe(1);
    const { report } = JSON.parse(after.stdout) as { report: { summary: Record<string, number> } };
    expect(report.summary).toMatchObject({ empty_consumers: 0, dead_letters: 0, bound_arqs_without_allocation: 1 });

    const again = await admin('audit', '--endpoint', server.url, '--fix');
    expect(again.stdout).toContain('Nothing to repair.');
  }, 60_000);
});
