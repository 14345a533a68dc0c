// How the Worker turns its bindings into the Node-style configuration.
import { describe, expect, it, vi } from 'vitest';
import worker, { bootFailure, environmentFromBindings } from '../../src/entry/worker.js';

describe('Worker bindings', () => {
  it('accepts LIBSQL_URL / LIBSQL_AUTH_TOKEN as the database binding', () => {
    const env = environmentFromBindings({ LIBSQL_URL: 'libsql://db.example', LIBSQL_AUTH_TOKEN: 'tok' });
    expect(env.PLACEMENT_DB_URL).toBe('libsql://db.example');
    expect(env.PLACEMENT_DB_AUTH_TOKEN).toBe('tok');
  });

  it('prefers the PLACEMENT_DB_* names when both are bound', () => {
    const env = environmentFromBindings({ LIBSQL_URL: 'libsql://alias', PLACEMENT_DB_URL: 'https://primary' });
    expect(env.PLACEMENT_DB_URL).toBe('https://primary');
  });

  it('keeps only string bindings for the configuration', () => {
    const env = environmentFromBindings({ PLACEMENT_DB_URL: 'http://x', JOBS: { send: async () => {} } });
    expect(env).not.toHaveProperty('JOBS');
  });

  it('refuses to start without a database URL (Workers have no local file)', () => {
    expect(() => environmentFromBindings({})).toThrow(/PLACEMENT_DB_URL/);
  });

  it('rejects a JOBS binding that is not a queue producer', () => {
    expect(() => environmentFromBindings({ PLACEMENT_DB_URL: 'http://x', JOBS: 'placement-edge-jobs' })).toThrow();
  });

  it('answers a failed start with 503 in the error envelope', async () => {
    const res = bootFailure();
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { errors: { status: number; title: string; request_id: string }[] };
    expect(body.errors[0]).toMatchObject({ status: 503, title: 'Service Unavailable' });
    expect(body.errors[0]?.request_id).toMatch(/^req-[0-9a-f-]{36}$/);
  });

  it('logs why a start failed and the fix: a libSQL server that does not answer, named with its URL', async () => {
    const logged: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line: string) => logged.push(line));
    try {
      // Nothing listens on port 9 of this machine (discard).
      const env = { PLACEMENT_DB_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' };
      const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
      const res = await worker.fetch(new Request('http://edge.test/resource_providers') as never, env, ctx as never);
      expect(res.status).toBe(503);
    } finally {
      spy.mockRestore();
    }
    const line = JSON.parse(logged.find((l) => l.includes('failed to start'))!) as { err: string };
    expect(line.err).toMatch(
      /^PLACEMENT_DB_URL: no libSQL server answers at http:\/\/127\.0\.0\.1:9 .*Fix: .*reachable from Cloudflare, over https on port 443$/,
    );
  });

  it('a cron trigger or a queue batch that finds the Worker unable to start: logged once each, nothing thrown to the runtime', async () => {
    const logged: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((line: string) => logged.push(line));
    const retried: string[] = [];
    try {
      const env = { PLACEMENT_DB_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' };
      const waited: Promise<unknown>[] = [];
      const ctx = { waitUntil: (p: Promise<unknown>) => waited.push(p), passThroughOnException: () => {}, props: {} };
      const handlers = worker as unknown as {
        scheduled(controller: unknown, env: unknown, ctx: unknown): Promise<void>;
        queue(batch: unknown, env: unknown, ctx: unknown): Promise<void>;
      };
      await handlers.scheduled({ cron: '* * * * *', scheduledTime: Date.now(), noRetry() {} }, env, ctx);
      const batch = { queue: 'placement-edge-jobs', messages: [], retryAll: () => retried.push('all'), ackAll() {} };
      await handlers.queue(batch, env, ctx);
      await Promise.all(waited);
    } finally {
      spy.mockRestore();
    }
    expect(retried).toEqual(['all']);
    const failures = logged.map((l) => JSON.parse(l) as { level: string; msg: string; err: string });
    expect(failures.map((f) => [f.level, f.msg])).toEqual([
      ['error', 'placement-edge worker failed to start'],
      ['error', 'placement-edge worker failed to start'],
    ]);
    expect(failures[0]!.err).toMatch(/^PLACEMENT_DB_URL: no libSQL server answers at http:\/\/127\.0\.0\.1:9 /);
  });
});
