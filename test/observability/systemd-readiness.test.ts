// deploy/systemd/placement-edge.service waits for GET /readyz after start:
// its ExecStartPost command, run as systemd would (node -e, PORT from the
// unit's environment), returns once a started service is ready.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../helpers/node-server.js';

const UNIT = join(import.meta.dirname, '..', '..', 'deploy', 'systemd', 'placement-edge.service');

describe('placement-edge.service', () => {
  it("waits in ExecStartPost until the started service's /readyz answers 200", async () => {
    const line = readFileSync(UNIT, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('ExecStartPost='))!;
    const match = /^ExecStartPost=\/usr\/bin\/node -e "(.*)"$/.exec(line);
    expect(match, line).not.toBeNull();
    const script = match![1]!;
    expect(script).not.toMatch(/[%$]/); // systemd would expand them

    const dir = mkdtempSync(join(tmpdir(), 'placement-unit-'));
    const server = await startServer(`file:${join(dir, 'placement.db')}`, { PLACEMENT_WORKERS: '1' });
    try {
      const port = new URL(server.url).port;
      const ready = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, PORT: port }, timeout: 30_000 });
      expect(ready.status).toBe(0);
      // Nothing listening: it keeps waiting (systemd's TimeoutStartSec then fails the start).
      const waiting = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, PORT: '1' }, timeout: 2_000 });
      expect(waiting.signal).toBe('SIGTERM');
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
