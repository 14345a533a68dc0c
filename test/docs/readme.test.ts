// Every shell block of the README, run as an operator would paste it, against
// a freshly started `npm start` on an empty database: in order, in one bash
// session (a block may use what an earlier one set), with `set -euo pipefail`.
// The server's address replaces 127.0.0.1:8778 / localhost:8778. `curl` is
// wrapped: a request to anything but this machine fails the block (the
// README's old `H='... placement\ 1.39'` sent requests to 1.0.0.39), and so
// does an HTTP error status, unless the block's curl says otherwise.
//
// Lines that set the service up rather than use it are not run here: `npm ci`,
// `npm start` (this test starts it), `npm test` (this suite). A block preceded
// by `<!-- verified by test/FILE -->` is run by that test instead (it needs a
// real Keystone, say); this test checks that FILE exists and reads the README.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart, missingUnless } from '../helpers/parts.js';
import { shellBlocks } from '../helpers/readme-blocks.js';

const ROOT = join(import.meta.dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const NOT_RUN = /^\s*npm (ci|start|test)\b/;

const blocks = shellBlocks(README);
// The blocks use curl and jq, and some drive the OpenStack CLI with its placement and accelerator plugins.
const missing = missingUnless(
  [
    '/usr/bin/curl',
    '/usr/bin/jq',
    '/usr/bin/openstack',
    '/usr/lib/python3/dist-packages/osc_placement',
    '/usr/lib/python3/dist-packages/cyborgclient',
  ],
  'Debian packages curl, jq, python3-openstackclient, python3-osc-placement, python3-cyborgclient',
);

describe('the README', () => {
  it('has shell blocks, and each one that another test runs names a test that reads the README', () => {
    expect(blocks.length).toBeGreaterThan(3);
    for (const block of blocks.filter((b) => b.verifiedBy)) {
      const file = join(ROOT, block.verifiedBy!);
      expect(existsSync(file), `README line ${block.line}: ${block.verifiedBy} does not exist`).toBe(true);
      expect(readFileSync(file, 'utf8'), `README line ${block.line}: ${block.verifiedBy} does not read the README`).toContain('README');
    }
  });

  it('names no host but this machine in any example', () => {
    // Blocks run elsewhere (against a real Keystone, say) name the cloud's own hosts, which that test replaces.
    for (const block of blocks.filter((b) => !b.verifiedBy)) {
      for (const url of block.code.match(/\bhttps?:\/\/[^\s'"/]+/g) ?? []) {
        expect(url, `README line ${block.line}`).toMatch(/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$|\$\{?\w+/);
      }
    }
  });
});

describeWithPart(missing, 'every shell block of the README, pasted into bash against npm start', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'readme-'));
    server = await startServer(`file:${join(dir, 'placement.db')}`);
    // curl, wrapped: only this machine, and an HTTP error fails the command (--fail).
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'curl'),
      `#!/bin/bash
for arg in "$@"; do
  case "$arg" in
    http://127.0.0.1:*|http://localhost:*|http://\\[::1\\]:*|-*|*' '*|'') ;;
    http://*|https://*) echo "curl wrapper: refused $arg (not this machine)" >&2; exit 97 ;;
  esac
done
# A bare word that looks like a host (the old README's stray "1.39") would be a URL to curl.
for arg in "$@"; do
  if [[ "$arg" =~ ^[0-9]+(\\.[0-9]+)+$ ]]; then echo "curl wrapper: refused $arg (a stray argument curl would fetch)" >&2; exit 97; fi
done
exec /usr/bin/curl --fail-with-body "$@"
`,
    );
    chmodSync(join(bin, 'curl'), 0o755);
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs each block in order, and each exits 0', () => {
    const address = server.url.replace(/^http:\/\//, '');
    const script = ['set -euo pipefail'];
    for (const [index, block] of blocks.entries()) {
      if (block.verifiedBy) continue;
      const code = block.code
        .split('\n')
        .filter((line) => !NOT_RUN.test(line))
        .join('\n')
        .replaceAll('127.0.0.1:8778', address)
        .replaceAll('localhost:8778', address);
      script.push(`echo "::block ${index} (README line ${block.line})" >&2`, code);
    }
    script.push('echo "::done" >&2');
    const run = spawnSync('bash', ['-c', script.join('\n')], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${join(dir, 'bin')}:${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` },
      encoding: 'utf8',
      timeout: 170_000,
    });
    const failedAt = /::block \d+ \(README line (\d+)\)(?![\s\S]*::block)/.exec(run.stderr)?.[1];
    expect(run.stderr, `README block at line ${failedAt} failed:\n${run.stdout}\n${run.stderr}`).toContain('::done');
    expect(run.status).toBe(0);
  }, 180_000);
});
