// The real site-mode code (SiteMode, its local file, the journal's replay
// through the write kernel on a real primary database) over random
// histories (docs/sites.md): a primary and three sites whose links are cut
// and restored, claims and deletes at each site and at the primary, links
// cut mid-replay (some after the primary committed an entry, before the site
// heard of it), sites "crashed" (their in-memory state dropped, their local
// file kept) and entries replayed twice, on a virtual clock, with project
// limits on and each site holding a slice of each project's limit. After
// every step: what has been acknowledged (the truth, kept apart from the
// code) is within every provider's capacity, and each project's usage, summed
// over the primary and every site, within its limit; after the final heal the
// primary holds exactly the truth: no acknowledged claim lost, none applied
// twice. The same requests, at the same times and with the same links, go to
// a test double of Kingbird/StarlingX's quota formula (sites-sim.ts), whose
// acknowledged claims overcommit a project's limit.
// SITES_CHECKER_RUNS sets the number of histories, SITES_CHECKER_FROM the first seed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataStore } from '../../src/db/client.js';
import { DomainError } from '../../src/errors.js';
import { HELD_CAPACITY } from '../../src/ext/holds/declaration.js';
import { keyOf } from '../../src/ext/holds/model.js';
import { putOwnedHold } from '../../src/ext/holds/service.js';
import { limitSliceStatements } from '../../src/ext/sites/limit-slices.js';
import { LocalSiteFile } from '../../src/ext/sites/local.js';
import type { SiteSettings } from '../../src/ext/sites/settings.js';
import { SiteCutOff, SiteMode } from '../../src/ext/sites/site-mode.js';
import type { ConsumerClaim } from '../../src/placement/repo/allocations.js';
import { claimAllocations } from '../../src/placement/writes/claims.js';
import { seedProvider } from '../helpers/placement-seed.js';
import { random as seeded } from '../helpers/random.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { Kingbird } from './sites-sim.js';

const RUNS = Number(process.env.SITES_CHECKER_RUNS ?? 15);
/** The first seed (a long run split over processes). */
const FROM = Number(process.env.SITES_CHECKER_FROM ?? 1);
const STEPS = 60;
const CAPACITY = 16;
const SLICE = 6;
/** Every project's limit of VCPU (the registered default), and each site's slice of it per project. */
const LIMIT = 8;
const LIMIT_SLICE = 2;
const PARTITION_AFTER = 1_000;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A site's link to the primary: cut, or cut after `writesLeft` more writes (the last one committed first where `commitThenCut`). */
interface Link {
  cut: boolean;
  writesLeft: number | null;
  commitThenCut: boolean;
}

function linked(store: DataStore, link: Link): DataStore {
  const check = () => {
    if (link.cut) throw new Error('link cut');
  };
  const write = async <T>(send: () => Promise<T>): Promise<T> => {
    check();
    if (link.writesLeft !== null) {
      if (link.writesLeft === 0) {
        link.cut = true;
        link.writesLeft = null;
        if (link.commitThenCut) await send();
        throw new Error('link cut mid-write');
      }
      link.writesLeft -= 1;
    }
    return send();
  };
  return {
    ...store,
    readBatch: async (s) => {
      check();
      return store.readBatch(s);
    },
    writeBatch: (s) => write(() => store.writeBatch(s)),
    writeTx: (fn) => write(() => store.writeTx(fn)),
    close: () => {},
  };
}

let t: TestApp;
let dir = '';
beforeAll(async () => {
  t = await makeTestApp({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: JSON.stringify({ registered: { 'class:VCPU': LIMIT } }) });
  await t.deps.extensions.start(t.deps);
  dir = mkdtempSync(join(tmpdir(), 'site-checker-'));
});
afterAll(() => {
  t.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Site {
  name: string;
  /** The consumers it created: the ones it may replace (another writer's consumer, taken while cut off, is last-replay-wins). */
  created: Set<string>;
  /**
   * The consumers it wrote while cut off, until replayed: the primary leaves them alone here. A
   * consumer written on both sides of a partition is last-replay-wins (docs/sites.md), which an
   * order of acknowledgements cannot say.
   */
  journaled: Set<string>;
  path: string;
  providers: string[];
  link: Link;
  store: DataStore;
  local: LocalSiteFile;
  mode: SiteMode;
}

const totals = {
  histories: 0,
  steps: 0,
  siteGrants: 0,
  sliceRefusals: 0,
  replayed: 0,
  duplicates: 0,
  crashes: 0,
  limitSliceRefusals: 0,
  overCapacity: 0,
  overLimit: 0,
  ledgerOverLimit: 0,
  lost: 0,
  extra: 0,
  kingbirdGrants: 0,
  kingbirdOverLimit: 0,
  kingbirdHistoriesOverLimit: 0,
  kingbirdWorstOvershoot: 0,
};

async function runHistory(seed: number): Promise<void> {
  const r = seeded(seed);
  let clock = 1_700_000_000_000;
  const nowMs = () => clock;
  const writeDeps = { store: t.deps.store, writeHooks: t.deps.writeHooks, metrics: t.deps.metrics };
  const capacity = new Map<string, number>();
  /** The truth: every acknowledged claim not deleted since, by consumer. */
  const truth = new Map<string, Record<string, Record<string, number>>>();
  /** Each acknowledged consumer's project. */
  const projectOf = new Map<string, string>();
  const projects = [`h${seed}-p1`, `h${seed}-p2`];
  const sites: Site[] = [];
  /** What happened, for a failing history's message. */
  const trail: string[] = [];
  const settingsOf = (name: string, path: string): SiteSettings => ({
    site: name,
    dbPath: path,
    partitionAfterMs: PARTITION_AFTER,
    probeMs: 1_000_000_000,
    lowWatermark: 0.25,
    highWatermark: 0.75,
    rebalanceStep: 2,
    limitsOn: true,
  });
  const open = async (s: Omit<Site, 'local' | 'mode'>): Promise<Site> => {
    const local = new LocalSiteFile(s.path, 'NORMAL');
    const mode = new SiteMode({ settings: settingsOf(s.name, s.path), primary: s.store, held: HELD_CAPACITY, local, log: silent, nowMs });
    await mode.start({ ...writeDeps, store: s.store }).catch(() => undefined);
    return { ...s, local, mode };
  };
  for (let i = 0; i < 3; i++) {
    const name = `h${seed}-s${i}`;
    const providers: string[] = [];
    for (let p = 0; p < 2; p++) {
      const { uuid } = await seedProvider(t.deps, { VCPU: { total: CAPACITY } });
      providers.push(uuid);
      capacity.set(uuid, CAPACITY);
    }
    await putOwnedHold(
      { store: t.deps.store, declaration: HELD_CAPACITY, nowMs, newId: () => crypto.randomUUID() },
      `site:${name}`,
      new Map(providers.map((p) => [keyOf(p, 'VCPU'), SLICE])),
      async () => limitSliceStatements(name, new Map(projects.map((p) => [p, new Map([['VCPU', LIMIT_SLICE]])]))),
    );
    const link: Link = { cut: false, writesLeft: null, commitThenCut: false };
    const store = linked(t.deps.store, link);
    sites.push(await open({ name, created: new Set(), journaled: new Set(), path: join(dir, `${name}.db`), providers, link, store }));
  }
  const everyProvider = sites.flatMap((s) => s.providers);
  // The same requests to the Kingbird double, with its own truth.
  const kingbird = new Kingbird({
    sites: sites.map((s) => s.name),
    projects,
    capacity: CAPACITY,
    limit: LIMIT,
    partitionAfter: PARTITION_AFTER,
  });
  const kingbirdTruth = new Map<string, { project: string; amount: number }>();
  let kingbirdOver = 0;
  const amountOf = (claim: ConsumerClaim) =>
    Object.values(claim.allocations).reduce((n, r) => n + Object.values(r).reduce((a, b) => a + b, 0), 0);
  const providerOf = (claim: ConsumerClaim) => Object.keys(claim.allocations)[0]!;
  const kingbirdClaim = (at: string | null, claim: ConsumerClaim) => {
    if (kingbird.claim(at, claim.uuid, claim.projectId!, providerOf(claim), amountOf(claim), clock)) {
      kingbirdTruth.set(claim.uuid, { project: claim.projectId!, amount: amountOf(claim) });
      totals.kingbirdGrants += 1;
    }
  };
  const kingbirdDelete = (at: string | null, consumer: string) => {
    if (kingbird.delete(at, consumer, clock)) kingbirdTruth.delete(consumer);
  };

  const checkTruth = () => {
    const load = new Map<string, number>();
    for (const allocations of truth.values())
      for (const [p, r] of Object.entries(allocations)) load.set(p, (load.get(p) ?? 0) + (r.VCPU ?? 0));
    for (const [p, n] of load) if (n > capacity.get(p)!) totals.overCapacity += 1;
    // Each project's usage, summed over the primary and every site (acknowledged anywhere).
    const byProject = new Map<string, number>();
    for (const [consumer, allocations] of truth) {
      const n = Object.values(allocations).reduce((sum, r) => sum + (r.VCPU ?? 0), 0);
      byProject.set(projectOf.get(consumer)!, (byProject.get(projectOf.get(consumer)!) ?? 0) + n);
    }
    for (const n of byProject.values()) if (n > LIMIT) totals.overLimit += 1;
    const kingbirdByProject = new Map<string, number>();
    for (const { project, amount } of kingbirdTruth.values())
      kingbirdByProject.set(project, (kingbirdByProject.get(project) ?? 0) + amount);
    for (const n of kingbirdByProject.values()) {
      if (n <= LIMIT) continue;
      totals.kingbirdOverLimit += 1;
      kingbirdOver += 1;
      totals.kingbirdWorstOvershoot = Math.max(totals.kingbirdWorstOvershoot, n - LIMIT);
    }
  };
  const claimOf = (provider: string, amount: number): ConsumerClaim => ({
    uuid: crypto.randomUUID(),
    allocations: { [provider]: { VCPU: amount } },
    projectId: r.pick(projects),
    userId: 'u',
  });

  for (let step = 0; step < STEPS; step++) {
    clock += r.below(900);
    const site = r.pick(sites);
    const roll = r.next();
    if (roll < 0.12) {
      site.link.cut = !site.link.cut;
    } else if (roll < 0.45) {
      // A claim at the site: on its slice mostly, sometimes replacing one of its consumers.
      const own = [...site.created].filter((c) => truth.has(c));
      const claim = claimOf(r.chance(0.9) ? r.pick(site.providers) : r.pick(everyProvider), 1 + r.below(3));
      if (own.length > 0 && r.chance(0.2)) claim.uuid = r.pick(own);
      kingbirdClaim(site.name, claim);
      try {
        trail.push(
          `${step} ${site.name} claim ${claim.uuid} ${JSON.stringify(claim.allocations)} partitioned=${site.mode.partitioned} cut=${site.link.cut}`,
        );
        let done = await site.mode.claim([claim], false);
        if (done) {
          totals.siteGrants += 1;
          site.journaled.add(claim.uuid);
        } else done = await site.mode.drawConnected([claim], false, 'allocations');
        if (!done)
          await claimAllocations({ ...writeDeps, store: site.store }, [claim], {
            requireGeneration: false,
            now: new Date(clock).toISOString(),
            endpoint: 'allocations',
          });
        truth.set(claim.uuid, claim.allocations);
        projectOf.set(claim.uuid, claim.projectId!);
        site.created.add(claim.uuid);
        trail.push(`${step} ${claim.uuid} acknowledged`);
      } catch (err) {
        trail.push(`${step} ${claim.uuid} refused ${err instanceof Error ? err.message.slice(0, 80) : ''}`);
        if (err instanceof DomainError && err.code === 'placement.ext.slice_exhausted') {
          totals.sliceRefusals += 1;
          if (/limit slice/.test(err.message)) totals.limitSliceRefusals += 1;
        } else if (!(err instanceof DomainError || err instanceof SiteCutOff || (err instanceof Error && /link cut/.test(err.message))))
          throw err;
      }
    } else if (roll < 0.55) {
      // A delete at the site of one of its consumers.
      const own = [...truth.keys()].filter((c) => Object.keys(truth.get(c)!).some((p) => site.providers.includes(p)));
      if (own.length === 0) continue;
      const consumer = r.pick(own);
      kingbirdDelete(site.name, consumer);
      try {
        trail.push(`${step} ${site.name} delete ${consumer} partitioned=${site.mode.partitioned} cut=${site.link.cut}`);
        if (await site.mode.remove(consumer)) site.journaled.add(consumer);
        else
          await claimAllocations({ ...writeDeps, store: site.store }, [{ uuid: consumer, allocations: {} }], {
            requireGeneration: false,
            now: new Date(clock).toISOString(),
            endpoint: 'allocations',
          });
        truth.delete(consumer);
        trail.push(`${step} ${consumer} deleted`);
      } catch (err) {
        trail.push(`${step} ${consumer} delete refused ${err instanceof Error ? err.message.slice(0, 80) : ''}`);
        if (!(err instanceof SiteCutOff || (err instanceof Error && /link cut/.test(err.message)))) throw err;
      }
    } else if (roll < 0.75) {
      // A claim, or a delete, at the primary (which always reaches its database).
      if (r.chance(0.7)) {
        const claim = claimOf(r.pick(everyProvider), 1 + r.below(4));
        kingbirdClaim(null, claim);
        try {
          await claimAllocations(writeDeps, [claim], {
            requireGeneration: false,
            now: new Date(clock).toISOString(),
            endpoint: 'allocations',
          });
          truth.set(claim.uuid, claim.allocations);
          projectOf.set(claim.uuid, claim.projectId!);
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
        }
      } else if (truth.size > 0) {
        // Only what the primary has (a delete of anything else is its 404).
        const consumer = r.pick([...truth.keys()]);
        if (sites.some((s) => s.journaled.has(consumer))) continue;
        const [held] = await t.deps.store.readBatch([{ sql: 'SELECT 1 FROM allocations WHERE consumer_id = ?', args: [consumer] }]);
        if (held!.rows.length === 0) continue;
        trail.push(`${step} primary deletes ${consumer}`);
        kingbirdDelete(null, consumer);
        await claimAllocations(writeDeps, [{ uuid: consumer, allocations: {} }], {
          requireGeneration: false,
          now: new Date(clock).toISOString(),
          endpoint: 'allocations',
        });
        truth.delete(consumer);
      }
    } else if (roll < 0.8) {
      // A link restored and cut again mid-replay (after the primary committed, sometimes), then the site crashes.
      site.link.cut = false;
      site.link.writesLeft = r.below(3);
      site.link.commitThenCut = r.chance(0.5);
      await site.mode.tick();
      site.mode.stop();
      site.local.close();
      totals.crashes += 1;
      site.link.writesLeft = null;
      sites[sites.indexOf(site)] = await open(site);
    } else if (roll < 0.85) {
      // Entries already applied made pending again: replayed twice.
      const file = createClient({ url: `file:${site.path}` });
      await file.execute("UPDATE site_journal SET replayed_at = NULL, outcome = NULL WHERE outcome = 'applied' AND abs(random()) % 2 = 0");
      file.close();
    }
    // Every site probes: partitioned after PARTITION_AFTER of silence, healed when the link answers.
    for (const s of sites) {
      await s.mode.tick();
      const after = await s.mode.status();
      if (after.link === 'connected' && after.journalDepth === 0) s.journaled.clear();
    }
    for (const s of sites) kingbird.link(s.name, !s.link.cut, clock);
    totals.steps += 1;
    checkTruth();
  }
  // The final heal: every link restored, every journal replayed.
  for (const s of sites) s.link.cut = false;
  for (let round = 0; round < 5; round++) for (const s of sites) await s.mode.tick();
  for (const s of sites) {
    const status = await s.mode.status();
    expect(status.link, `history ${seed}`).toBe('connected');
    expect(status.journalDepth, `history ${seed}`).toBe(0);
    for (const entry of await s.local.journal()) {
      if (entry.outcome === 'duplicate') totals.duplicates += 1;
      else totals.replayed += 1;
      expect(entry.outcome?.startsWith('refused'), `history ${seed}: ${entry.outcome}`).toBe(false);
    }
  }
  // The primary holds exactly the truth.
  const [rows] = await t.deps.store.readBatch([
    {
      sql: `SELECT a.consumer_id AS c, p.uuid AS p, a.used AS n FROM allocations a JOIN resource_providers p ON p.id = a.resource_provider_id
        WHERE p.uuid IN (${everyProvider.map(() => '?').join(', ')})`,
      args: everyProvider,
    },
  ]);
  const onPrimary = new Map<string, Record<string, Record<string, number>>>();
  for (const r of rows!.rows)
    ((onPrimary.get(String(r.c)) ?? onPrimary.set(String(r.c), {}).get(String(r.c))!)[String(r.p)] ??= {}).VCPU = Number(r.n);
  for (const [consumer, allocations] of truth) {
    if (JSON.stringify(onPrimary.get(consumer)) !== JSON.stringify(allocations)) totals.lost += 1;
  }
  for (const consumer of onPrimary.keys())
    if (!truth.has(consumer)) {
      totals.extra += 1;
      if (process.env.SITES_CHECKER_RUNS)
        console.log(
          `history ${seed}: ${consumer} on the primary, not acknowledged`,
          JSON.stringify(trail.filter((l) => l.includes(consumer))),
        );
    }
  // The primary's own count of each project's usage, after every replay: within the limit.
  const [ledger] = await t.deps.store.readBatch([
    {
      sql: `SELECT u.used AS n FROM ext_limit_usage u JOIN projects p ON p.id = u.project_id WHERE p.external_id IN (?, ?)`,
      args: projects,
    },
  ]);
  for (const r of ledger!.rows) if (Number(r.n) > LIMIT) totals.ledgerOverLimit += 1;
  if (kingbirdOver > 0) totals.kingbirdHistoriesOverLimit += 1;
  for (const s of sites) {
    s.mode.stop();
    s.local.close();
  }
  totals.histories += 1;
}

describe('site mode over random histories', () => {
  it(
    `never promises more than capacity or a project's limit, loses nothing and applies nothing twice (${RUNS} histories)`,
    async () => {
      for (let seed = FROM; seed < FROM + RUNS; seed++) {
        await runHistory(seed);
        if (process.env.SITES_CHECKER_RUNS && totals.histories % 25 === 0)
          console.log(`${totals.histories} histories to seed ${seed}`, JSON.stringify(totals));
      }
      if (process.env.SITES_CHECKER_RUNS) console.log(JSON.stringify(totals));
      expect(totals.histories).toBe(RUNS);
      expect(totals.siteGrants).toBeGreaterThan(0);
      expect(totals.crashes).toBeGreaterThan(0);
      expect(totals.overCapacity).toBe(0);
      expect(totals.overLimit).toBe(0);
      expect(totals.ledgerOverLimit).toBe(0);
      expect(totals.lost).toBe(0);
      expect(totals.extra).toBe(0);
      // Cut-off sites refused claims beyond a project's slice; the Kingbird double, asked the same, overcommitted
      // (the default histories, seeds 1 to 15, all show both; a handful of other seeds may show neither).
      if (RUNS >= 15) {
        expect(totals.limitSliceRefusals).toBeGreaterThan(0);
        expect(totals.kingbirdOverLimit).toBeGreaterThan(0);
      }
      expect(totals.kingbirdGrants).toBeGreaterThan(0);
    },
    RUNS * 5_000,
  );
});
