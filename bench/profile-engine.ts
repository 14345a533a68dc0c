// Where a warm answer's CPU goes in one checkout's candidates engine, without
// HTTP: findAllocationCandidatesJson (the route's path, the trees kept in
// memory) over a copy of DB_FILE, 150 answers to warm up, then ANSWERS more
// under V8's profiler; prints self time by function and by file, and the CPU
// per answer with and without the profiler.
//   npx tsx bench/profile-engine.ts CHECKOUT DB_FILE [--query Q] [--answers 300] [--out profile.cpuprofile] [--vary]
// --vary: a new DISK_GB amount each answer (engine-answer.ts), so each is searched, never a kept answer.
// DB_FILE: a loaded database (bench/server-cpu.mjs's file: placeload's flat cloud).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { engineAnswer } from './engine-answer.js';
import { FLAT_QUERY } from './upstream.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    query: { type: 'string', default: FLAT_QUERY },
    answers: { type: 'string', default: '300' },
    out: { type: 'string' },
    version: { type: 'string', default: '1.36' },
    vary: { type: 'boolean', default: false },
  },
});
const [root, dbFile] = positionals;
if (!dbFile) throw new Error('usage: bench/profile-engine.ts CHECKOUT DB_FILE');

const answer = await engineAnswer(root!, dbFile, args.query!, args.version!, false, args.vary);
const n = Number(args.answers);
const cpuPerAnswer = async (count: number) => {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i += 1) await answer();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / count;
};
for (let i = 0; i < 150; i += 1) await answer();
const plain = await cpuPerAnswer(n);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await session.post('Profiler.start');
const profiled = await cpuPerAnswer(n);
const { profile } = await session.post('Profiler.stop');
if (args.out) writeFileSync(args.out, JSON.stringify(profile));
const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
const fns = new Map<string, number>();
const files = new Map<string, number>();
for (const id of profile.samples ?? []) {
  const frame = byId.get(id)!;
  const file = frame.url.replace(/^.*\/(src|node_modules)\//, '$1/') || '(native)';
  const fn = `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
  fns.set(fn, (fns.get(fn) ?? 0) + 1);
  files.set(file, (files.get(file) ?? 0) + 1);
}
const total = profile.samples?.length ?? 1;
const top = (m: Map<string, number>, count: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
console.log(`bytes ${await answer()}; CPU per answer ${plain.toFixed(3)} ms (profiled ${profiled.toFixed(3)} ms)`);
console.log(`self time by function:\n${top(fns, 35)}\nself time by file:\n${top(files, 12)}`);
