// A Node-mode start, observed over HTTP on a real process: it listens before
// its database is prepared, answers `GET /` and `/healthz` at once, says 503
// on /readyz until it is warm (naming the database while it does not answer),
// holds the requests that need the database (for as long as a write may wait,
// PLACEMENT_DB_WRITE_TIMEOUT_MS) and answers them once it is; then /readyz
// says ready. The preparation is kept waiting the way it can be in the field:
// the service's libSQL server (a real sqld, new database) does not answer yet
// (the link to it is held) while the service starts.
//
// (An embedded file whose write lock another process holds cannot show it:
// libSQL's embedded driver waits for a lock inside the call, so the whole
// process waits with it, for up to its 10 s busy timeout.)
import { afterEach, describe, expect, it } from 'vitest';
import { type PausableLink, startPausableLink } from '../helpers/pausable-link.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING, type SqldServer, startSqld } from '../helpers/sqld.js';
import { ADMIN_HEADERS, type Running, spawnServer, until, stopServer } from './processes.js';

let sqld: SqldServer | undefined;
let link: PausableLink | undefined;
let server: Running | undefined;

afterEach(async () => {
  await stopServer(server);
  server = undefined;
  link?.stop();
  sqld?.stop();
});

describeWithPart(SQLD_MISSING, 'a start observed over HTTP', () => {
  describe.each([1, 2])('PLACEMENT_WORKERS=%i: a start while the database cannot be prepared yet', (workers) => {
    it('listens, answers / and /healthz, names the database it waits for, holds database requests, then serves them and is ready', async () => {
      sqld = await startSqld();
      link = await startPausableLink(sqld.url);
      link.hold();
      server = await spawnServer({ PLACEMENT_DB_URL: link.url, PLACEMENT_WORKERS: String(workers) });
      const get = (path: string) => fetch(`${server!.url}${path}`, { headers: ADMIN_HEADERS });

      const root = await get('/');
      expect(root.status).toBe(200);
      expect(((await root.json()) as { versions: unknown[] }).versions).toHaveLength(1);
      expect((await get('/healthz')).status).toBe(200);
      // Not "warming" for good: the database it waits for does not answer, and /readyz names it, within a second.
      const probedAt = Date.now();
      const warming = await get('/readyz');
      expect(Date.now() - probedAt).toBeLessThan(1_000);
      expect(warming.status).toBe(503);
      expect(await warming.json()).toEqual({
        status: 'not ready',
        reason: expect.stringMatching(
          new RegExp(
            `^the database does not answer: PLACEMENT_DB_URL \\(${link.url}\\) gave no answer within \\d+ ms; it has not answered since this process started$`,
          ),
        ),
      });

      // Sent now, answered once the database is prepared: not refused, not failed.
      let answeredAt = 0;
      const held = get('/resource_providers').then(async (res) => {
        answeredAt = Date.now();
        return { status: res.status, body: await res.json() };
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(answeredAt).toBe(0);
      const releasedAt = Date.now();
      link.resume();

      expect(await held).toEqual({ status: 200, body: { resource_providers: [] } });
      expect(answeredAt).toBeGreaterThanOrEqual(releasedAt);
      expect(await until(async () => (await get('/readyz')).status === 200, 20_000)).toBe(true);
      // Told once, also by a cluster's primary once every server process has warmed up. Only then
      // does every process answer ready: one ready answer came from one process, and on a loaded
      // machine the other can still be warming (a second probe found it so).
      expect(await until(() => server!.log().includes('"msg":"placement-edge ready"'), 20_000)).toBe(true);
      for (let i = 0; i < 2 * workers; i += 1) expect(await (await get('/readyz')).json()).toEqual({ status: 'ready' });
      // The start told in order.
      const log = server.log();
      expect(log.indexOf('"msg":"placement-edge listening"')).toBeGreaterThan(-1);
      expect(server.log().indexOf('"msg":"placement-edge ready"')).toBeGreaterThan(
        server.log().indexOf('"msg":"placement-edge listening"'),
      );
    }, 90_000);
  });
});

describeWithPart(SQLD_MISSING, 'a start against a database that does not answer for longer than a request waits', () => {
  it('serves / and /readyz (503 naming PLACEMENT_DB_URL), answers 503 to the rest within the write deadline, and goes on once it answers', async () => {
    sqld = await startSqld();
    link = await startPausableLink(sqld.url);
    link.hold();
    const WRITE_MS = 1_000;
    server = await spawnServer({
      PLACEMENT_DB_URL: link.url,
      PLACEMENT_WORKERS: '1',
      PLACEMENT_DB_READ_TIMEOUT_MS: '500',
      PLACEMENT_DB_WRITE_TIMEOUT_MS: String(WRITE_MS),
    });
    const get = (path: string) => fetch(`${server!.url}${path}`, { headers: ADMIN_HEADERS });
    try {
      expect((await get('/')).status).toBe(200);
      const started = Date.now();
      const refused = await get('/resource_providers');
      const waited = Date.now() - started;
      expect(refused.status).toBe(503);
      const { errors } = (await refused.json()) as { errors: { detail: string }[] };
      expect(errors[0]!.detail).toContain(
        `The database does not answer: PLACEMENT_DB_URL (${link.url}) has not answered since this process started`,
      );
      expect(waited).toBeGreaterThanOrEqual(WRITE_MS - 50);
      expect(waited).toBeLessThan(WRITE_MS + 2_000);
      const ready = await get('/readyz');
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reason: string }).reason).toContain(`PLACEMENT_DB_URL (${link.url}) gave no answer`);
      // Still there: it waits for the database, told once.
      expect(server.child.exitCode).toBeNull();
      expect(await until(() => server!.log().includes('the database does not answer: the start waits for it'), 20_000)).toBe(true);
    } finally {
      link.resume();
    }
    expect(await until(async () => (await get('/readyz')).status === 200, 30_000)).toBe(true);
    expect((await get('/resource_providers')).status).toBe(200);
    expect(server.log()).toContain('the database answers again: the start goes on');
    expect(server.log().match(/the start waits for it/g)).toHaveLength(1);
  }, 90_000);
});
