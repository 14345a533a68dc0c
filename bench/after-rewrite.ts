// What trees re-read cost the next searched answer: one process, the route's
// path (findAllocationCandidatesJson, the app's tree cache and kept bytes) over
// a copy of DB_FILE. Each round, alternated: a searched answer (a new DISK_GB
// amount, as a process's first answer after a load is) with nothing written
// since the last; then `--trees` trees rewritten (an inventory row updated to
// what it was: the triggers give each tree a new seq, so it is re-read whole,
// as a load's last writes are), the refresher's own refresh run as
// keepTreeModelFresh runs it, and another searched answer. Prints the CPU per
// answer of each (median over rounds), the difference being what those trees'
// re-read costs the answer that meets them first.
//   npx tsx bench/after-rewrite.ts CHECKOUT DB_FILE [--trees 300] [--rounds 15] [--query Q]
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { FLAT_QUERY } from './upstream.js';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    trees: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '15' },
    query: { type: 'string', default: FLAT_QUERY },
  },
});
const [checkout, dbFile] = positionals;
if (!dbFile) throw new Error('usage: bench/after-rewrite.ts CHECKOUT DB_FILE');
const root = resolve(checkout!);
const copy = join(mkdtempSync(join(tmpdir(), 'after-rewrite-')), 'placement.db');
copyFileSync(dbFile, copy);
if (existsSync(`${dbFile}-wal`)) copyFileSync(`${dbFile}-wal`, `${copy}-wal`);

const { openBatchRunner } = await import(`${root}/src/db/node-batches.ts`);
const { findAllocationCandidatesJson } = await import(`${root}/src/placement/candidates/index.ts`);
const { candidateEngine } = await import(`${root}/src/compose.ts`);
const { Microversion } = await import(`${root}/src/http/microversion.ts`);
const { loadConfig } = await import(`${root}/src/config.ts`);
const engine = candidateEngine(loadConfig({ PLACEMENT_DB_URL: `file:${copy}` }), undefined);
const runner = openBatchRunner(copy, 5000);
const reader = { readBatch: (statements: unknown[]) => runner.readBatch(statements) };
const mv = Microversion.parse('1.36');
const query = Object.fromEntries([...new URLSearchParams(args.query)].map(([key, value]) => [key, [value]]));
let asked = 0;
const searched = () => {
  asked += 1;
  const resources = String(query.resources![0]).replace(/DISK_GB:(\d+)/, (_, n) => `DISK_GB:${Number(n) + (asked % 64)}`);
  return findAllocationCandidatesJson(reader, engine.parse({ ...query, resources: [resources] }, mv), mv, engine.options());
};
const [{ rows: providerRows }] = await runner.readBatch([
  { sql: 'SELECT id FROM resource_providers WHERE id = root_provider_id ORDER BY id', args: {} },
]);
const roots = providerRows.map((row: unknown[]) => Number(row[0]));
const count = Math.min(Number(args.trees), roots.length);
let next = 0;
/** `count` trees rewritten, the next ones in turn: each inventory of their root updated to what it was. */
const rewrite = async () => {
  const chosen: number[] = [];
  for (let i = 0; i < count; i += 1) chosen.push(roots[(next++ % roots.length) as number]!);
  await runner.writeBatch([
    {
      sql: 'UPDATE inventories SET reserved = reserved WHERE resource_provider_id IN (SELECT value FROM json_each(?))',
      args: [JSON.stringify(chosen)],
    },
  ]);
};
const cpuOf = async (fn: () => Promise<unknown>) => {
  const before = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
};
await engine.refresh(reader);
for (let i = 0; i < 150; i += 1) await searched();
const quiet: number[] = [];
const after: number[] = [];
for (let round = 0; round < Number(args.rounds); round += 1) {
  quiet.push(await cpuOf(searched));
  await rewrite();
  await engine.refresh(reader);
  if (process.env.AFTER_REWRITE_FILL) await searched();
  if (process.env.AFTER_REWRITE_GC) (globalThis as { gc?: (o: object) => void }).gc?.({ type: process.env.AFTER_REWRITE_GC });
  after.push(await cpuOf(searched));
  // The next round's quiet answer meets no tree re-read.
  await searched();
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!.toFixed(2);
console.log(
  `${root.split('/').pop()} load ${loadavg()[0]!.toFixed(1)}: searched answer CPU ${median(quiet)} ms; after ${count} trees re-read ${median(after)} ms`,
);
runner.close();
