// CPU A/B of the candidates engine of two checkouts (or one checkout under two
// young-generation sizes), each in a process of its own: one answer's garbage
// is collected in its own heap, which an A/B in one process mixes up (both
// checkouts in one heap gave a change 1.32x one way that separate processes
// measured 0.96x the other). Each process answers the query over its own
// copy of DB_FILE through findAllocationCandidatesJson (the route's path, the
// trees kept in memory), 150 answers to warm up; then rounds of 40 answers
// alternate between the two, and each reports its own process CPU per answer.
// --claim-between: a claim of one unit on the next provider in turn before each answer (engine-answer.ts), the
// CPU of its write counted on both sides alike.
// --vary: each answer asks one more DISK_GB (a cycle of 64, engine-answer.ts), so none is a kept answer: a searched
// answer's CPU, as the first answer after a load pays it.
//   npx tsx bench/ab-engine.ts BASE_CHECKOUT HEAD_CHECKOUT DB_FILE [--query Q] [--rounds 16] [--semi 32,16] [--claim-between] [--vary]
// DB_FILE: a loaded database (bench/server-cpu.mjs's file: placeload's flat cloud).
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { engineAnswer } from './engine-answer.js';
import { FLAT_QUERY } from './upstream.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    child: { type: 'boolean', default: false },
    query: { type: 'string', default: FLAT_QUERY },
    rounds: { type: 'string', default: '16' },
    semi: { type: 'string', default: '32' },
    'claim-between': { type: 'boolean', default: false },
    vary: { type: 'boolean', default: false },
  },
});

/** The child role: one checkout's engine on a copy of the file, answering `n` on each line of stdin. */
async function child(root: string, dbFile: string, queryString: string): Promise<void> {
  const answer = await engineAnswer(root, dbFile, queryString, undefined, args['claim-between'], args.vary);
  let bytes = 0;
  for (let i = 0; i < 150; i += 1) bytes = await answer();
  console.log(JSON.stringify({ bytes }));
  for await (const line of createInterface({ input: process.stdin })) {
    const n = Number(line);
    const before = process.cpuUsage();
    for (let i = 0; i < n; i += 1) await answer();
    const used = process.cpuUsage(before);
    console.log(JSON.stringify({ ms: (used.user + used.system) / 1000 / n }));
  }
}

interface Side {
  process: ChildProcess;
  next: () => Promise<{ bytes?: number; ms?: number }>;
}

async function parent(roots: string[], dbFile: string): Promise<void> {
  const semis = args.semi!.split(',');
  const sides: Side[] = roots.map((root, i) => {
    const proc = spawn(
      process.execPath,
      [
        `--max-semi-space-size=${semis[i] ?? semis[0]}`,
        '--import',
        'tsx',
        'bench/ab-engine.ts',
        '--child',
        '--query',
        args.query!,
        ...(args['claim-between'] ? ['--claim-between'] : []),
        ...(args.vary ? ['--vary'] : []),
        root,
        dbFile,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
    return { process: proc, next: async () => JSON.parse((await lines.next()).value as string) };
  });
  const ready = [await sides[0]!.next(), await sides[1]!.next()];
  if (ready[0]!.bytes !== ready[1]!.bytes) console.log(`the two answers differ in size: ${ready[0]!.bytes} and ${ready[1]!.bytes} bytes`);
  const perAnswer: number[][] = [[], []];
  for (let round = 0; round < Number(args.rounds); round += 1) {
    for (const i of round % 2 ? [1, 0] : [0, 1]) {
      sides[i]!.process.stdin!.write('40\n');
      perAnswer[i]!.push((await sides[i]!.next()).ms!);
    }
  }
  for (const side of sides) side.process.kill();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const [a, b] = perAnswer as [number[], number[]];
  console.log(
    JSON.stringify({
      bytes: ready[0]!.bytes,
      base_ms: Number(median(a).toFixed(3)),
      head_ms: Number(median(b).toFixed(3)),
      head_over_base: Number((median(b) / median(a)).toFixed(3)),
      rounds_head_lower: `${a.filter((x, i) => b[i]! < x).length} of ${a.length}`,
    }),
  );
}

if (args.child) await child(positionals[0]!, positionals[1]!, args.query!);
else await parent([positionals[0]!, positionals[1]!], positionals[2]!);
