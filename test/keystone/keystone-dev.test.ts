// `npm run keystone:dev` (scripts/keystone-dev.ts), as docs/limits.md and docs/keystone.md
// tell a developer to run it: it prints the environment to use, and with exactly what it
// printed the admin signs in, the service starts in Keystone mode with Keystone's limits
// (so the service user can validate tokens and read every project's limits) and answers
// the admin's token; Ctrl-C stops Keystone and removes its folder.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keystoneMissing } from '../helpers/keystone.js';
import { describeWithPart } from '../helpers/parts.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { waitUntil } from '../helpers/wait.js';

const ROOT = join(import.meta.dirname, '..', '..');

describeWithPart(keystoneMissing(), 'npm run keystone:dev', () => {
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let printed: Record<string, string>;
  let envFile: string;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    child = spawn('npm', ['run', '--silent', 'keystone:dev'], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await waitUntil(
      `keystone:dev's environment (stderr so far: ${stderr.slice(-2000)})`,
      () => {
        if (child.exitCode !== null) throw new Error(`keystone:dev exited ${child.exitCode}:\n${stderr}`);
        return stdout.includes('# (also in ');
      },
      240_000,
      100,
    );
    printed = Object.fromEntries([...stdout.matchAll(/^export ([A-Z_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
    envFile = /also in (\S+):/.exec(stdout)![1]!;
  }, 300_000);

  afterAll(async () => {
    for (const app of apps) app.close();
    if (child?.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      process.kill(-child.pid!, 'SIGKILL');
      await gone;
    }
  });

  it('prints the service settings, the limits settings and the CLI environment, and where they are kept', () => {
    expect(Object.keys(printed)).toEqual(
      expect.arrayContaining([
        'PLACEMENT_AUTH_STRATEGY',
        'PLACEMENT_KEYSTONE_AUTH_URL',
        'PLACEMENT_KEYSTONE_USERNAME',
        'PLACEMENT_KEYSTONE_PASSWORD',
        'PLACEMENT_KEYSTONE_PROJECT_NAME',
        'PLACEMENT_LIMITS',
        'PLACEMENT_LIMITS_SERVICE',
        'OS_AUTH_URL',
        'OS_USERNAME',
        'OS_PASSWORD',
      ]),
    );
    expect(printed.PLACEMENT_KEYSTONE_AUTH_URL).toBe(printed.OS_AUTH_URL);
    expect(existsSync(envFile)).toBe(true);
    expect(stderr).toMatch(/keystone:dev: ready after/);
  });

  it('signs in the admin, and the service with what it printed (tokens validated, limits read)', async () => {
    const signIn = await fetch(`${printed.OS_AUTH_URL}/auth/tokens?nocatalog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ['password'],
            password: { user: { name: printed.OS_USERNAME, domain: { name: printed.OS_USER_DOMAIN_NAME }, password: printed.OS_PASSWORD } },
          },
          scope: { project: { name: printed.OS_PROJECT_NAME, domain: { name: printed.OS_PROJECT_DOMAIN_NAME } } },
        },
      }),
    });
    expect(signIn.status).toBe(201);
    const adminToken = signIn.headers.get('x-subject-token')!;

    const service = Object.fromEntries(Object.entries(printed).filter(([name]) => name.startsWith('PLACEMENT_')));
    // Keystone under uwsgi takes seconds per request on a loaded machine.
    const app = await makeTestApp({ ...service, PLACEMENT_KEYSTONE_TIMEOUT_MS: '60000' });
    apps.push(app);
    const providers = await app.app.request('/resource_providers', { headers: { 'x-auth-token': adminToken } });
    expect(providers.status).toBe(200);
    // The limits, read with the service user's system-scoped token (the role the script gave it).
    const refresh = await app.app.request('/ext/limits/refresh', { method: 'POST', headers: { 'x-auth-token': adminToken } });
    expect({ status: refresh.status, body: await refresh.text() }).toMatchObject({ status: 200 });
    const ready = await app.app.request('/readyz');
    expect({ status: ready.status, body: await ready.json() }).toEqual({ status: 200, body: { status: 'ready' } });
  }, 180_000);

  it('stops Keystone and removes its folder on Ctrl-C', async () => {
    const gone = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    process.kill(-child.pid!, 'SIGINT');
    await gone;
    await waitUntil('the folder removed', () => !existsSync(envFile), 30_000, 100);
    await expect(fetch(`${printed.OS_AUTH_URL}/`)).rejects.toThrow();
  }, 60_000);
});
