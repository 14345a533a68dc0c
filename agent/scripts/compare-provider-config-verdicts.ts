// Compares our loader with Nova's verdicts on a directory of cases (see
// fuzz-provider-configs.py): prints each case judged differently or loaded
// into different providers, and how many.
// Run: npx tsx agent/scripts/compare-provider-config-verdicts.ts OUT   (OUT/cases, OUT/verdicts.json)
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { formatProblem, loadProviderConfigs } from '../src/provider-config/load.js';

interface NovaProvider {
  id: string;
  identification: unknown;
  source_file: string;
  inventories: Record<string, Record<string, unknown>>;
  traits: unknown[];
}
type Verdict = { accepted: true; providers: NovaProvider[] } | { accepted: false; error_class: string; message: string };

const root = process.argv[2];
if (!root) throw new Error('usage: compare-provider-config-verdicts.ts OUT (with OUT/cases and OUT/verdicts.json)');
const verdicts = (JSON.parse(readFileSync(join(root, 'verdicts.json'), 'utf8')) as { cases: Record<string, Verdict> }).cases;
const float = (v: unknown) =>
  v && typeof v === 'object' && 'float' in v
    ? { nan: Number.NaN, inf: Number.POSITIVE_INFINITY, '-inf': Number.NEGATIVE_INFINITY }[(v as { float: 'nan' | 'inf' | '-inf' }).float]
    : v;

let divergent = 0;
for (const [name, nova] of Object.entries(verdicts)) {
  const ours = loadProviderConfigs(join(root, 'cases', name), { permissions: 'ignore' });
  let same = (ours.errors.length === 0) === nova.accepted;
  if (same && nova.accepted) {
    const mine = ours.providers.map((p) => [p.id, p.identification, basename(p.sourceFile), p.inventories, p.traits]);
    const theirs = nova.providers.map((p) => [
      p.id,
      p.identification,
      p.source_file,
      Object.fromEntries(Object.entries(p.inventories).map(([rc, inv]) => [rc, Object.fromEntries(Object.entries(inv).map(([k, v]) => [k, float(v)]))])),
      p.traits,
    ]);
    same = isDeepStrictEqual(JSON.parse(JSON.stringify(mine, finite)), JSON.parse(JSON.stringify(theirs, finite)));
  }
  if (same) continue;
  divergent++;
  const novaSays = nova.accepted ? 'accepted' : `${nova.error_class}: ${nova.message.slice(0, 160).replace(/\n/g, ' ')}`;
  const weSay = ours.errors.length === 0 ? 'accepted' : formatProblem(ours.errors[0]).slice(0, 200);
  console.log(`${name}\n  nova: ${novaSays}\n  ours: ${weSay}`);
}
console.log(`${divergent} of ${Object.keys(verdicts).length} cases judged differently`);

function finite(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : value === -0 ? 0 : value;
}
