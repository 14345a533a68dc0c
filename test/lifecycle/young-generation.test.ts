// The young generation of a cluster's server processes: node-cluster.ts
// gives them npm start's semi-space size unless the operator chose one, on
// the command line or in NODE_OPTIONS (a flag on the server processes' own
// command line would override NODE_OPTIONS' silently).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listeningServerProcesses, type Running, spawnServer, until, stopServer } from './processes.js';

const WORKERS = 2;
let dir: string;
let server: Running;
const workers = () => listeningServerProcesses(server);
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'placement-young-'));
  server = await spawnServer({
    PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`,
    PLACEMENT_WORKERS: String(WORKERS),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-semi-space-size=8`.trim(),
  });
  expect(await until(() => workers().length === WORKERS, 60_000)).toBe(true);
}, 120_000);

afterAll(async () => {
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
});

describe('a semi-space size in NODE_OPTIONS', () => {
  it("reaches every server process: none is given npm start's own on its command line", () => {
    expect(workers()).toHaveLength(WORKERS);
    for (const worker of workers()) {
      expect(commandLine(worker.pid).filter((arg) => arg.startsWith('--max-semi-space-size'))).toEqual([]);
      expect(readFileSync(`/proc/${worker.pid}/environ`, 'utf8').split('\0')).toContainEqual(
        expect.stringMatching(/^NODE_OPTIONS=.*--max-semi-space-size=8$/),
      );
    }
  });
});
