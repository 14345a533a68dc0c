// Counts the requests a libSQL client sends: each batch or execute is one
// round trip (and each statement, commit and rollback of an interactive
// transaction), a network hop in Worker mode. The bench and the tests use it
// to hold allocation candidates to a fixed number of hops.
import type { Client, Transaction } from '@libsql/client';

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
      if (prop === 'transaction') {
        // An interactive transaction: BEGIN, then one round trip per statement, COMMIT or ROLLBACK.
        return async (...args: unknown[]) => {
          trips += 1;
          const tx = (await fn.apply(target, args)) as Transaction;
          return new Proxy(tx, {
            get(t, p, r) {
              const member: unknown = Reflect.get(t, p, r);
              if (typeof member !== 'function') return member;
              const call = member as (...a: unknown[]) => unknown;
              if (p === 'execute' || p === 'batch' || p === 'executeMultiple' || p === 'commit' || p === 'rollback') {
                return (...a: unknown[]) => {
                  trips += 1;
                  return call.apply(t, a);
                };
              }
              return call.bind(t);
            },
          });
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
