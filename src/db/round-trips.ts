// Counts the requests a libSQL client sends: each batch or execute is one
// round trip, a network hop in Worker mode. The bench and the tests use it
// to hold allocation candidates to a fixed number of hops.
import type { Client } from '@libsql/client';

export interface CountedClient {
  client: Client;
  /** Round trips since creation or the last reset(). */
  count(): number;
  reset(): void;
}

export function countRoundTrips(raw: Client): CountedClient {
  let trips = 0;
  const client = new Proxy(raw, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (prop === 'batch' || prop === 'execute') {
        return (...args: unknown[]) => {
          trips += 1;
          return fn.apply(target, args);
        };
      }
      return fn.bind(target);
    },
  });
  return {
    client,
    count: () => trips,
    reset: () => {
      trips = 0;
    },
  };
}
