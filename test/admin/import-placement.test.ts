// placement-admin import / verify against the real OpenStack Placement 8.0.0
// (Debian's placement-api under uwsgi, started here): the cloud comes over
// whole with its uuids and generations, verify agrees, and Nova's report
// client carries on against this service with the generations it cached
// from the old one. Plus the refusals: a target that holds data, a source
// that dies or answers garbage half way (the target stays empty), a bad
// token or unreachable source (one line, exit 1), a target that drifted
// (verify names it).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer } from '../helpers/node-server.js';
import { admin } from './admin-command.js';
import { describeWithPart, itWithPart } from '../helpers/parts.js';
import {
  placementCall,
  startUpstreamPlacement,
  UPSTREAM_PLACEMENT_MISSING,
  type UpstreamPlacement,
} from '../helpers/upstream-placement.js';
import { CLOUD, loadCloud } from './upstream-cloud.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const NOVA_SCRIPT = join(import.meta.dirname, 'nova-switch.py');
const NOVA_MISSING = existsSync('/usr/lib/python3/dist-packages/nova/scheduler/client/report.py')
  ? undefined
  : 'Debian package python3-nova is not installed';

/** How many rows the target's data tables hold (0 also when the file was never created). */
async function rowsIn(dbFile: string): Promise<number> {
  if (!existsSync(dbFile)) return 0;
  const client = createClient({ url: `file:${dbFile}` });
  try {
    const tables = ['resource_providers', 'inventories', 'consumers', 'allocations', 'placement_aggregates', 'resource_provider_traits'];
    const counts = await client.batch(
      tables.map((t) => `SELECT count(*) AS n FROM ${t}`),
      'read',
    );
    return counts.reduce((sum, rs) => sum + Number(rs.rows[0]!.n), 0);
  } finally {
    client.close();
  }
}

/** A proxy in front of the source that, from request number `after` on, breaks in the given way. */
async function breakingProxy(target: string, after: number, how: 'die' | 'garbage'): Promise<{ url: string; stop(): void }> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let seen = 0;
  const server: Server = createServer((req, res) => {
    seen += 1;
    if (seen >= after) {
      if (how === 'garbage') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"allocations": {"truncated');
        return;
      }
      // The source goes away: this connection is cut, every later one refused.
      server.close();
      for (const s of sockets) s.destroy();
      return;
    }
    const forward = httpRequest(
      { hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return { url: `http://127.0.0.1:${address.port}`, stop: () => server.close() };
}

describeWithPart(UPSTREAM_PLACEMENT_MISSING, 'placement-admin import from the real OpenStack Placement 8.0.0', () => {
  let upstream: UpstreamPlacement;
  let dir: string;
  let n = 0;
  const newTarget = () => {
    const file = join(dir, `target-${++n}.db`);
    return { file, env: { PLACEMENT_DB_URL: `file:${file}` } };
  };
  const source = () => ['--from', upstream.url, '--token', 'admin'];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'import-test-'));
    upstream = await startUpstreamPlacement();
    await loadCloud(upstream.url);
  }, 180_000);
  afterAll(async () => {
    await upstream?.stop();
    upstream?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  // Nova's report client (python3-nova) is this test's second half: without it the test fails, naming it.
  itWithPart(
    NOVA_MISSING,
    'imports the whole cloud with its uuids and generations; verify agrees; Nova carries on with its cached generations',
    async () => {
      const target = newTarget();
      const imported = await admin(['import', ...source(), '--verify'], target.env);
      expect(imported.err).toBe('');
      expect(imported.code).toBe(0);
      expect(imported.out).toMatch(
        /2 custom resource classes, 2 custom traits, 6 providers, 8 inventories, 2 aggregates, 7 provider traits, 4 consumers, 9 allocations/,
      );
      expect(imported.out).toMatch(/verify: the source and the target agree \(6 providers, 4 consumers, 2 projects/);

      const server = await startServer(target.env.PLACEMENT_DB_URL);
      try {
        // Spot checks through our own API, against upstream's answers.
        for (const path of [
          `/resource_providers/${CLOUD.fpga0}`,
          `/resource_providers/${CLOUD.shared}/inventories`,
          `/allocations/${CLOUD.instance1}`,
          `/allocations/${CLOUD.untyped}`,
          `/resource_providers/${CLOUD.cn2}/aggregates`,
        ]) {
          const theirs = (await placementCall(upstream.url, 'GET', path)) as Record<string, unknown>;
          const ours = (await placementCall(server.url, 'GET', path)) as Record<string, unknown>;
          delete theirs.links;
          delete ours.links;
          expect(ours, path).toEqual(theirs);
        }
        const untyped = (await placementCall(server.url, 'GET', `/allocations/${CLOUD.untyped}`)) as { consumer_type: string };
        expect(untyped.consumer_type).toBe('unknown');
        const sharing = (await placementCall(
          server.url,
          'GET',
          `/allocation_candidates?resources=VCPU:1,DISK_GB:10&member_of=${CLOUD.agg1}`,
        )) as { allocation_requests: { allocations: Record<string, unknown> }[] };
        expect(sharing.allocation_requests.some((r) => CLOUD.shared in r.allocations)).toBe(true);

        const before = {
          compute: ((await placementCall(upstream.url, 'GET', `/resource_providers/${CLOUD.cn1}`)) as { generation: number }).generation,
          consumer: ((await placementCall(upstream.url, 'GET', `/allocations/${CLOUD.instance1}`)) as { consumer_generation: number })
            .consumer_generation,
        };
        const { stdout } = await run(
          '/usr/bin/python3',
          [NOVA_SCRIPT, upstream.url, server.url, JSON.stringify({ compute: CLOUD.cn1, child: CLOUD.numa1, consumer: CLOUD.instance1 })],
          { timeout: 120_000 },
        );
        const nova = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
          cached_generations: Record<string, number>;
          generations_after: Record<string, number>;
          cached_consumer_generation: number;
          consumer_generation_after: number;
          memory_total_after: number;
        };
        // Nova cached upstream's generations, and this service accepted them.
        expect(nova.cached_generations[CLOUD.cn1]).toBe(before.compute);
        expect(nova.cached_consumer_generation).toBe(before.consumer);
        // inventory + aggregates on the compute node, traits on the child: each one write.
        expect(nova.generations_after[CLOUD.cn1]).toBe(before.compute + 2);
        expect(nova.generations_after[CLOUD.numa1]).toBe(nova.cached_generations[CLOUD.numa1]! + 1);
        expect(nova.consumer_generation_after).toBe(before.consumer + 1);
        // ... and the allocation write bumped it once more (as upstream: every provider the consumer's allocations touch).
        const ours = (await placementCall(server.url, 'GET', `/resource_providers/${CLOUD.cn1}`)) as { generation: number };
        expect(ours.generation).toBe(before.compute + 3);
        // The old Placement saw none of it.
        const theirs = (await placementCall(upstream.url, 'GET', `/resource_providers/${CLOUD.cn1}`)) as { generation: number };
        expect(theirs.generation).toBe(before.compute);
      } finally {
        await server.stop();
      }
    },
    180_000,
  );

  it('refuses a target that holds data, and --replace wipes it in the same transaction', async () => {
    const target = newTarget();
    expect((await admin(['import', ...source()], target.env)).code).toBe(0);
    // Someone's own provider on the target.
    const server = await startServer(target.env.PLACEMENT_DB_URL);
    const extra = 'd0000000-0000-4000-8000-00000000beef';
    await placementCall(server.url, 'POST', '/resource_providers', { uuid: extra, name: 'not-from-the-source' });
    await server.stop();

    const refused = await admin(['import', ...source()], target.env);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^placement-admin: the target already holds data \(.*\b7 resource_providers, .*run with --replace/);
    expect(refused.err.trim().split('\n')).toHaveLength(1);

    const replaced = await admin(['import', ...source(), '--replace', '--verify'], target.env);
    expect(replaced.err).toBe('');
    expect(replaced.code).toBe(0);
    expect(replaced.out).toMatch(/6 providers/);
    expect(replaced.out).toMatch(/verify: the source and the target agree/);
  }, 120_000);

  it.each(['die', 'garbage'] as const)('writes nothing when the source %s half way through', async (how) => {
    const target = newTarget();
    // The 20th request: past the provider list, inside the per-provider reads.
    const proxy = await breakingProxy(upstream.url, 20, how);
    try {
      const failed = await admin(['import', '--from', proxy.url, '--token', 'admin', '--concurrency', '2'], target.env);
      expect(failed.code).toBe(1);
      expect(failed.err.trim().split('\n')).toHaveLength(1);
      expect(failed.err).toMatch(how === 'die' ? /cannot reach the source/ : /not JSON|unexpectedly/);
      expect(await rowsIn(target.file)).toBe(0);
    } finally {
      proxy.stop();
    }
  }, 60_000);

  it('verify names the first differences when the target drifted, and exits 1', async () => {
    const target = newTarget();
    expect((await admin(['import', ...source()], target.env)).code).toBe(0);
    const server = await startServer(target.env.PLACEMENT_DB_URL);
    try {
      const cn2 = (await placementCall(server.url, 'GET', `/resource_providers/${CLOUD.cn2}/inventories`)) as {
        resource_provider_generation: number;
      };
      await placementCall(server.url, 'PUT', `/resource_providers/${CLOUD.cn2}/inventories/VCPU`, {
        resource_provider_generation: cn2.resource_provider_generation,
        total: 64,
      });
      const verified = await admin(['verify', ...source(), '--target', server.url], target.env);
      expect(verified.code).toBe(1);
      expect(verified.err).toMatch(/verify found 2 difference\(s\)/);
      expect(verified.err).toContain(`provider ${CLOUD.cn2} generation: ${cn2.resource_provider_generation} on the source`);
      expect(verified.err).toMatch(
        new RegExp(`provider ${CLOUD.cn2} inventories: .*"total":32.* on the source, .*"total":64.* on the target`),
      );
    } finally {
      await server.stop();
    }
    // The same through the in-process target (PLACEMENT_DB_URL, no service running).
    const inProcess = await admin(['verify', ...source()], target.env);
    expect(inProcess.code).toBe(1);
    expect(inProcess.err).toContain(`provider ${CLOUD.cn2} inventories`);
  }, 120_000);

  it('a refused token or an unreachable source is one line and exit 1 (the real bin)', async () => {
    const target = newTarget();
    const bin = join(ROOT, 'bin', 'placement-admin.js');
    const env = { ...process.env, ...target.env };
    const fail = async (args: string[]) => {
      try {
        await run(process.execPath, [bin, ...args], { env, cwd: ROOT, timeout: 60_000 });
        throw new Error('expected a failure');
      } catch (err) {
        const e = err as { code: number; stderr: string; stdout: string };
        return { code: e.code, stderr: e.stderr };
      }
    };
    const badToken = await fail(['import', '--from', upstream.url, '--token', 'not-an-admin']);
    expect(badToken.code).toBe(1);
    // The first reads go out side by side: whichever is refused first is named.
    expect(badToken.stderr).toMatch(
      /^placement-admin: the source \(.*\) refused the token \(HTTP 403 on GET \/(resource_classes|traits|resource_providers)\)/,
    );
    expect(badToken.stderr.trim().split('\n')).toHaveLength(1);

    const closed = await breakingProxy(upstream.url, 0, 'die');
    closed.stop();
    const unreachable = await fail(['import', '--from', closed.url, '--token', 'admin']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      /^placement-admin: cannot reach the source \(.*\) at http:\/\/127\.0\.0\.1:\d+: fetch failed: .*ECONNREFUSED/,
    );
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
    expect(await rowsIn(target.file)).toBe(0);

    const help = await run(process.execPath, [bin, 'import', '--help'], { env, cwd: ROOT });
    expect(help.stdout).toMatch(/placement-admin import --from URL/);
    expect(help.stdout).toMatch(/PLACEMENT_KEYSTONE_AUTH_URL/);
  }, 120_000);
});
