// A cut-off site decides its claims from a cache of its local file (local.ts):
// differential test of the cache against the file itself, over thousands of
// random writes (claims and deletes journaled, refreshes from the primary,
// slices shrunk, consumers remembered, entries marked replayed), with reads
// beside them: after every one, the snapshot a claim would decide from
// equals what the file holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalSiteFile, type SiteConsumer, type SiteView } from '../../src/ext/sites/local.js';
import { random as seeded } from '../helpers/random.js';

const dir = mkdtempSync(join(tmpdir(), 'site-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OPS = Number(process.env.SITES_CACHE_OPS ?? 3000);

describe("a site's local file and its cache", () => {
  it(`agree after every one of ${OPS} random writes`, async () => {
    const r = seeded(45);
    const file = new LocalSiteFile(join(dir, 'site.db'), 'NORMAL');
    const providers = ['p-1', 'p-2', 'p-3'];
    const uuids = Array.from({ length: 12 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const consumer = (uuid: string): SiteConsumer => ({
      uuid,
      project: `project-${r.below(3)}`,
      user: 'u',
      consumerType: r.chance(0.5) ? 'INSTANCE' : null,
      generation: 1 + r.below(5),
      allocations: { [providers[r.below(3)]!]: { VCPU: 1 + r.below(4) } },
    });
    const view = (): SiteView => ({
      holdUuid: r.chance(0.9) ? `hold-${r.below(3)}` : null,
      holdGeneration: r.below(9),
      slice: providers.map((provider) => ({ provider, resourceClass: 'VCPU', amount: r.below(20), minUnit: 1, maxUnit: 8, stepSize: 1 })),
      consumers: uuids.filter(() => r.chance(0.3)).map(consumer),
      limitSlices: r.chance(0.5) ? [{ project: 'project-0', resourceClass: 'VCPU', amount: r.below(10) }] : [],
      limited: r.chance(0.5) ? [{ project: '', resourceClass: 'VCPU' }] : [],
    });
    let kinds = 0;
    for (let op = 0; op < OPS; op++) {
      const roll = r.next();
      // A read beside the write (a claim's, or a probe's status), started first. The local client runs them in
      // order, so this never catches a stale read kept (a mutant caching every read passes); the version guard is for a client that does not.
      const racing = r.chance(0.5) ? file.snapshot() : undefined;
      const writes: Promise<unknown>[] = [];
      if (roll < 0.45) {
        const claimed = uuids.filter(() => r.chance(0.2)).map(consumer);
        const removed = uuids.filter(() => r.chance(0.1)).filter((u) => !claimed.some((c) => c.uuid === u));
        writes.push(file.record('claim', [], claimed, removed, `k-${op}`, op));
      } else if (roll < 0.6) writes.push(file.refresh(view(), op));
      else if (roll < 0.7)
        writes.push(
          file.setSlice(
            providers.map((provider) => ({ provider, resourceClass: 'VCPU', amount: r.below(20), minUnit: 1, maxUnit: 8, stepSize: 1 })),
          ),
        );
      else if (roll < 0.8) writes.push(file.remember(uuids.filter(() => r.chance(0.2)).map(consumer)));
      else if (roll < 0.9) {
        const pending = await file.pending();
        writes.push(
          file.replayed(
            pending.filter(() => r.chance(0.5)).map((e) => ({ seq: e.seq, outcome: 'applied' })),
            op,
          ),
        );
      }
      await Promise.all([...writes, racing]);
      // Compared every other write, so the cache is often empty when the next racing read starts.
      if (r.chance(0.5)) expect(await file.snapshot(), `after op ${op}`).toEqual(await file.fromFile());
      kinds += writes.length;
      expect(await file.snapshot(), `after op ${op}`).toEqual(await file.fromFile());
    }
    expect(kinds).toBeGreaterThan(OPS / 2);
    expect(await file.snapshot()).toEqual(await file.fromFile());
    file.close();
  }, 120_000);
});
