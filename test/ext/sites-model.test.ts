// The escrow model of edge sites (src/ext/sites/model.ts, docs/sites.md), case by case.
import { describe, expect, it } from 'vitest';
import {
  claimAtSite,
  claimOnPrimary,
  deleteAtSite,
  newSite,
  type PrimaryState,
  primaryLoad,
  rebalance,
  rebalanceTarget,
  replay,
  setSlice,
  sliceRemaining,
} from '../../src/ext/sites/model.js';

function primary(): PrimaryState {
  return {
    capacity: new Map([['rp', 10]]),
    limits: new Map([['p', 8]]),
    slices: new Map(),
    allocations: new Map(),
    replayed: new Map(),
  };
}
const slice = { capacity: new Map([['rp', 4]]), limits: new Map([['p', 3]]) };
const limited = () => true;

describe('a site slice', () => {
  it('is held on the primary: no ordinary claim takes it', () => {
    const p = primary();
    expect(setSlice(p, 'a', slice)).toBeNull();
    expect(primaryLoad(p).get('rp')).toBe(4);
    expect(claimOnPrimary(p, { consumer: 'x', project: 'q', amounts: new Map([['rp', 7]]), site: null })).toEqual({
      kind: 'capacity',
      key: 'rp',
    });
    expect(claimOnPrimary(p, { consumer: 'x', project: 'q', amounts: new Map([['rp', 6]]), site: null })).toBeNull();
  });

  it("takes the project's limit slice out of its limit", () => {
    const p = primary();
    p.capacity.set('rp', 100);
    setSlice(p, 'a', slice);
    expect(claimOnPrimary(p, { consumer: 'y', project: 'p', amounts: new Map([['rp', 6]]), site: null })).toEqual({
      kind: 'limit',
      project: 'p',
    });
    expect(claimOnPrimary(p, { consumer: 'y', project: 'p', amounts: new Map([['rp', 5]]), site: null })).toBeNull();
  });

  it('is refused where it does not fit beside what is allocated', () => {
    const p = primary();
    claimOnPrimary(p, { consumer: 'x', project: 'q', amounts: new Map([['rp', 7]]), site: null });
    expect(setSlice(p, 'a', slice)).toEqual({ kind: 'capacity', key: 'rp' });
  });

  it('is spent by a cut-off site within it and no further: slice_exhausted, distinct from capacity', () => {
    const p = primary();
    setSlice(p, 'a', { capacity: new Map([['rp', 4]]), limits: new Map([['p', 8]]) });
    const site = newSite('a', p.slices.get('a')!);
    expect(claimAtSite(site, { consumer: 'c1', project: 'p', amounts: new Map([['rp', 3]]) }, 'k1', limited)).toBeNull();
    expect(claimAtSite(site, { consumer: 'c2', project: 'p', amounts: new Map([['rp', 2]]) }, 'k2', limited)).toEqual({
      kind: 'slice_exhausted',
      key: 'rp',
    });
    expect(claimAtSite(site, { consumer: 'c3', project: 'p', amounts: new Map([['other', 1]]) }, 'k3', limited)).toEqual({
      kind: 'outside_slice',
      key: 'other',
    });
    expect(sliceRemaining(site).capacity.get('rp')).toBe(1);
    expect(deleteAtSite(site, 'c1', 'k4')).toBe(true);
    expect(sliceRemaining(site).capacity.get('rp')).toBe(4);
    expect(site.journal.map((e) => [e.seq, e.op])).toEqual([
      [1, 'claim'],
      [2, 'delete'],
    ]);
  });

  it('a project limit slice bounds a cut-off site per project', () => {
    const p = primary();
    setSlice(p, 'a', slice);
    const site = newSite('a', p.slices.get('a')!);
    expect(claimAtSite(site, { consumer: 'c1', project: 'p', amounts: new Map([['rp', 4]]) }, 'k1', limited)).toEqual({
      kind: 'slice_limit_exhausted',
      project: 'p',
    });
    expect(claimAtSite(site, { consumer: 'c1', project: 'p', amounts: new Map([['rp', 3]]) }, 'k1', limited)).toBeNull();
  });
});

describe('replay on the primary', () => {
  it('turns the journal into claims drawn from the slice, and twice is once', () => {
    const p = primary();
    setSlice(p, 'a', slice);
    const site = newSite('a', p.slices.get('a')!);
    claimAtSite(site, { consumer: 'c1', project: 'p', amounts: new Map([['rp', 2]]) }, 'k1', limited);
    claimAtSite(site, { consumer: 'c2', project: 'p', amounts: new Map([['rp', 1]]) }, 'k2', limited);
    deleteAtSite(site, 'c1', 'k3');
    const first = replay(p, 'a', site.journal.slice(0, 2)); // cut short: the site died
    expect(first).toEqual({ applied: 2, skipped: 0, conflicts: [] });
    const again = replay(p, 'a', site.journal);
    expect(again).toEqual({ applied: 1, skipped: 2, conflicts: [] });
    const snapshot = JSON.stringify([...p.allocations.keys(), [...p.replayed]]);
    expect(replay(p, 'a', site.journal)).toEqual({ applied: 0, skipped: 3, conflicts: [] });
    expect(JSON.stringify([...p.allocations.keys(), [...p.replayed]])).toBe(snapshot);
    expect([...p.allocations.values()]).toEqual([{ consumer: 'c2', project: 'p', amounts: new Map([['rp', 1]]), site: 'a' }]);
    // drawn from the slice: the primary's load is still the slice, not slice + claim
    expect(primaryLoad(p).get('rp')).toBe(4);
  });
});

describe('rebalancing while connected', () => {
  it('asks for more below the low watermark, gives back above the high one, never below what is drawn', () => {
    const p = primary();
    setSlice(p, 'a', { capacity: new Map([['rp', 4]]), limits: new Map() });
    const site = newSite('a', p.slices.get('a')!);
    const marks = { low: 0.25, high: 0.75, step: 2 };
    expect(rebalanceTarget(site, marks)?.capacity.get('rp')).toBe(2); // all 4 left: give 2 back
    claimAtSite(site, { consumer: 'c1', project: 'q', amounts: new Map([['rp', 4]]) }, 'k1', () => false);
    expect(rebalanceTarget(site, marks)?.capacity.get('rp')).toBe(6); // none left: ask for 2 more
    expect(rebalance(p, site, marks)).toBeNull();
    expect(primaryLoad(p).get('rp')).toBe(6);
    expect(sliceRemaining(site).capacity.get('rp')).toBe(2);
    // the primary admits it like any slice: refused where it does not fit
    claimOnPrimary(p, { consumer: 'x', project: 'q', amounts: new Map([['rp', 4]]), site: null });
    claimAtSite(site, { consumer: 'c2', project: 'q', amounts: new Map([['rp', 2]]) }, 'k2', () => false);
    expect(rebalance(p, site, marks)).toEqual({ kind: 'capacity', key: 'rp' });
    expect(site.slice.capacity.get('rp')).toBe(6);
  });
});
