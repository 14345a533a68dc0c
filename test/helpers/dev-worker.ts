// `npm run dev:worker` (scripts/dev-worker.sh: a real sqld and the real
// `wrangler dev`, workerd) started by a test on a free port, its output
// kept as a terminal would show it. Extra `wrangler dev` options go in
// `args` (`--var NAME:value`, `--test-scheduled`), extra environment in `env`
// (PLACEMENT_AUTH_STRATEGY, which the script passes on).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './sqld.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** wrangler colours its labels; tests read what a terminal would show. */
export const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

export interface DevWorker {
  url: string;
  stdout(): string;
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts it with its database in `data` and waits (90 s at most) until GET / answers. */
export async function startDevWorker(data: string, args: string[] = [], env: Record<string, string> = {}): Promise<DevWorker> {
  const port = await freePort();
  const child: ChildProcess = spawn('bash', ['scripts/dev-worker.sh', ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), PLACEMENT_DEV_WORKER_DATA: data, CI: '1', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dev:worker exited (${child.exitCode}):\n${plain(out)}\n${plain(err)}`);
    try {
      if ((await fetch(`${url}/`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`dev:worker did not answer at ${url}:\n${plain(out)}\n${plain(err)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, stdout: () => plain(out), stderr: () => plain(err), stop };
}
