// Run by primary-send.test.ts (node with tsx's loader): a cluster primary
// sharing connection counts (connection-balance.ts) with two processes, one
// of which dies just before the primary sends to it: killed and reaped by
// the kernel (a zombie), but not yet seen to go by this process, which has
// not turned to its event loop since. Prints "primary alive" and exits 0
// when the primary outlives the send.
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { shareConnections } from '../../src/entry/connection-balance.js';

const dead = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z';
  } catch {
    return true;
  }
};

if (cluster.isPrimary) {
  shareConnections();
  const [alive, killed] = [cluster.fork(), cluster.fork()];
  await Promise.all([alive, killed].map((w) => new Promise((resolve) => w.once('online', resolve))));
  const pid = killed.process.pid!;
  process.kill(pid, 'SIGKILL');
  while (!dead(pid)) {
    // spin: no turn of the event loop, so the primary still counts it connected
  }
  // The other process tells its count, as balanceConnections does: the primary tells both their new share.
  cluster.emit('message', alive, { type: 'placement-connections:count', value: 3 });
  await new Promise((resolve) => killed.once('exit', resolve));
  // The send's failure, where unhandled, ends this process on the next ticks.
  await new Promise((resolve) => setTimeout(resolve, 200));
  alive.process.kill('SIGKILL');
  process.stdout.write('primary alive\n');
  process.exit(0);
} else {
  // A server process that stays until killed.
  process.on('message', () => undefined);
  setInterval(() => undefined, 1 << 30);
}
