// globalSetup of the Node suite: the bundle `npm start` runs (scripts/start.mjs) made fresh
// from the sources as they are, once, before any file starts a server with it
// (test/helpers/node-server.ts startServer): a stale one would be rebuilt by every start at once.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export default function setup(): void {
  const root = join(import.meta.dirname, '..');
  const made = spawnSync(process.execPath, [join(root, 'scripts', 'start.mjs'), '--prepare'], { cwd: root, encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`scripts/start.mjs --prepare exited ${made.status ?? made.signal}:\n${made.stderr}`);
}
