// `npm run mutation [-- NAME...]`: StrykerJS over the modules that carry the
// service's rules, one module at a time (concurrency 1: the machine is
// shared), each mutated file run against only the tests that cover it. Not in
// CI (too slow). Prints, and writes to reports/mutation/summary.md, the score
// per module and every surviving mutant (file:line, mutator, replacement) to
// kill with a test or to list as equivalent in docs/testing.md.
//
// The file lists follow the source tree: when a module moves, update its
// entry here (the run refuses a list that names a file no longer there).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';

interface Module {
  name: string;
  mutate: string[];
  tests: string[];
  /** Only the tests whose names match (vitest's -t), where a file's other tests do not concern the module. */
  testNames?: string;
  /** Environment for the test run (e.g. fewer random sequences in a differential test). */
  env?: Record<string, string>;
}

export const MODULES: Module[] = [
  {
    name: 'capacity',
    mutate: ['src/placement/capacity.ts'],
    tests: ['test/placement/capacity-edges.test.ts', 'test/write-model/differential.test.ts', 'test/placement/over-capacity.test.ts'],
    testNames: 'capacity at its edges|fractional|after|over-capacity',
  },
  {
    name: 'write-kernel-claims',
    mutate: ['src/placement/writes/kernel.ts', 'src/placement/writes/claims.ts', 'src/placement/writes/rules.ts'],
    // The write-model differential with 10 random sequences of 40 writes (of the suite's 40): each
    // surviving mutant runs every test that covers it, and the sequences cover the whole kernel.
    tests: [
      'test/placement/allocations.test.ts',
      'test/placement/over-capacity.test.ts',
      'test/placement/reshaper.test.ts',
      'test/write-model/one-batch.test.ts',
      'test/write-model/rules.test.ts',
      // The claim guards' path (what an extension's guard is shown, refusals, grants with checks).
      'test/write-model/hooks.test.ts',
      // What an extension writes alongside a claim, in the claim's own batch (a gang's leases).
      'test/ext/gangs.test.ts',
      'test/write-model/safety.test.ts',
      'test/write-model/differential.test.ts',
    ],
    // Not the differential's check that the sequences reached every kind of answer: 10 do not.
    testNames: '^(?!.*reaches successes and each kind of refusal)',
    env: { DIFF_SEQUENCES: '10' },
  },
  {
    name: 'taints',
    mutate: ['src/ext/taints/filter.ts', 'src/ext/taints/writes.ts'],
    tests: ['test/ext/taints.test.ts'],
  },
  { name: 'leases', mutate: ['src/ext/leases/leases.ts', 'src/ext/allocation-ends.ts'], tests: ['test/ext/leases.test.ts'] },
  {
    name: 'counters',
    mutate: [
      'src/ext/counters/declaration.ts',
      'src/ext/counters/repo.ts',
      'src/ext/counters/audit.ts',
      'src/ext/counters/candidates.ts',
      'src/ext/counters/claim-guard.ts',
    ],
    tests: ['test/ext/counters.test.ts', 'test/ext/counters-property.test.ts', 'test/ext/gpu-extensions-combined.test.ts'],
  },
  {
    name: 'first-of',
    mutate: ['src/placement/candidates/alternatives.ts'],
    // gpu-extensions-combined: headroom with ext_first_of, the one caller of FirstOfSearch.firstRequestOf.
    tests: ['test/ext/first-of.test.ts', 'test/ext/gpu-extensions-combined.test.ts'],
  },
  { name: 'replica-reader', mutate: ['src/db/replica.ts'], tests: ['test/db/replica-reader.test.ts'] },
  {
    name: 'token-cache',
    mutate: ['src/http/keystone/token-cache.ts'],
    tests: ['test/keystone/token-cache.test.ts', 'test/keystone/token-validation.test.ts'],
  },
  {
    name: 'limits',
    mutate: ['src/ext/limits/service.ts', 'src/ext/limits/guard.ts', 'src/ext/limits/http/keystone-limits.ts'],
    // Static limits and a Keystone stand-in (fetch); the real Keystone's limits-keystone.test.ts starts
    // Keystone and sqld, too slow to run once per mutant.
    tests: ['test/ext/limits.test.ts'],
  },
  {
    name: 'keystone-client',
    mutate: ['src/http/keystone/client.ts', 'src/http/keystone/service-token.ts'],
    // The fake Keystone's tests (validation, renewal, refusals) and the limits' system-scoped reader.
    tests: ['test/keystone/token-validation.test.ts', 'test/ext/limits.test.ts'],
  },
  { name: 'headroom', mutate: ['src/ext/headroom/headroom.ts'], tests: ['test/ext/headroom.test.ts'] },
  {
    name: 'import-reader',
    mutate: ['src/admin/placement-reader.ts'],
    tests: ['test/admin/placement-reader.test.ts', 'test/admin/import-from-this-service.test.ts'],
  },
  {
    name: 'import-writer',
    mutate: ['src/admin/import-writer.ts'],
    tests: ['test/admin/import-writer.test.ts', 'test/admin/import-from-this-service.test.ts'],
  },
];

// The parts of a mutation-testing-report-schema report this summary reads.
const Report = z.object({
  files: z.record(
    z.string(),
    z.object({
      source: z.string(),
      mutants: z.array(
        z.object({
          id: z.string(),
          mutatorName: z.string(),
          replacement: z.string().optional(),
          status: z.string(),
          location: z.object({ start: z.object({ line: z.number(), column: z.number() }) }),
        }),
      ),
    }),
  ),
});

interface Score {
  name: string;
  killed: number;
  survived: number;
  noCoverage: number;
  timeout: number;
  errors: number;
  score: number;
  survivors: string[];
}

function summarise(name: string): Score {
  const report = Report.parse(JSON.parse(readFileSync(`reports/mutation/${name}.json`, 'utf8')));
  const s: Score = { name, killed: 0, survived: 0, noCoverage: 0, timeout: 0, errors: 0, score: 0, survivors: [] };
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    const lines = source.split('\n');
    for (const m of mutants) {
      if (m.status === 'Killed') s.killed += 1;
      else if (m.status === 'Timeout') s.timeout += 1;
      else if (m.status === 'Survived' || m.status === 'NoCoverage') {
        if (m.status === 'Survived') s.survived += 1;
        else s.noCoverage += 1;
        const line = m.location.start.line;
        s.survivors.push(
          `${file}:${line} ${m.status} ${m.mutatorName}: ${lines[line - 1]?.trim().slice(0, 100)}  ->  ${(m.replacement ?? '').replace(/\s+/g, ' ').slice(0, 80)}`,
        );
      } else s.errors += 1;
    }
  }
  const detected = s.killed + s.timeout;
  s.score = (100 * detected) / Math.max(1, detected + s.survived + s.noCoverage);
  return s;
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !MODULES.some((m) => m.name === n));
if (unknown.length) {
  console.error(`npm run mutation: no module ${unknown.join(', ')}; modules: ${MODULES.map((m) => m.name).join(', ')}`);
  process.exit(2);
}
const gone = MODULES.flatMap((m) => [...m.mutate, ...m.tests].filter((f) => !existsSync(f)).map((f) => `${m.name}: ${f}`));
if (gone.length) {
  console.error(`npm run mutation: files named in scripts/mutation.ts are gone (moved?): ${gone.join('; ')}`);
  process.exit(2);
}
mkdirSync('reports/mutation', { recursive: true });
const scores: Score[] = [];
let failed = false;
for (const module of MODULES.filter((m) => !wanted.length || wanted.includes(m.name))) {
  const started = Date.now();
  console.log(`\n== ${module.name}: ${module.mutate.join(', ')} against ${module.tests.join(', ')}`);
  const run = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs'], {
    stdio: 'inherit',
    env: {
      ...process.env,
      MUTATION_NAME: module.name,
      MUTATE: module.mutate.join(','),
      MUTATION_TESTS: module.tests.join(','),
      MUTATION_TEST_NAMES: module.testNames ?? '',
      ...module.env,
    },
  });
  if (run.status !== 0) {
    console.error(`npm run mutation: stryker failed on ${module.name} (exit ${run.status})`);
    failed = true;
    continue;
  }
  const score = summarise(module.name);
  scores.push(score);
  console.log(`== ${module.name}: ${score.score.toFixed(1)}% in ${Math.round((Date.now() - started) / 1000)} s`);
}

const table = [
  '| module | score | killed | timeout | survived | no coverage |',
  '| --- | --- | --- | --- | --- | --- |',
  ...scores.map((s) => `| ${s.name} | ${s.score.toFixed(1)}% | ${s.killed} | ${s.timeout} | ${s.survived} | ${s.noCoverage} |`),
];
const survivors = scores.flatMap((s) => (s.survivors.length ? [`\n### ${s.name}\n`, ...s.survivors.map((l) => `- ${l}`)] : []));
const summary = [`# Mutation testing, ${new Date().toISOString()}`, '', ...table, '', '## Surviving mutants', ...survivors, ''].join('\n');
writeFileSync(`reports/mutation/summary-${wanted.join('-') || 'all'}.md`, summary);
console.log(`\n${summary}`);
process.exit(failed ? 1 : 0);
