// Kept-alive connections shared out between a cluster's server processes
// (connection-balance.ts): ten connections that all landed on one process
// (the other was stopped while they were opened, as the kernel gives a burst
// to whichever process accepts first) end up about half on each once
// requests run on them, and every request is answered.
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/wait.js';
import { descendants, type Running, spawnServer, until, stopServer } from './processes.js';

const WORKERS = 2;
const CLIENTS = 10;
let dir: string;
let server: Running;
const workers = () =>
  descendants(server.child.pid!).filter(
    (p) => p.ppid === server.child.pid && server.log().includes(`"msg":"server process listening","url":"${server.url}","pid":${p.pid}}`),
  );

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
function get(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      { agent, headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
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
