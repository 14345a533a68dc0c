// A cluster primary outlives a send to a server process that died a moment
// before (test/lifecycle/primary-send-fixture.ts). Each exit, start and count
// has the primary tell the processes their share of the connections; one
// killed in that instant (the OOM killer, or two processes killed together)
// is still counted connected until the primary reads its channel's end, and
// the send fails with EPIPE. Sent without a callback, that failure was an
// 'error' event nobody handled, and it ended the primary and the service:
// with every process killed at once, about one time in three.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT, TSX_LOADER } from './processes.js';

it('outlives a send to a server process that died before the primary saw it go', async () => {
  const outcome = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, join(ROOT, 'test', 'lifecycle', 'primary-send-fixture.ts')],
      { cwd: ROOT, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
  expect(outcome.stderr).not.toContain('EPIPE');
  expect(outcome).toMatchObject({ code: 0, stdout: 'primary alive\n' });
}, 60_000);
