// Node mode: the in-process queue (built with the Deps by buildNodeDeps)
// starts consuming with consume(), plus a timer that runs the sweeps. Returns a
// stop function (tests and shutdown use it).
import type { Deps } from '../deps.js';
import { consume } from './consume.js';
import { InProcessQueue } from './queue.js';
import { runSweepsLogged } from './sweeps.js';

export interface NodeJobs {
  queue: InProcessQueue;
  stop(): void;
}

export function startNodeJobs(deps: Deps, opts: { intervalMs?: number; timers?: boolean } = {}): NodeJobs {
  const queue = deps.jobs;
  if (!(queue instanceof InProcessQueue)) throw new Error('Node jobs run on the in-process queue that buildNodeDeps builds');
  queue.consumeWith((msg) => consume(deps, msg));
  let timer: ReturnType<typeof setInterval> | undefined;
  if (opts.timers !== false) {
    let busy = false;
    timer = setInterval(() => {
      if (busy) return;
      busy = true;
      void runSweepsLogged(deps).finally(() => {
        busy = false;
      });
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
