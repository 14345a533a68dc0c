// Node mode: an in-process queue consuming with consume(), plus a timer that
// runs the sweeps. Returns a stop function (tests and shutdown use it).
import type { Deps } from '../deps.js';
import { consume } from './consume.js';
import { InProcessQueue } from './queue.js';
import { runSweeps } from './sweeps.js';

export interface NodeJobs { queue: InProcessQueue; stop(): void }

export function startNodeJobs(deps: Deps, opts: { intervalMs?: number; timers?: boolean } = {}): NodeJobs {
  const queue = new InProcessQueue((msg) => consume(deps, msg), (err) => deps.log.error('job failed', { err: String(err) }));
  deps.jobs = queue;
  let timer: ReturnType<typeof setInterval> | undefined;
  if (opts.timers !== false) {
    let busy = false;
    timer = setInterval(() => {
      if (busy) return;
      busy = true;
      runSweeps(deps).catch((err: unknown) => deps.log.error('sweep failed', { err: String(err) })).finally(() => { busy = false; });
    }, opts.intervalMs ?? deps.config.JOBS_SWEEP_INTERVAL_MS);
    timer.unref?.();
  }
  return {
    queue,
    stop() {
      if (timer) clearInterval(timer);
      queue.stop();
    },
  };
}
