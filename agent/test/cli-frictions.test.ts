// What a new operator met running the agent by hand: an unreachable endpoint ends with one line
// naming the address; `--max-attempts` is accepted as the documented key `max_attempts` is; no
// warning about provider configs when none were configured (one when a configured directory is
// missing); and every option `--help` lists is in agent/README.md.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { main } from '../src/main.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const README = fileURLToPath(new URL('../README.md', import.meta.url));

/** A loopback port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function agent(args: string[], env: Record<string, string> = {}, fetch?: TestApp['app']['fetch']) {
  const out: string[] = [];
  const err: string[] = [];
  const sleeps: number[] = [];
  const code = await main(args, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    fetch: fetch ? (req) => Promise.resolve(fetch(req)) : undefined,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    env,
  });
  return { code, out, err, sleeps };
}

describe('the agent by hand', () => {
  let svc: TestApp;
  beforeAll(async () => {
    svc = await makeTestApp();
  });
  afterAll(() => svc?.close());

  it('an unreachable endpoint: exit 3, the last line naming the address and the attempts (--max-attempts)', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const run = await agent(['once', '--endpoint', endpoint, '--token', 'admin', '--root', fixture('cpu-only'), '--max-attempts', '2']);
    expect(run.code).toBe(3);
    expect(run.sleeps).toEqual([1000]);
    expect(run.err.at(-1)).toMatch(
      new RegExp(`^error: placement at ${endpoint.replaceAll('.', '\\.')} did not answer \\(.*\\); gave up after 2 attempts`),
    );
  });

  it('--max-attempts is checked as max_attempts is', async () => {
    const run = await agent(['once', '--endpoint', 'http://127.0.0.1:1', '--max-attempts', '0']);
    expect(run.code).toBe(2);
    expect(run.err.join('\n')).toMatch(/max_attempts/);
  });

  it('says nothing about provider configs when none were configured; warns when a configured directory is missing', async () => {
    const quiet = await agent(
      ['once', '--endpoint', 'http://placement.test', '--token', 'admin', '--root', fixture('cpu-only')],
      {},
      svc.app.fetch,
    );
    expect(quiet.code, quiet.err.join('\n')).toBe(0);
    expect(quiet.err.filter((l) => /provider config/.test(l))).toEqual([]);
    const configured = await agent(
      ['once', '--endpoint', 'http://placement.test', '--token', 'admin', '--root', fixture('cpu-only')],
      { PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent-provider-config' },
      svc.app.fetch,
    );
    expect(configured.code).toBe(0);
    expect(configured.err).toContainEqual(expect.stringMatching(/^warning: \/nonexistent-provider-config: no provider configs found/));
  });

  it('every option --help lists is in agent/README.md, `once --root` among them', async () => {
    const help = (await agent(['--help'])).out.join('\n');
    const readme = readFileSync(README, 'utf8');
    const options = [...new Set(help.match(/--[a-z][a-z-]+/g))];
    expect(options).toContain('--max-attempts');
    expect(options.filter((o) => !readme.includes(o))).toEqual([]);
    expect(readme).toMatch(/placement-agent once .*--root DIR/);
  });
});
