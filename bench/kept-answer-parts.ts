// Where a kept answer's CPU goes below HTTP, in one process on the server's
// own read path (src/entry/node-service.ts buildNodeDeps: node-batches, the
// app's engine and installed hooks): the query's parse, the engine call
// (findAllocationCandidatesJson: the read batch, the kept answer's checks and
// glue) and, inside it, the read batch; then that same batch replayed alone in
// a loop (warm caches: a lower bound); and the whole app's answer (app.fetch:
// Hono, the middleware, the route and the engine, with @hono/node-server's
// Request and Response as the server has them, no socket) beside the version
// document through the same stack. Medians of 6 rounds, microseconds of
// process CPU per answer. With bench/answer-floor.ts (the whole answer over
// HTTP and its floor) the rest is the socket.
//   npx tsx bench/kept-answer-parts.ts CHECKOUT DB_FILE [--query Q] [--version 1.39]
// DB_FILE: a loaded database (bench/cloud.ts prepareDb: placeload's flat cloud, with consumers or not).
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { InStatement } from '@libsql/client';
import { FLAT_QUERY } from './upstream.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { query: { type: 'string', default: FLAT_QUERY }, version: { type: 'string', default: '1.39' } },
});
const [checkout, dbFile] = positionals;
if (!checkout || !dbFile) throw new Error('usage: kept-answer-parts.ts CHECKOUT DB_FILE');
const root = resolve(checkout);
const copy = join(mkdtempSync(join(tmpdir(), 'kept-parts-')), 'placement.db');
copyFileSync(dbFile, copy);
if (existsSync(`${dbFile}-wal`)) copyFileSync(`${dbFile}-wal`, `${copy}-wal`);
// The server's Request and Response (the listener puts them in place of the globals), as node-server.ts serves.
const { getRequestListener } = await import(`${root}/node_modules/@hono/node-server/dist/index.mjs`);
getRequestListener(() => new Response(null));
const { buildNodeDeps } = await import(`${root}/src/entry/node-service.ts`);
const { createApp } = await import(`${root}/src/app.ts`);
const { checkSettings } = await import(`${root}/src/entry/settings-check.ts`);
const { findAllocationCandidatesJson } = await import(`${root}/src/placement/candidates/index.ts`);
const { Microversion } = await import(`${root}/src/http/microversion.ts`);
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: (m: string) => console.error(m) };
const deps = await buildNodeDeps(checkSettings({ ...process.env, PLACEMENT_DB_URL: `file:${copy}`, PLACEMENT_ACCESS_LOG: 'off' }), quiet);
const mv = Microversion.parse(args.version!);
const query = Object.fromEntries([...new URLSearchParams(args.query)].map(([key, value]) => [key, [value]]));
let lastBatch: InStatement[] = [];
let batchCpu = 0;
const cpuOf = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};
const reader = {
  readBatch: async (statements: InStatement[]) => {
    lastBatch = statements;
    const since = process.cpuUsage();
    const results = await deps.store.nearby.readBatch(statements);
    batchCpu += cpuOf(since);
    return results;
  },
};
const answer = async () => findAllocationCandidatesJson(reader, deps.candidates.parse(query, mv), mv, deps.candidates.options());
for (let i = 0; i < 300; i += 1) await answer();
const perCall = async (n: number, f: () => unknown) => {
  const since = process.cpuUsage();
  for (let i = 0; i < n; i += 1) await f();
  return cpuOf(since) / n;
};
const app = createApp(deps);
const headers = { 'openstack-api-version': `placement ${args.version}`, 'x-auth-token': 'admin', accept: 'application/json' };
// Node's response as the access middleware reads it: the line and metrics once it has gone out.
const outgoing = {
  once: (_event: string, listener: () => void) => queueMicrotask(listener),
  getHeader: () => undefined,
  writableFinished: true,
};
const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
const appAnswer = (path: string) => app.fetch(new Request(`http://127.0.0.1:8778${path}`, { headers }), { outgoing }, ctx);
const path = `/allocation_candidates?${args.query}`;
if ((await appAnswer(path)).status !== 200) throw new Error(`${path}: not 200`);
const parts: Record<string, number[]> = { parse: [], engine: [], batch_in_engine: [], batch_replayed: [], app: [], version_document: [] };
for (let round = 0; round < 6; round += 1) {
  parts.parse!.push(await perCall(2000, () => deps.candidates.parse(query, mv)));
  batchCpu = 0;
  parts.engine!.push(await perCall(300, answer));
  parts.batch_in_engine!.push(batchCpu / 300);
  const batch = lastBatch;
  parts.batch_replayed!.push(await perCall(300, () => deps.store.nearby.readBatch(batch)));
  parts.app!.push(await perCall(300, () => appAnswer(path)));
  parts.version_document!.push(await perCall(300, () => appAnswer('/')));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(
  JSON.stringify({
    statements: lastBatch.length,
    ...Object.fromEntries(Object.entries(parts).map(([name, xs]) => [`${name}_us`, Math.round(median(xs))])),
    kept_hits: deps.candidates.answers.hits,
  }),
);
deps.store.close();
rmSync(dirname(copy), { recursive: true, force: true });
process.exit(0);
