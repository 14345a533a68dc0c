// Seeded random hostile input against every route of both APIs (and the
// diagnostics, dashboard and OpenAPI routes): each request is a valid one
// with one to three things spoiled (a JSON value of the wrong kind, a huge or
// non-finite number, a control or unpaired character, bytes that are not
// UTF-8, a duplicate key, odd query strings and path segments, a bad method,
// content type, token or microversion). Whatever comes in:
//  - the answer is never a 5xx;
//  - an error is in its API's envelope, with a detail;
//  - a refused request leaves every table exactly as it was;
//  - the service still serves ordinary requests afterwards.
// FUZZ_ROUNDS / FUZZ_CASES / FUZZ_SEED widen a run by hand; the defaults keep
// it to a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { random } from '../helpers/random.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import {
  createFixtures,
  everyUrlPartReplaced,
  everyValueReplaced,
  type Fixtures,
  type FuzzRequest,
  spoil,
  templates,
  versionHeader,
} from './requests.js';

const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 40);
const CASES_PER_ROUND = Number(process.env.FUZZ_CASES ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);

// The app under test: each describe block below starts its own (they run one after another).
let t: TestApp;
let changedTables: () => Promise<string[]>;
function appFor(env: Record<string, string>) {
  beforeAll(async () => {
    t = await makeTestApp(env);
    changedTables = await recordChanges(t);
  });
  afterAll(() => t.close());
}

/**
 * Records every committed row change: a trigger per table and statement kind
 * writes the table's name to fuzz_changes (a rolled-back write leaves nothing).
 * A refused request must add no entry; one query per request instead of a dump.
 */
async function recordChanges(app: TestApp): Promise<() => Promise<string[]>> {
  const client = app.deps.store.client;
  const tables = (
    await client.execute(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_%' ESCAPE '\\'",
    )
  ).rows.map((r) => String(r.name));
  await client.execute('CREATE TABLE fuzz_changes (id INTEGER PRIMARY KEY, tbl TEXT NOT NULL)');
  for (const table of tables) {
    for (const kind of ['INSERT', 'UPDATE', 'DELETE']) {
      await client.execute(
        `CREATE TRIGGER "fuzz_${table}_${kind}" AFTER ${kind} ON "${table}" BEGIN INSERT INTO fuzz_changes (tbl) VALUES ('${table}'); END`,
      );
    }
  }
  if (tables.length < 20) throw new Error(`only ${tables.length} tables to watch`);
  let seen = 0;
  return async () => {
    const rows = (await client.execute({ sql: 'SELECT id, tbl FROM fuzz_changes WHERE id > ? ORDER BY id', args: [seen] })).rows;
    if (rows.length) seen = Number(rows[rows.length - 1]!.id);
    return [...new Set(rows.map((r) => String(r.tbl)))];
  };
}

/** The path as the app sees it once the URL is parsed (app.request prefixes the origin). */
const pathOf = (req: FuzzRequest) => new URL(`http://localhost${req.target}`).pathname;

const describeRequest = (req: FuzzRequest) => {
  const body = req.body instanceof Uint8Array ? `bytes ${Buffer.from(req.body).toString('hex').slice(0, 400)}` : req.body?.slice(0, 400);
  return `${req.method} ${req.target.slice(0, 300)}\nheaders ${JSON.stringify(req.headers).slice(0, 300)}\nbody ${body}`;
};

/** What is wrong with an error answer's envelope, or null. */
async function envelopeProblem(req: FuzzRequest, res: Response): Promise<string | null> {
  const text = await res.text();
  if (req.method === 'HEAD') return text === '' ? null : 'a HEAD answer with a body';
  // The API a path belongs to once the URL is parsed ("/accelerator/.." is the placement root).
  const accelerator = /^\/accelerator(\/|$)/.test(pathOf(req));
  // Cyborg's "still binding" answer: 423 with no body, as upstream.
  if (accelerator && res.status === 423 && text === '') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // An explicit non-JSON Accept gets placement's HTML rendering of the same error.
    const html = res.headers.get('content-type')?.startsWith('text/html');
    if (!accelerator && html && text.includes(`<h1>${res.status} `)) return null;
    return `not JSON: ${text.slice(0, 200)}`;
  }
  if (accelerator) {
    const envelope = parsed as { error_message?: unknown };
    if (typeof envelope.error_message !== 'string') return `no error_message: ${text.slice(0, 200)}`;
    const fault = JSON.parse(envelope.error_message) as { faultcode?: string; faultstring?: unknown };
    if (fault.faultcode !== 'Client' || typeof fault.faultstring !== 'string' || !fault.faultstring.trim()) {
      return `bad fault: ${envelope.error_message.slice(0, 200)}`;
    }
    return null;
  }
  const errors = (parsed as { errors?: unknown }).errors;
  if (!Array.isArray(errors) || errors.length !== 1) return `no errors list: ${text.slice(0, 200)}`;
  const error = errors[0] as Record<string, unknown>;
  if (error.status !== res.status) return `status ${String(error.status)} in a ${res.status} answer`;
  if (typeof error.title !== 'string' || typeof error.request_id !== 'string') return `no title or request_id: ${text.slice(0, 200)}`;
  if (typeof error.detail !== 'string' || !error.detail.trim()) return `no detail: ${text.slice(0, 200)}`;
  if ('code' in error && typeof error.code !== 'string') return `code is not a string: ${text.slice(0, 200)}`;
  return null;
}

/**
 * Cyborg's DELETE ?arqs=u1,u2 deletes the ARQs it finds and then answers 404
 * for the missing ones (not idempotent, as upstream and its reference say).
 */
const partialDeleteAsUpstream = (req: FuzzRequest, res: Response) =>
  res.status === 404 && req.method === 'DELETE' && pathOf(req) === '/accelerator/v2/accelerator_requests';

async function send(req: FuzzRequest): Promise<Response> {
  return t.app.request(req.target, { method: req.method, headers: req.headers, body: req.body });
}

/** The body as the service read it, or undefined when it is not JSON. */
function sentJson(req: FuzzRequest): unknown {
  try {
    const text = typeof req.body === 'string' ? req.body : new TextDecoder('utf-8', { fatal: true }).decode(req.body);
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const admin = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' };
const readJson = async (path: string, headers: Record<string, string> = admin) =>
  (await (await t.app.request(path, { headers })).json()) as Record<string, unknown>;

/**
 * Text an accepted write stored is read back exactly as sent: provider names,
 * consumers' project and user, device profile names and descriptions,
 * attribute keys and values (an absent description reads as '', as upstream).
 */
async function roundTripProblem(req: FuzzRequest, res: Response): Promise<string | null> {
  const answer = await res.text();
  if (req.body === undefined) return null;
  const sent = sentJson(req) as Record<string, unknown> | undefined;
  if (typeof sent !== 'object' || sent === null) return null;
  const path = pathOf(req);
  const differs = (what: string, stored: unknown, given: unknown) =>
    given !== undefined && stored !== given ? `${what} was stored as ${JSON.stringify(stored)}, sent ${JSON.stringify(given)}` : null;
  if (/^\/resource_providers(\/[^/]+)?$/.test(path) && (req.method === 'POST' || req.method === 'PUT')) {
    // Before 1.20 a create answers 201 with only a Location.
    const created = res.headers.get('location')?.split('/').pop();
    const uuid = req.method === 'POST' ? (answer ? (JSON.parse(answer) as { uuid: string }).uuid : created!) : path.split('/')[2]!;
    return differs('the provider name', (await readJson(`/resource_providers/${uuid}`)).name, sent.name);
  }
  if (/^\/allocations\/[^/]+$/.test(path) && req.method === 'PUT') {
    const stored = await readJson(path);
    return differs('project_id', stored.project_id, sent.project_id) ?? differs('user_id', stored.user_id, sent.user_id);
  }
  const accelerator = { 'x-auth-token': 'admin', 'openstack-api-version': 'accelerator latest' };
  if (path === '/accelerator/v2/device_profiles' && req.method === 'POST') {
    const given = (Array.isArray(sent) ? sent[0] : sent) as Record<string, unknown>;
    const { uuid } = JSON.parse(answer) as { uuid: string };
    const stored = (await readJson(`/accelerator/v2/device_profiles/${uuid}`, accelerator)).device_profile as Record<string, unknown>;
    return differs('the profile name', stored.name, given.name) ?? differs('the description', stored.description, given.description ?? '');
  }
  if (path === '/accelerator/v2/attributes' && req.method === 'POST') {
    const { uuid } = JSON.parse(answer) as { uuid: string };
    const stored = await readJson(`/accelerator/v2/attributes/${uuid}`, accelerator);
    return differs('the key', stored.key, sent.key) ?? differs('the value', stored.value, sent.value);
  }
  return null;
}

/** The current generation of a provider (templates use it so some writes succeed). */
async function generationOf(uuid: string): Promise<number> {
  const res = await t.call('GET', `/resource_providers/${uuid}`);
  return res.status === 200 ? ((await res.json()) as { generation: number }).generation : 0;
}

/** Sends one request and checks everything the fuzz asserts; a failure's description, or null. */
async function check(req: FuzzRequest, statuses: Map<number, number>): Promise<string | null> {
  await changedTables();
  let res: Response;
  const started = performance.now();
  try {
    res = await send(req);
    // By hand (FUZZ_VERBOSE): requests that took long, to look for slow paths.
    const took = performance.now() - started;
    if (process.env.FUZZ_VERBOSE && took > 200) console.log(`slow (${Math.round(took)} ms, ${res.status})\n${describeRequest(req)}`);
  } catch (err) {
    return `threw ${String(err)}\n${describeRequest(req)}`;
  }
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  if (res.status >= 500) return `${res.status} ${(await res.text()).slice(0, 300)}\n${describeRequest(req)}`;
  if (res.status >= 400) {
    const problem = await envelopeProblem(req, res);
    if (problem) return `${res.status} envelope: ${problem}\n${describeRequest(req)}`;
    const changed = await changedTables();
    if (changed.length && !partialDeleteAsUpstream(req, res))
      return `${res.status} refused but ${changed.join(', ')} changed\n${describeRequest(req)}`;
    return null;
  }
  const problem = await roundTripProblem(req, res);
  return problem ? `${res.status} accepted, but ${problem}\n${describeRequest(req)}` : null;
}

/** Ordinary requests of both APIs still work. */
async function stillServes(fixtures: Fixtures) {
  expect((await t.call('GET', `/resource_providers/${fixtures.child}/inventories`)).status).toBeLessThan(500);
  expect((await t.call('GET', '/resource_providers')).status).toBe(200);
  const profiles = await t.app.request('/accelerator/v2/device_profiles', { headers: { 'x-auth-token': 'admin' } });
  expect(profiles.status).toBe(200);
}

const count = (statuses: Map<number, number>, keep: (status: number) => boolean) =>
  [...statuses].filter(([s]) => keep(s)).reduce((n, [, c]) => n + c, 0);

/** Random spoiled requests, ROUNDS x CASES_PER_ROUND from SEED, with fresh fixtures each round. */
async function randomFuzz(rounds: number, seed: number) {
  const rng = random(seed);
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  for (let round = 0; round < rounds && failures.length < 10; round++) {
    const fixtures = await createFixtures(t, round);
    for (let i = 0; i < CASES_PER_ROUND && failures.length < 10; i++) {
      const index = rng.below(templates(fixtures, 0).length);
      let base = templates(fixtures, 0)[index]!;
      if (JSON.stringify(base.body ?? null).includes('resource_provider_generation')) {
        base = templates(fixtures, await generationOf(fixtures.root))[index]!;
      }
      const failure = await check(spoil(rng, base), statuses);
      if (failure) failures.push(failure);
    }
    await stillServes(fixtures);
  }
  if (process.env.FUZZ_VERBOSE) console.log(JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0]))));
  expect(failures.join('\n\n')).toBe('');
  // The fuzz reached past the edge: some requests were served, many refused.
  expect(count(statuses, (s) => s < 300)).toBeGreaterThan(rounds * CASES_PER_ROUND * 0.05);
  expect(count(statuses, (s) => s >= 400)).toBeGreaterThan(rounds * CASES_PER_ROUND * 0.3);
}

// Thousands of requests each: seconds alone, several times that when the suite's other
// files compute beside them (two files run at a time). The timeout only catches a hang.
const FUZZ_TIMEOUT = { timeout: 180_000 };

describe('hostile input fuzz', FUZZ_TIMEOUT, () => {
  appFor({});

  it(`never fails, answers in the envelope and leaves data as it was (${ROUNDS} rounds x ${CASES_PER_ROUND} requests, seed ${SEED})`, () =>
    randomFuzz(ROUNDS, SEED));

  it('takes every odd string and number in every field of every body, or refuses it cleanly', async () => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const withBodies = templates(await createFixtures(t, 1000), 0).filter((tpl) => tpl.body !== undefined).length;
    for (let index = 0; index < withBodies && failures.length < 10; index++) {
      const fixtures = await createFixtures(t, 1001 + index);
      const template = () => templates(fixtures, 0).filter((tpl) => tpl.body !== undefined)[index]!;
      const base = template();
      const needsGeneration = JSON.stringify(base.body).includes('resource_provider_generation');
      for (const variant of everyValueReplaced(base.body)) {
        const current = needsGeneration
          ? templates(fixtures, await generationOf(fixtures.root)).filter((tpl) => tpl.body !== undefined)[index]!
          : template();
        // On the current template: a fresh uuid and name for each create, the provider's generation.
        const body = variant.rebase(current.body);
        const failure = await check(
          {
            method: current.method,
            target: `/${current.segments.join('/')}${current.query.length ? `?${new URLSearchParams(current.query)}` : ''}`,
            headers: {
              'x-auth-token': 'admin',
              'content-type': 'application/json',
              'openstack-api-version': versionHeader(current),
            },
            body: JSON.stringify(body),
          },
          statuses,
        );
        if (failure) failures.push(failure);
      }
      await stillServes(fixtures);
    }
    if (process.env.FUZZ_VERBOSE) console.log(JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0]))));
    expect(failures.join('\n\n')).toBe('');
    expect(count(statuses, (s) => s < 300)).toBeGreaterThan(100);
  });

  it('takes every odd path segment and query value of every route, or refuses it cleanly', async () => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let fixtures = await createFixtures(t, 2000);
    const routes = templates(fixtures, 0).length;
    for (let index = 0; index < routes && failures.length < 10; index++) {
      // Reads share fixtures; each write gets its own (a write that succeeds consumes them).
      if (templates(fixtures, 0)[index]!.method !== 'GET') fixtures = await createFixtures(t, 2001 + index);
      const base = templates(fixtures, 0)[index]!;
      // Writes go once per odd part at most: a write that succeeds consumes its fixture.
      for (const req of everyUrlPartReplaced(base)) {
        if (base.body !== undefined && JSON.stringify(base.body).includes('resource_provider_generation')) {
          req.body = JSON.stringify(templates(fixtures, await generationOf(fixtures.root))[index]!.body);
        }
        const failure = await check(req, statuses);
        if (failure) failures.push(failure);
      }
      await stillServes(fixtures);
    }
    if (process.env.FUZZ_VERBOSE) console.log(JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0]))));
    expect(failures.join('\n\n')).toBe('');
  });
});

describe('hostile input fuzz in token mode, with CORS and a 4 KiB body limit', FUZZ_TIMEOUT, () => {
  appFor({
    PLACEMENT_AUTH_STRATEGY: 'token',
    PLACEMENT_AUTH_TOKENS: JSON.stringify({
      admin: { roles: ['admin'], project_id: 'ops', user_id: 'root' },
      user: { roles: ['member', 'reader'], project_id: 'fuzz-p', user_id: 'fuzz-u' },
      svc: { roles: ['service'], project_id: 'service' },
    }),
    PLACEMENT_CORS_ALLOWED_ORIGIN: 'https://dash.example',
    PLACEMENT_MAX_BODY_BYTES: '4096',
  });

  it('never fails, answers in the envelope and leaves data as it was', () => randomFuzz(Math.ceil(ROUNDS / 4), SEED + 1));
});
