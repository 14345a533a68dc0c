// Server CPU per request of the Node HTTP path, for checkouts alternated on
// the same database: one server process (PLACEMENT_WORKERS=1) of each REPO in
// turn, 10 keep-alive clients (undici), and per round four phases: GET / (the
// version document), a kept flat-1000 answer (GET /allocation_candidates,
// repeated), claims (PUT /allocations/{new consumer}) and their deletes. The
// server's CPU per phase from /proc/PID/task/*/schedstat (all its threads).
// DBFILE is loaded with placeload's flat cloud (1,010 providers) when new.
//   node bench/http-path.mjs DBFILE REPO [REPO...] [--rounds 4] [--n 2000] [--clients 10] [--phases root,kept,claim,delete] [--node-args "--cpu-prof ..."]
import { existsSync, readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { AGGS, cpuNs, flatQuery, INV, startTsxServer, TRAITS } from './tsx-server.mjs';

const args = process.argv.slice(2);
const opt = (n, d) => {
  const i = args.indexOf(n);
  return i < 0 ? d : args[i + 1];
};
const positional = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const [db, ...repos] = positional;
const rounds = Number(opt('--rounds', 4));
const perPhase = Number(opt('--n', 2000));
const clients = Number(opt('--clients', 10));
const only = opt('--phases', 'root,kept,claim,delete').split(',');
const nodeArgs = opt('--node-args', '') ? opt('--node-args').split(' ') : [];
const QUERY = flatQuery();
const HEADERS = { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': 'placement latest' };

async function call(pool, method, path, body, expect) {
  const data = body === undefined ? undefined : JSON.stringify(body);
  const res = await pool.request({
    method,
    path,
    headers: data ? { ...HEADERS, 'content-type': 'application/json' } : HEADERS,
    body: data,
  });
  const text = await res.body.text();
  if (!expect.includes(res.statusCode)) throw new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return text;
}

/** `count` operations over `clients` concurrent workers; the server's CPU per operation in ms. */
async function phase(pid, count, op) {
  let next = 0;
  const c0 = cpuNs(pid);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) await op(next++);
    }),
  );
  const wall = performance.now() - t0;
  return { cpuMs: (cpuNs(pid) - c0) / 1e6 / count, perS: Math.round((count / wall) * 1000) };
}

async function load(pool) {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < 1010) {
        const i = next++;
        const u = crypto.randomUUID();
        const ch = (i % 3) + 1;
        await call(pool, 'POST', '/resource_providers', { name: u, uuid: u }, [200, 201]);
        await call(pool, 'PUT', `/resource_providers/${u}/inventories`, { resource_provider_generation: 0, inventories: INV }, [200]);
        await call(
          pool,
          'PUT',
          `/resource_providers/${u}/aggregates`,
          { resource_provider_generation: 1, aggregates: AGGS.slice(0, ch) },
          [200],
        );
        await call(pool, 'PUT', `/resource_providers/${u}/traits`, { resource_provider_generation: 2, traits: TRAITS.slice(0, ch) }, [200]);
      }
    }),
  );
  console.error('loaded in', Math.round(performance.now() - t0), 'ms');
}

const fresh = !existsSync(db);
const results = Object.fromEntries(repos.map((r) => [r, []]));
for (let round = 0; round < rounds; round++) {
  for (const repo of round % 2 ? [...repos].reverse() : repos) {
    const { child, url } = await startTsxServer(repo, db, { nodeArgs });
    const pool = new Pool(url, { connections: clients, pipelining: 1 });
    if (fresh && round === 0 && repo === repos[0]) await load(pool);
    const providers = JSON.parse(await call(pool, 'GET', '/resource_providers', undefined, [200])).resource_providers.map((p) => p.uuid);
    // Warm: every phase once, not counted.
    const project = crypto.randomUUID();
    const user = crypto.randomUUID();
    const consumers = [];
    const claim = async (i) => {
      const consumer = crypto.randomUUID();
      consumers[i] = consumer;
      const rp = providers[(i * 7919) % providers.length];
      await call(
        pool,
        'PUT',
        `/allocations/${consumer}`,
        {
          allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 256 } } },
          project_id: project,
          user_id: user,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
        [204],
      );
    };
    const release = (i) => call(pool, 'DELETE', `/allocations/${consumers[i]}`, undefined, [204]);
    const root = () => call(pool, 'GET', '/', undefined, [200]);
    const kept = () => call(pool, 'GET', QUERY, undefined, [200]);
    const row = {};
    for (const counted of [false, true]) {
      const n = counted ? perPhase : Math.min(perPhase, 1000);
      const pid = child.pid;
      const skip = { cpuMs: 0, perS: 0 };
      const r = only.includes('root') ? await phase(pid, n, root) : skip;
      const k = only.includes('kept') ? await phase(pid, Math.ceil(n / 4), kept) : skip;
      const c = only.includes('claim') || only.includes('delete') ? await phase(pid, n, claim) : skip;
      const d = only.includes('delete') ? await phase(pid, n, release) : skip;
      if (counted) Object.assign(row, { root: r, kept: k, claim: c, delete: d });
    }
    results[repo].push(row);
    const f = (x) => `${(x.cpuMs * 1000).toFixed(0)}µs ${x.perS}/s`;
    console.log(
      `round ${round + 1} ${repo}: GET / ${f(row.root)} | kept flat-1000 ${f(row.kept)} | claim ${f(row.claim)} | delete ${f(row.delete)} | load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    );
    await pool.close();
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const repo of repos) {
  const rows = results[repo];
  const m = (k) => (median(rows.map((r) => r[k].cpuMs)) * 1000).toFixed(0);
  console.log(
    `median ${repo}: GET / ${m('root')}µs | kept ${m('kept')}µs | claim ${m('claim')}µs | delete ${m('delete')}µs (server CPU per request)`,
  );
}
