// The dashboard's project names from Keystone (GET /v3/projects/{id} with the
// viewer's token): what is kept, for how long, and that a slow or refusing
// Keystone never holds the page up. The real Keystone is in
// test/keystone/openstack-cloud.test.ts.
import { describe, expect, it } from 'vitest';
import { KeystoneProjectNames } from '../../src/http/keystone/project-names.js';

function fakeKeystone(answers: Record<string, { status: number; name?: string; hang?: boolean }>) {
  const asked: { url: string; token: string | null }[] = [];
  const fetcher = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    asked.push({ url, token: new Headers(init?.headers).get('x-auth-token') });
    const id = decodeURIComponent(url.split('/projects/')[1]!);
    const answer = answers[id] ?? { status: 404 };
    if (answer.hang) {
      await new Promise((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
    }
    const body = answer.name === undefined ? { error: { code: answer.status } } : { project: { id, name: answer.name } };
    return new Response(JSON.stringify(body), { status: answer.status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { asked, fetcher };
}

describe('project names from Keystone', () => {
  it("asks once per project with the viewer's token, and keeps the answer for the TTL", async () => {
    let now = 1_000;
    const ks = fakeKeystone({ p1: { status: 200, name: 'tenant-one' }, p2: { status: 200, name: 'tenant-two' } });
    const names = new KeystoneProjectNames({ authUrl: 'http://ks:5000', fetcher: ks.fetcher, ttlMs: 60_000, now: () => now });
    expect(await names.names(['p1', 'p2', 'p1'], 'viewer-token')).toEqual({ p1: 'tenant-one', p2: 'tenant-two' });
    expect(ks.asked).toEqual([
      { url: 'http://ks:5000/v3/projects/p1', token: 'viewer-token' },
      { url: 'http://ks:5000/v3/projects/p2', token: 'viewer-token' },
    ]);
    now += 59_000;
    expect(await names.names(['p2'], 'viewer-token')).toEqual({ p2: 'tenant-two' });
    expect(ks.asked).toHaveLength(2);
    now += 2_000;
    await names.names(['p2'], 'viewer-token');
    expect(ks.asked).toHaveLength(3);
  });

  it('remembers a project Keystone does not have, but not a refusal (another viewer may read it)', async () => {
    const ks = fakeKeystone({ gone: { status: 404 }, secret: { status: 403 } });
    const names = new KeystoneProjectNames({ authUrl: 'http://ks:5000/v3/', fetcher: ks.fetcher });
    expect(await names.names(['gone', 'secret'], 't')).toEqual({});
    expect(await names.names(['gone', 'secret'], 't')).toEqual({});
    expect(ks.asked.map((a) => a.url)).toEqual([
      'http://ks:5000/v3/projects/gone',
      'http://ks:5000/v3/projects/secret',
      'http://ks:5000/v3/projects/secret',
    ]);
  });

  it('gives up on a Keystone that does not answer within the timeout, and names the rest', async () => {
    const ks = fakeKeystone({ slow: { status: 200, name: 'slow', hang: true }, quick: { status: 200, name: 'quick' } });
    const names = new KeystoneProjectNames({ authUrl: 'http://ks:5000', fetcher: ks.fetcher, timeoutMs: 50 });
    const started = Date.now();
    expect(await names.names(['slow', 'quick'], 't')).toEqual({ quick: 'quick' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('keeps at most maxEntries names, dropping the oldest', async () => {
    const answers = Object.fromEntries(['a', 'b', 'c'].map((id) => [id, { status: 200, name: id.toUpperCase() }]));
    const ks = fakeKeystone(answers);
    const names = new KeystoneProjectNames({ authUrl: 'http://ks:5000', fetcher: ks.fetcher, maxEntries: 2 });
    await names.names(['a', 'b', 'c'], 't');
    expect(ks.asked).toHaveLength(3);
    await names.names(['b', 'c'], 't');
    expect(ks.asked).toHaveLength(3);
    await names.names(['a'], 't');
    expect(ks.asked).toHaveLength(4);
  });
});
