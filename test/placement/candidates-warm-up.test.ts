// The engine's warm-up (src/placement/candidates/warm-up.ts): it runs the real
// engine over a made-up model, every query of it answered with candidates, and
// does nothing a Worker forbids in its global scope (no timers, random values
// or I/O), which here would throw.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { candidateEngine } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { warmUpCandidates } from '../../src/placement/candidates/warm-up.js';

const forbidden = (what: string) => () => {
  throw new Error(`Disallowed operation called within global scope: ${what}`);
};

describe('the candidates warm-up', () => {
  afterEach(() => vi.restoreAllMocks());

  it('answers each of its queries with candidates, from the engine itself', async () => {
    // With the hooks an app installs (taints, counters), as the entries call it.
    const done = await warmUpCandidates(2, candidateEngine(loadConfig({}), undefined).hooks, 50, 10);
    expect(done.answers).toBe(18);
    // No answer is empty: the search and presentation really ran on each query.
    expect(done.smallest).toBeGreaterThan(500);
    expect(done.bytes).toBeGreaterThan(18 * 500);
  });

  it('uses no timer, random value, fetch or uuid (what workerd refuses at module evaluation)', async () => {
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(forbidden('setTimeout') as never);
    vi.spyOn(globalThis, 'setInterval').mockImplementation(forbidden('setInterval') as never);
    vi.spyOn(Math, 'random').mockImplementation(forbidden('Math.random'));
    vi.spyOn(crypto, 'randomUUID').mockImplementation(forbidden('crypto.randomUUID'));
    vi.spyOn(crypto, 'getRandomValues').mockImplementation(forbidden('crypto.getRandomValues'));
    vi.spyOn(globalThis, 'fetch').mockImplementation(forbidden('fetch'));
    expect((await warmUpCandidates(1, [], 20, 4)).answers).toBe(9);
  });
});
