// Stopping an HTTP server without cutting a request off: stop accepting,
// close idle keep-alive connections, let the requests in flight finish and
// answer each with `Connection: close` (so no client sends another on that
// connection), and cut what is left only when the grace period is over.
import type { Server, ServerResponse } from 'node:http';

export interface DrainOutcome {
  /** Requests in flight during the stop: those it found, and those that arrived since on connections still open. */
  inFlight: number;
  /** Requests still unanswered when the grace period ended (their connections were cut). */
  cut: number;
}

export interface Drainable {
  /** Call for every response as its request arrives. */
  track(res: ServerResponse): void;
  /** Stops the server; resolves once every connection closed, or the grace period ended. */
  drain(graceMs: number): Promise<DrainOutcome>;
}

export function drainable(server: Server): Drainable {
  const active = new Set<ServerResponse>();
  let stopping = false;
  let arrivedWhileStopping = 0;

  const closeAfter = (res: ServerResponse) => {
    // A response whose head went out before the stop said keep-alive: its
    // connection is closed as soon as it turns idle.
    if (!res.headersSent) res.setHeader('connection', 'close');
    else res.once('finish', () => setImmediate(() => server.closeIdleConnections()));
  };

  return {
    track(res) {
      active.add(res);
      res.once('close', () => active.delete(res));
      if (stopping) {
        arrivedWhileStopping += 1;
        closeAfter(res);
      }
    },
    drain(graceMs) {
      stopping = true;
      const found = active.size;
      for (const res of active) closeAfter(res);
      // A request whose head was still on its way when the stop began is in flight too:
      // without it the log could say "0 in flight, 1 cut".
      const inFlight = () => found + arrivedWhileStopping;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          const cut = active.size;
          server.closeAllConnections();
          resolve({ inFlight: inFlight(), cut });
        }, graceMs);
        // close() stops accepting and closes the idle connections; its
        // callback runs when the last connection has closed.
        server.close(() => {
          clearTimeout(timer);
          resolve({ inFlight: inFlight(), cut: 0 });
        });
      });
    },
  };
}
