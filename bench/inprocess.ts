// npm run bench starts this after its HTTP run, against the database it just
// loaded, under a small V8 heap cap (--max-old-space-size): it runs the
// bench's candidate queries through findAllocationCandidates directly and
// prints, per query, the round trips made to libSQL (each one is a network
// hop in Worker mode). Finishing at all under the cap shows an answer of
// that size fits in Worker-sized memory (128 MB).
//   node --max-old-space-size=32 --import tsx bench/inprocess.ts --db file:/path/placement.db
import { createClient, type Client } from '@libsql/client';
import { parseArgs } from 'node:util';
import { Microversion } from '../src/http/microversion.js';
import { findAllocationCandidates } from '../src/placement/candidates/index.js';
import { parseCandidateRequest } from '../src/placement/candidates/parse.js';
import { NAMED_QUERIES } from './queries.js';

const { values: args } = parseArgs({ options: { db: { type: 'string' }, only: { type: 'string' } } });
if (!args.db) throw new Error('--db file:... is required');

const raw = createClient({ url: args.db });
let roundTrips = 0;
// Each batch/execute is one request to the database: at the edge, one hop.
const client: Client = new Proxy(raw, {
  get(target, prop, receiver) {
    const value: unknown = Reflect.get(target, prop, receiver);
    if (typeof value !== 'function') return value;
    if (prop === 'batch' || prop === 'execute') {
      return (...callArgs: unknown[]) => {
        roundTrips += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, callArgs);
      };
    }
    return (value as (...a: unknown[]) => unknown).bind(target);
  },
});

const mv = Microversion.parse('1.36')!;
const results: Record<string, { round_trips: number; candidates: number; ms_median: number }> = {};
for (const [name, query] of NAMED_QUERIES.filter(([n]) => !args.only || n === args.only)) {
  const params: Record<string, string[]> = {};
  for (const [key, value] of new URLSearchParams(query)) (params[key] ??= []).push(value);
  const times: number[] = [];
  let trips = 0;
  let candidates = 0;
  for (let i = 0; i < 11; i += 1) {
    const before = roundTrips;
    const started = performance.now();
    const body = await findAllocationCandidates(client, parseCandidateRequest(params, mv), mv, { randomize: false, maxCandidates: 0 });
    const text = JSON.stringify(body);
    times.push(performance.now() - started);
    trips = roundTrips - before;
    candidates = body.allocation_requests.length;
    if (!text) throw new Error('empty answer');
  }
  times.sort((x, y) => x - y);
  results[name] = { round_trips: trips, candidates, ms_median: Math.round(times[5]! * 10) / 10 };
}
console.log(JSON.stringify(results));
raw.close();
