// npx tsx bench/holds-availability.ts [providers]: what GET /ext/holds/availability
// costs where the answer is far: N flat providers of 16 VCPU, each 12 used by a
// lease ending between 300 and 500 minutes from now, half of them with a hold of
// 8 over a 30-minute window starting in the first 300 minutes; the query
// resources=VCPU:10 for an hour first fits at minute 300. Pure: the calendar
// and the engine over the model, no database (the read is one batch).
import { earliestCandidate } from '../src/ext/holds/availability.js';
import type { CloudCalendar } from '../src/ext/holds/calendar-repo.js';
import { calendarOf, pairKey, startsFrom } from '../src/ext/holds/calendar.js';
import type { Allocation, Hold } from '../src/ext/holds/model.js';
import { Microversion } from '../src/microversion.js';
import { CloudModel, type ProviderSpec } from '../src/placement/candidates/cloud-model.js';
import { parseCandidateQueryString } from '../src/placement/candidates/parse.js';

const N = Number(process.argv[2] ?? 10_000);
const MIN = 60_000;
const specs: ProviderSpec[] = [];
const allocations: Allocation[] = [];
const holds: Hold[] = [];
for (let i = 1; i <= N; i += 1) {
  const inventory = { classId: 1, className: 'VCPU', total: 16, reserved: 0, minUnit: 1, maxUnit: 16, stepSize: 1, allocationRatio: 1 };
  specs.push({
    id: i,
    uuid: `7c000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    parentId: null,
    rootId: i,
    traits: [],
    aggregates: [],
    inventories: [inventory],
  });
  allocations.push({ consumer: `c${i}`, project: 'p', key: pairKey(i, 1), amount: 12, endsAtMs: (300 + (i % 200)) * MIN, holdId: null });
}
for (let j = 0; j < N / 2; j += 1) {
  const startMs = (j % 300) * MIN;
  holds.push({
    id: `h${j}`,
    project: 'H',
    startMs,
    endMs: startMs + 30 * MIN,
    amounts: new Map([[pairKey(j * 2 + 1, 1), 8]]),
    endAction: 'release',
  });
}
const mv = Microversion.parse('1.39')!;
const built = performance.now();
const cloud: CloudCalendar = {
  model: CloudModel.of(specs),
  lookups: {
    classIdByName: new Map([['VCPU', 1]]),
    traitIdByName: new Map(),
    aggregateIdByUuid: new Map(),
    rootIdByProviderUuid: new Map(),
  },
  calendar: calendarOf(allocations, holds, 0),
  hookResults: new Map(),
};
const searched = performance.now();
const answer = await earliestCandidate(
  cloud,
  parseCandidateQueryString('resources=VCPU:10', mv),
  mv,
  { randomize: false, maxCandidates: 0, treeCacheProviders: 0, now: 0 },
  { fromMs: 0, durationMs: 60 * MIN },
);
const done = performance.now();
console.log(
  `${N} providers, ${startsFrom(cloud.calendar, 0).length} candidate starts: calendar ${(searched - built).toFixed(0)} ms, ` +
    `search ${(done - searched).toFixed(0)} ms, start at minute ${((answer?.startMs ?? Number.NaN) / MIN).toFixed(3)}`,
);
