// When a server process's background answers (the re-warm after a load, the
// refill after writes: warm-up.ts) may run. Each is a whole candidates answer
// on the event loop, several milliseconds on a large cloud, and a request
// arriving meanwhile waits for it: after a load, the refills of both server
// processes fell among the first warm answers and made their slowest
// (docs/performance.md, tails). So each background answer waits until no read
// is in flight and none was answered for QUIET_MS. Reads only: a load's
// writes are when a re-warm must run, so that the first answer after it
// finds the engine and its caches ready.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long after the last read a background answer may start: a client's next read mostly follows within it, on a loaded machine too. */
const QUIET_MS = 100;

export class ReadsQuiet {
  private inFlight = 0;
  private lastAnswered = Number.NEGATIVE_INFINITY;

  constructor(private readonly quietMs = QUIET_MS) {}

  /** Call for every request as it arrives. */
  track(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') return;
    this.inFlight += 1;
    res.once('close', () => {
      this.inFlight -= 1;
      this.lastAnswered = performance.now();
    });
  }

  /** Resolves on a turn of the event loop with no read in flight and none answered for the quiet time. */
  readonly turn = async (): Promise<void> => {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      const wait = this.quietMs - (performance.now() - this.lastAnswered);
      if (this.inFlight === 0 && wait <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, this.inFlight > 0 ? this.quietMs : wait).unref());
    }
  };
}
