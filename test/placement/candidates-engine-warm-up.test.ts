// The Worker's warm-up at module evaluation (src/placement/candidates/engine-warm-up.ts):
// the real engine over a made-up cloud, no database. Its reader must answer
// every statement the engine's research batch sends, in the shapes the real
// statements return, or the warm-up would stop at its first request (and
// only cost the isolate's start): these answers show it runs the engine
// through on both perfload shapes, full and limited.
import { describe, expect, it } from 'vitest';
import { Microversion } from '../../src/microversion.js';
import { syntheticReader, WARM_UP_QUERIES, warmUpEngine } from '../../src/placement/candidates/engine-warm-up.js';
import { findAllocationCandidates } from '../../src/placement/candidates/index.js';
import { parseCandidateQueryString } from '../../src/placement/candidates/parse.js';

const LATEST = Microversion.parse('1.39')!;
const OPTIONS = { randomize: false, maxCandidates: 0, treeCacheProviders: 20_000, now: 0 };

describe('engine warm-up without a database', () => {
  it('answers the flat, nested and limited perfload queries from its made-up cloud', async () => {
    const reader = syntheticReader(30, 5);
    const [flat, nested, limited] = await Promise.all(
      WARM_UP_QUERIES.map((query) => findAllocationCandidates(reader, parseCandidateQueryString(query, LATEST), LATEST, OPTIONS)),
    );
    expect(flat!.allocation_requests).toHaveLength(30);
    // Each tree: numa1 (CUSTOM_FOO) with one of its two FPGAs.
    expect(nested!.allocation_requests).toHaveLength(10);
    expect(limited!.allocation_requests).toHaveLength(10);
    const summary = Object.values(flat!.provider_summaries)[0] as { resources: Record<string, { capacity: number; used: number }> };
    expect(summary.resources.VCPU).toEqual({ capacity: 32, used: 1 });
  });

  it('runs every round through', async () => {
    expect(await warmUpEngine(2, 20, 4)).toMatchObject({ answers: 2 * WARM_UP_QUERIES.length });
  });

  it('refuses a statement it has no answer for rather than answering wrongly', async () => {
    await expect(syntheticReader(1, 1).readBatch(['SELECT 1'])).rejects.toThrow(/no synthetic answer/);
  });
});

describe("the Worker's app warm-up (src/entry/worker-warm-up.ts)", () => {
  it('runs the request path through without reaching a database: GET / and a refused candidates query', async () => {
    const { warmUpApp } = await import('../../src/entry/worker-warm-up.js');
    expect(await warmUpApp()).toEqual([200, 400]);
  });
});
