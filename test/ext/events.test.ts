// GET /ext/events (docs/events.md): the stream an operator's reaper reads.
// Each committed preemption is one `preemption.created`, a refused one none;
// its victims released, its nomination drawn or lapsed are reported by
// trigger in the write that does it, whoever writes; a long poll answers as
// soon as an event comes; the stream survives a restart and the retention.
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventStatement, sweepOldEvents } from '../../src/ext/events/events.js';
import { events as eventsExtension } from '../../src/ext/events/extension.js';
import { sweepExpiredLeases } from '../../src/ext/allocation-ends.js';
import { sweepEndedHolds } from '../../src/ext/holds/sweep.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { PREEMPTOR_PROJECT, preemptionBody, preemptionHelpers } from './helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

interface Event {
  seq: number;
  kind: string;
  at: string;
  body: Record<string, unknown>;
}
interface Page {
  events: Event[];
  next_after: number;
  oldest_seq: number | null;
  missed: boolean;
}

async function events(query = ''): Promise<Page> {
  const res = await t.call('GET', `/ext/events${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Page;
}

const { claimAs, victimOn } = preemptionHelpers(() => t);

interface Preemption {
  id: string;
  hold_uuid: string;
  victims_leased_until: string;
  nomination_until: string;
}

async function preempt(host: string, victims: string[], vcpu: number, preemptor?: string): Promise<Preemption> {
  const res = await t.call('POST', '/ext/preemptions', { body: preemptionBody(host, victims, vcpu, 10, preemptor) });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await res.json()) as Preemption;
}

describe('preemption events', () => {
  it('one preemption.created per committed preemption, with its preemptor, victims and grace; none for a refused one', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 9 } } });
    const a = await victimOn(host, 4, 1);
    const b = await victimOn(host, 4, 2);
    const none = await victimOn(host, 1, null);
    // Refused (not preemptible, then does not fit): nothing reported.
    expect((await t.call('POST', '/ext/preemptions', { body: preemptionBody(host, [none], 1) })).status).toBe(400);
    expect((await t.call('POST', '/ext/preemptions', { body: preemptionBody(host, [a], 8) })).status).toBe(400);
    expect((await events()).events).toEqual([]);
    const preemptor = crypto.randomUUID();
    const made = await preempt(host, [a, b], 7, preemptor);
    const page = await events('?kind=preemption');
    expect(page.events).toHaveLength(1);
    const [created] = page.events;
    expect(created!.kind).toBe('preemption.created');
    expect(created!.body).toMatchObject({
      preemption_id: made.id,
      preemptor: { consumer_uuid: preemptor, project_id: PREEMPTOR_PROJECT, priority: 10 },
      hold_uuid: made.hold_uuid,
      grace_seconds: 30,
      victims_leased_until: made.victims_leased_until,
      nomination_until: made.nomination_until,
    });
    const victims = created!.body.victims as { consumer_uuid: string; priority: number }[];
    expect(victims.map((v) => [v.consumer_uuid, v.priority]).sort()).toEqual(
      [
        [a, 1],
        [b, 2],
      ].sort(),
    );
    expect(page.next_after).toBe(created!.seq);
    // After it: nothing more.
    expect((await events(`?after=${page.next_after}`)).events).toEqual([]);
  });

  it('16 concurrent preemptions over the same victims: one event', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const victims = [await victimOn(host, 4, 1), await victimOn(host, 4, 1)];
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => t.call('POST', '/ext/preemptions', { body: preemptionBody(host, victims, 8) })),
    );
    const won = answers.filter((r) => r.status === 201);
    expect(won).toHaveLength(1);
    const { id } = (await won[0]!.json()) as Preemption;
    const created = (await events('?kind=preemption.created')).events;
    expect(created.map((e) => e.body.preemption_id)).toEqual([id]);
  });

  it('reports each victim released (by its owner or by the lease sweep) and the nomination drawn, once each, in order', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const a = await victimOn(host, 4, 1);
    const b = await victimOn(host, 4, 1);
    const preemptor = crypto.randomUUID();
    const made = await preempt(host, [a, b], 8, preemptor);
    // Deleting a consumer that is no victim reports nothing.
    const other = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const bystander = await victimOn(other, 4, 1);
    expect((await t.call('DELETE', `/allocations/${bystander}`)).status).toBe(204);
    // The owner deletes a (as Nova does for a deleted server); b is left to the lease sweep.
    expect((await t.call('DELETE', `/allocations/${a}`)).status).toBe(204);
    const swept = await sweepExpiredLeases(t.deps.store, Date.parse(made.victims_leased_until));
    expect(swept.released).toEqual([b]);
    // The preemptor claims with its nomination.
    const claimed = await claimAs(preemptor, { [host]: { resources: { VCPU: 8 } } }, PREEMPTOR_PROJECT, `?ext_hold=${made.hold_uuid}`);
    expect(claimed.status, await claimed.clone().text()).toBe(204);
    // The hold's window ends: drawn from, so it did not lapse.
    expect((await sweepEndedHolds(t.deps.store, Date.parse(made.nomination_until))).ended).toEqual([made.hold_uuid]);
    const page = await events('?kind=preemption');
    expect(page.events.map((e) => [e.kind, e.body])).toEqual([
      ['preemption.created', expect.objectContaining({ preemption_id: made.id })],
      ['preemption.victim_released', { preemption_id: made.id, consumer_uuid: a }],
      ['preemption.victim_released', { preemption_id: made.id, consumer_uuid: b }],
      ['preemption.nomination_drawn', { preemption_id: made.id, hold_uuid: made.hold_uuid, consumer_uuid: preemptor }],
    ]);
    const seqs = page.events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    for (const e of page.events) expect(Date.parse(e.at)).not.toBeNaN();
  });

  it('reports a nomination that ends undrawn as lapsed (released by the operator, or its window over)', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const [x, y] = [await victimOn(host, 4, 1), await victimOn(host, 4, 1)];
    const first = await preempt(host, [x], 4);
    const second = await preempt(host, [y], 4);
    expect((await t.call('DELETE', `/ext/holds/${first.hold_uuid}`)).status).toBe(204);
    await sweepEndedHolds(t.deps.store, Date.parse(second.nomination_until));
    const lapsed = (await events('?kind=preemption.nomination_lapsed')).events.map((e) => e.body);
    expect(lapsed).toEqual([
      { preemption_id: first.id, hold_uuid: first.hold_uuid },
      { preemption_id: second.id, hold_uuid: second.hold_uuid },
    ]);
  });

  it('a write that does not commit reports nothing: a victim delete rolled back with its batch', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const victim = await victimOn(host, 4, 1);
    await preempt(host, [victim], 4);
    const before = (await events()).events.length;
    // The consumer's delete (its trigger writes the event), then a failing statement: all rolled back.
    await expect(
      t.deps.store.writeBatch([
        { sql: 'DELETE FROM allocations WHERE consumer_id = ?', args: [victim] },
        { sql: 'DELETE FROM consumers WHERE uuid = ?', args: [victim] },
        { sql: "SELECT json('not json')", args: [] },
      ]),
    ).rejects.toThrow();
    expect((await events()).events).toHaveLength(before);
    expect((await t.call('GET', `/allocations/${victim}`)).status).toBe(200);
  });
});

describe('GET /ext/events', () => {
  const append = (kind: string, body: Record<string, unknown>, atMs = Date.now()) =>
    t.deps.store.writeBatch([eventStatement(kind, body, atMs)]);

  it('filters by kind or prefix, pages with limit, and next_after skips what did not match', async () => {
    await append('preemption.created', { n: 1 });
    await append('other.thing', { n: 2 });
    await append('preemption.victim_released', { n: 3 });
    await append('preemptionish.x', { n: 4 });
    // A prefix is matched as written: `_` is no wildcard.
    await append('a_b.c', { n: 5 });
    await append('axb.c', { n: 6 });
    const all = await events();
    expect(all.events.map((e) => e.body.n)).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await events('?kind=a_b')).events.map((e) => e.body.n)).toEqual([5]);
    const seq = all.events.map((e) => e.seq);
    const preemption = await events('?kind=preemption');
    expect(preemption.events.map((e) => e.body.n)).toEqual([1, 3]);
    expect(preemption.next_after).toBe(seq[5]);
    expect((await events('?kind=other,preemption.created')).events.map((e) => e.body.n)).toEqual([1, 2]);
    const first = await events('?limit=2');
    expect(first.events.map((e) => e.body.n)).toEqual([1, 2]);
    expect(first.next_after).toBe(seq[1]);
    expect((await events(`?after=${first.next_after}&limit=2`)).events.map((e) => e.body.n)).toEqual([3, 4]);
    expect((await events(`?after=${seq[3]}`)).events.map((e) => e.body.n)).toEqual([5, 6]);
  });

  it('a long poll waits for the first event and answers when one comes', { timeout: 40_000 }, async () => {
    const { next_after } = await events();
    let answered = false;
    // wait=60 is longer than this test may take: it passes only if the event wakes the poll.
    const polled = t.call('GET', `/ext/events?after=${next_after}&kind=preemption&wait=60`).then(async (res) => {
      answered = true;
      return { status: res.status, page: (await res.json()) as Page };
    });
    await append('other.thing', {});
    expect(answered).toBe(false);
    const host = await provider(t, { inventory: { VCPU: { total: 4 } } });
    const made = await preempt(host, [await victimOn(host, 4, 1)], 4);
    const { status, page } = await polled;
    expect(status).toBe(200);
    expect(page.events.map((e) => [e.kind, e.body.preemption_id])).toEqual([['preemption.created', made.id]]);
  });

  it('wait=0 answers at once with nothing', async () => {
    expect(await events('?wait=0')).toEqual({ events: [], next_after: 0, oldest_seq: null, missed: false });
  });

  it('refuses a bad query with 400, and is admin only', async () => {
    for (const q of ['?wait=61', '?after=x', '?limit=0', '?kind=Bad Kind', '?since=1']) {
      const res = await t.call('GET', `/ext/events${q}`);
      expect(res.status, q).toBe(400);
      expect((await errorOf(res)).detail).toContain('Invalid query string parameters');
    }
    const res = await t.call('GET', '/ext/events', { headers: { 'x-roles': 'member', 'x-auth-token': 'user' } });
    expect(res.status).toBe(403);
  });

  it('the retention sweep removes old events only; a reader behind them is told it missed some; sequences never repeat', async () => {
    const now = Date.now();
    await append('test.old', { n: 1 }, now - 10_000);
    await append('test.old', { n: 2 }, now - 10_000);
    await append('test.new', { n: 3 }, now);
    expect(await sweepOldEvents(t.deps.store, now, 5_000)).toBe(2);
    const page = await events();
    expect(page.events.map((e) => e.body.n)).toEqual([3]);
    expect(page.missed).toBe(true);
    expect(page.oldest_seq).toBe(page.events[0]!.seq);
    expect((await events(`?after=${page.oldest_seq! - 1}`)).missed).toBe(false);
    // Everything swept: a new event still gets a higher sequence than any given before.
    expect(await sweepOldEvents(t.deps.store, now + 10_000, 5_000)).toBe(1);
    const empty = await events(`?after=${page.next_after}`);
    expect(empty).toEqual({ events: [], next_after: page.next_after, oldest_seq: null, missed: false });
    await append('test.after', { n: 4 });
    const [after] = (await events()).events;
    expect(after!.seq).toBeGreaterThan(page.next_after);
  });

  it('the sweep the extension registers keeps PLACEMENT_EXT_EVENTS_RETENTION_HOURS', async () => {
    const app = await makeTestApp({ PLACEMENT_EXT_EVENTS_RETENTION_HOURS: '2' });
    try {
      const now = Date.now();
      await app.deps.store.writeBatch([
        eventStatement('test.old', {}, now - 3 * 3_600_000),
        eventStatement('test.new', {}, now - 3_600_000),
      ]);
      const [sweep] = eventsExtension.jobs!.sweeps;
      expect(await sweep!({ ...app.deps, clock: () => new Date(now) })).toBe(1);
      const page = (await (await app.call('GET', '/ext/events')).json()) as Page;
      expect(page.events.map((e) => e.kind)).toEqual(['test.new']);
    } finally {
      app.close();
    }
  });

  it('survives a restart: the events, and the next sequence after them', async () => {
    await append('test.before', { n: 1 });
    const before = await events();
    // Stop the app (not its folder) and start another on the same database.
    t.deps.store.close();
    const again = await makeTestApp({ PLACEMENT_DB_URL: t.dbUrl });
    try {
      const read = await again.call('GET', '/ext/events');
      expect(((await read.json()) as Page).events).toEqual(before.events);
      await again.deps.store.writeBatch([eventStatement('test.after', { n: 2 }, Date.now())]);
      const page = (await (await again.call('GET', `/ext/events?after=${before.next_after}`)).json()) as Page;
      expect(page.events.map((e) => e.body.n)).toEqual([2]);
      expect(page.events[0]!.seq).toBeGreaterThan(before.next_after);
    } finally {
      again.deps.store.close();
      rmSync(again.dir, { recursive: true, force: true });
      // t.close() closes the store again: a fresh app for afterEach.
      t = await makeTestApp();
    }
  });
});
