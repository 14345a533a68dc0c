// Faults of a PLACEMENT_WORKERS cluster, with real processes: a server
// process SIGKILLed while connections arrive leaves none of them hanging
// (each is answered, or closed so the client can retry), and a server
// process that exits on its own (a stray SIGTERM) is replaced, logged and counted;
// server processes run with malloc at two arenas and large blocks mapped on their own (node-cluster.ts SERVER_ENV).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listeningServerProcesses, isAlive, ROOT, type Running, spawnServer, until, stopServer } from './processes.js';

/** npm start's semi-space size (package.json), which node-cluster.ts gives server processes. */
const YOUNG_GENERATION_MB = Number(
  /--max-semi-space-size=(\d+)/.exec(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start)![1],
);

const WORKERS = 2;
let dir: string;
let server: Running;
/** The server processes that are listening (each logs it, LOG_LEVEL=debug). */
const workers = () => listeningServerProcesses(server);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'placement-faults-'));
  server = await spawnServer({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`, PLACEMENT_WORKERS: String(WORKERS) });
  expect(await until(() => workers().length === WORKERS, 60_000)).toBe(true);
}, 120_000);

afterAll(async () => {
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
});

type ProbeOutcome = 'answered' | 'closed' | 'hung';

/** One request on a new connection; 'hung' when neither an answer nor a close came within `limitMs`. */
function probe(port: number, limitMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    let data = '';
    const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n'));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('hung');
    }, limitMs);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      data += chunk;
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(data.startsWith('HTTP/1.1 200') ? 'answered' : 'closed');
    });
  });
}

describe(`PLACEMENT_WORKERS=${WORKERS}`, () => {
  it('no connection hangs when a server process is SIGKILLed as they arrive', async () => {
    const outcomes: ProbeOutcome[] = [];
    for (let round = 0; round < 3; round += 1) {
      expect(await until(() => workers().length === WORKERS, 60_000)).toBe(true);
      const victim = workers()[0]!;
      const probes = Array.from({ length: 48 }, (_, i) => new Promise((r) => setTimeout(r, i * 5)).then(() => probe(server.port, 15_000)));
      setTimeout(() => process.kill(victim.pid, 'SIGKILL'), 60);
      outcomes.push(...(await Promise.all(probes)));
    }
    expect(outcomes.filter((o) => o === 'hung')).toEqual([]);
    // Most are answered; a few may be closed by the dying process (the client retries those).
    expect(outcomes.filter((o) => o === 'answered').length).toBeGreaterThan(outcomes.length / 2);
    expect(await until(() => workers().length === WORKERS, 60_000)).toBe(true);
    for (let i = 0; i < 8; i += 1) expect(await probe(server.port, 15_000)).toBe('answered');
  }, 240_000);

  it('replaces a server process that exits on its own (a stray SIGTERM), logs and counts it', async () => {
    expect(await until(() => workers().length === WORKERS, 60_000)).toBe(true);
    const victim = workers()[0]!;
    process.kill(victim.pid, 'SIGTERM');
    expect(await until(() => !isAlive(victim.pid), 15_000)).toBe(true);
    expect(await until(() => workers().length === WORKERS && !workers().some((w) => w.pid === victim.pid), 60_000)).toBe(true);
    const line = server
      .log()
      .split('\n')
      .filter((l) => l.includes('starting another'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.pid === victim.pid);
    expect(line).toMatchObject({ level: 'error', code: 0, signal: null });
    expect(line!.replaced_total).toBeGreaterThanOrEqual(1);
    expect(await probe(server.port, 15_000)).toBe('answered');
  }, 120_000);

  it('runs every server process, the replacements too, with malloc at two arenas and large blocks mapped apart, unless the operator chose', () => {
    const environment = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    expect(process.env.MALLOC_ARENA_MAX).toBeUndefined();
    expect(process.env.MALLOC_MMAP_THRESHOLD_).toBeUndefined();
    // After the test above: one of them is a replacement.
    expect(workers()).toHaveLength(WORKERS);
    for (const worker of workers()) {
      expect(environment(worker.pid)).toContain('MALLOC_ARENA_MAX=2');
      expect(environment(worker.pid)).toContain('MALLOC_MMAP_THRESHOLD_=131072');
      // npm start's young generation, though this primary was started without it (young-generation.test.ts: unless chosen).
      expect(readFileSync(`/proc/${worker.pid}/cmdline`, 'utf8').split('\0')).toContain(`--max-semi-space-size=${YOUNG_GENERATION_MB}`);
    }
    // The primary's own environment is the operator's.
    expect(environment(server.child.pid!)).not.toContain('MALLOC_ARENA_MAX=2');
  });

  it('a SIGTERM to the primary stops every process (none replaced)', async () => {
    const before = workers();
    const replacedBefore = server.log().split('starting another').length;
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
    expect(await until(() => before.every((w) => !isAlive(w.pid)), 15_000)).toBe(true);
    expect(server.log().split('starting another').length).toBe(replacedBefore);
  }, 60_000);
});
