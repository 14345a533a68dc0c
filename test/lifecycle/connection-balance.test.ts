// Kept-alive connections shared out between a cluster's server processes
// (connection-balance.ts): ten connections that all landed on one process
// (the other was stopped while they were opened, as the kernel gives a burst
// to whichever process accepts first) end up about half on each once
// requests run on them, and every request is answered; and a lone client's
// connection is never closed for idle ones the same process holds.
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/wait.js';
import { listeningServerProcesses, type Running, spawnServer, until, stopServer } from './processes.js';

const WORKERS = 2;
const CLIENTS = 10;
let dir: string;
let server: Running;
const workers = () => listeningServerProcesses(server);

/** The server's established connections each process holds (/proc/net/tcp by socket inode, then each process's fds). */
function connectionsOf(pids: number[]): number[] {
  const hexPort = server.port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set(
    readFileSync('/proc/net/tcp', 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      // local address :port, state 01 (established), inode
      .filter((f) => f[1]?.endsWith(`:${hexPort}`) && f[3] === '01')
      .map((f) => f[9]!),
  );
  return pids.map(
    (pid) =>
      readdirSync(`/proc/${pid}/fd`).filter((fd) => {
        try {
          return inodes.has(/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? '');
        } catch {
          return false;
        }
      }).length,
  );
}

const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
function get(path: string, on = agent): Promise<number> {
  return answer(path, on).then(({ status }) => status);
}
/** A GET on `on`'s connections: its status, and whether the server said it closes the connection after it. */
function answer(path: string, on: Agent): Promise<{ status: number; closes: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      { agent: on, headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, closes: res.headers.connection === 'close' }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'placement-balance-'));
  server = await spawnServer({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`, PLACEMENT_WORKERS: String(WORKERS) });
  expect(await until(() => workers().length === WORKERS, 60_000)).toBe(true);
}, 120_000);

afterAll(async () => {
  agent.destroy();
  for (const w of server ? workers() : []) process.kill(w.pid, 'SIGCONT');
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
});

describe(`PLACEMENT_WORKERS=${WORKERS}`, () => {
  it("keeps a lone client's connection open on a process that holds more than its share of idle ones", async () => {
    const pids = workers().map((w) => w.pid);
    // The lone client's connection, then a pool's ten, used once and left idle, all on the first process.
    const lone = new Agent({ keepAlive: true, maxSockets: 1 });
    const pool = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    process.kill(pids[1]!, 'SIGSTOP');
    try {
      expect(await answer('/', lone)).toEqual({ status: 200, closes: false });
      expect(await Promise.all(Array.from({ length: CLIENTS }, () => get('/', pool)))).toEqual(Array(CLIENTS).fill(200));
      const [held, other] = connectionsOf(pids);
      // More than its share (half, rounded up) while the pool's are open, the server's keep-alive timeout away.
      expect(other).toBe(0);
      expect(held).toBeGreaterThan(2);
    } finally {
      process.kill(pids[1]!, 'SIGCONT');
    }
    try {
      // The first process's count reaches the primary, and its share comes back, within a few of its
      // 20 ms reports; each request later than the last close allowed (one per 50 ms).
      const answers = [];
      for (let i = 0; i < 20; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 60));
        answers.push(await answer('/resource_providers', lone));
      }
      expect(answers.filter((a) => a.status !== 200)).toEqual([]);
      expect(answers.filter((a) => a.closes)).toEqual([]);
    } finally {
      pool.destroy();
      lone.destroy();
    }
  }, 60_000);

  it('shares kept-alive connections that all landed on one server process out between the processes', async () => {
    const pids = workers().map((w) => w.pid);
    // The second process stopped: the first accepts all ten.
    process.kill(pids[1]!, 'SIGSTOP');
    try {
      expect(await Promise.all(Array.from({ length: CLIENTS }, () => get('/')))).toEqual(Array(CLIENTS).fill(200));
      expect(connectionsOf(pids)[1]).toBe(0);
    } finally {
      process.kill(pids[1]!, 'SIGCONT');
    }
    // Ten clients, each asking again as soon as answered, until no process holds more than its share and one more.
    let balanced = false;
    const statuses = new Set<number>();
    const client = async () => {
      while (!balanced) statuses.add(await get('/resource_providers'));
    };
    const clients = Array.from({ length: CLIENTS }, client);
    try {
      await waitUntil(
        'connections shared out between the processes',
        () => Math.min(...connectionsOf(pids)) >= CLIENTS / WORKERS - 1,
        60_000,
        100,
      );
    } finally {
      balanced = true;
      await Promise.all(clients);
    }
    expect([...statuses]).toEqual([200]);
  }, 120_000);
});
