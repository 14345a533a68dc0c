// Server CPU per full flat-1000 answer for any checkout of this project (an
// A/B across commits on the same data, where the bench itself changed): it
// starts `src/entry/node.ts` of REPO with one server process on DBFILE,
// loads placeload's flat cloud (1,010 providers) through the API when the
// file is new, then times first answers and warm ones, with the server's
// CPU from /proc/PID/task/*/schedstat (all its threads).
//   node bench/server-cpu.mjs REPO /tmp/x.db [--reps 40] [--first 12] [--env K=V,K=V] [--node-args "--cpu-prof ..."] [--query-add '&limit=10']
import { existsSync } from 'node:fs';
import http from 'node:http';
import { AGGS, cpuNs, flatQuery, INV, startTsxServer, TRAITS } from './tsx-server.mjs';
const [repo, db, ...rest] = process.argv.slice(2);
const opt = (n, d) => {
  const i = rest.indexOf(n);
  return i < 0 ? d : rest[i + 1];
};
const reps = Number(opt('--reps', 40));
const extraEnv = Object.fromEntries(
  (opt('--env', '') || '')
    .split(',')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const QUERY = flatQuery(opt('--query-add', ''));
const fresh = !existsSync(db.replace(/^file:/, ''));
const { child, url } = await startTsxServer(repo, db, {
  nodeArgs: opt('--node-args', '') ? opt('--node-args').split(' ') : [],
  env: extraEnv,
});
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
function req(method, path, body) {
  return new Promise((res, rej) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const r = http.request(
      url + path,
      {
        method,
        agent,
        headers: {
          'x-auth-token': 'admin',
          accept: 'application/json',
          'openstack-api-version': 'placement latest',
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (resp) => {
        const chunks = [];
        resp.on('data', (c) => chunks.push(c));
        resp.on('end', () => {
          const b = Buffer.concat(chunks);
          if (resp.statusCode >= 400) rej(new Error(method + path + resp.statusCode + b));
          else res(b);
        });
      },
    );
    r.on('error', rej);
    if (data) r.write(data);
    r.end();
  });
}
if (rest.includes('--load') || fresh) {
  const t0 = performance.now();
  const provs = Array.from({ length: Number(opt('--n', 1010)) }, (_, i) => i);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < provs.length) {
        const i = next++;
        const u = crypto.randomUUID();
        const ch = (i % 3) + 1;
        await req('POST', '/resource_providers', { name: u, uuid: u });
        await req('PUT', `/resource_providers/${u}/inventories`, { resource_provider_generation: 0, inventories: INV });
        await req('PUT', `/resource_providers/${u}/aggregates`, { resource_provider_generation: 1, aggregates: AGGS.slice(0, ch) });
        await req('PUT', `/resource_providers/${u}/traits`, { resource_provider_generation: 2, traits: TRAITS.slice(0, ch) });
      }
    }),
  );
  console.error('loaded in', Math.round(performance.now() - t0), 'ms');
}
await req('GET', '/resource_providers');
const sample = async () => {
  const c0 = cpuNs(child.pid);
  const t0 = performance.now();
  const b = await req('GET', QUERY);
  const w = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 5));
  return { cpu: (cpuNs(child.pid) - c0) / 1e6, wall: w, bytes: b.length };
};
const first = [];
for (let i = 0; i < Number(opt('--first', 12)); i++) first.push(await sample());
const s = [];
for (let i = 0; i < reps; i++) s.push(await sample());
const q = (a, p) => {
  const x = [...a].sort((m, n) => m - n);
  return x[Math.min(x.length - 1, Math.floor(p * x.length))];
};
const f = (x) => (x === undefined ? '-' : x.toFixed(2));
console.log(
  JSON.stringify({
    repo,
    bytes: first[0].bytes,
    first: first.map((x) => `${f(x.cpu)}cpu/${f(x.wall)}wall`),
    cpu_med: f(
      q(
        s.map((x) => x.cpu),
        0.5,
      ),
    ),
    cpu_p10: f(
      q(
        s.map((x) => x.cpu),
        0.1,
      ),
    ),
    wall_med: f(
      q(
        s.map((x) => x.wall),
        0.5,
      ),
    ),
    wall_p95: f(
      q(
        s.map((x) => x.wall),
        0.95,
      ),
    ),
  }),
);
child.kill('SIGTERM');
agent.destroy();
