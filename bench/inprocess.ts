// npm run bench starts this after its HTTP run, against the database it just
// loaded, under a small V8 heap cap (--max-old-space-size): it runs the
// bench's candidate queries through findAllocationCandidates directly and
// prints, per query, the round trips made to libSQL (each one is a network
// hop in Worker mode). Finishing at all under the cap shows an answer of
// that size fits in Worker-sized memory (128 MB).
//   node --max-old-space-size=32 --import tsx bench/inprocess.ts --db file:/path/placement.db
import { createClient } from '@libsql/client';
import { parseArgs } from 'node:util';
import { clientReader } from '../src/db/client.js';
import { countRoundTrips } from '../src/db/round-trips.js';
import { Microversion } from '../src/http/microversion.js';
import { findAllocationCandidates } from '../src/placement/candidates/index.js';
import { parseCandidateQueryString } from '../src/placement/candidates/parse.js';
import { NAMED_QUERIES } from './queries.js';

const { values: args } = parseArgs({ options: { db: { type: 'string' }, only: { type: 'string' } } });
if (!args.db) throw new Error('--db file:... is required');

const raw = createClient({ url: args.db });
const { client, count, reset } = countRoundTrips(raw);

const mv = Microversion.parse('1.36')!;
const results: Record<string, { round_trips: number; candidates: number; ms_median: number }> = {};
for (const [name, query] of NAMED_QUERIES.filter(([n]) => !args.only || n === args.only)) {
  const times: number[] = [];
  let trips = 0;
  let candidates = 0;
  for (let i = 0; i < 11; i += 1) {
    reset();
    const started = performance.now();
    const body = await findAllocationCandidates(clientReader(client), parseCandidateQueryString(query, mv), mv, {
      randomize: false,
      maxCandidates: 0,
      treeCacheProviders: 0, // this harness counts the SQL engine's round trips
      now: Date.now(),
    });
    const text = JSON.stringify(body);
    times.push(performance.now() - started);
    trips = count();
    candidates = body.allocation_requests.length;
    if (!text) throw new Error('empty answer');
  }
  times.sort((x, y) => x - y);
  results[name] = { round_trips: trips, candidates, ms_median: Math.round(times[5]! * 10) / 10 };
}
console.log(JSON.stringify(results));
raw.close();
