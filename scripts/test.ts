// `npm test`: the Node suite and, beside it, the Worker suite (workerd), then one plain
// line that counts both together, `tests: N passed, M failed, K skipped`, followed
// by the files that skipped tests and why. A skipped test fails the run: a test
// skips only where a real part it needs is missing, and a missing part must never
// turn a red run green. A developer without a part may opt out on their own
// machine with PLACEMENT_TEST_ALLOW_MISSING=1 (test/helpers/parts.ts): the tests
// that need it are skipped, named here, and the run may pass. `.ci/run` unsets it.
// Extra arguments go to both vitest runs (e.g. a file filter). The two suites
// run side by side (see runSuite).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { z } from 'zod';

const SUITES = [
  { name: 'node', config: 'vitest.config.ts' },
  { name: 'worker', config: 'vitest.worker.config.ts' },
];

// The fields of vitest's JSON report this line needs.
const JsonReport = z.object({
  numPassedTests: z.number(),
  numFailedTests: z.number(),
  numPendingTests: z.number(),
  numTodoTests: z.number(),
  testResults: z.array(
    z.object({
      name: z.string(),
      status: z.string(),
      assertionResults: z.array(
        z.object({ status: z.string(), fullName: z.string(), title: z.string(), ancestorTitles: z.array(z.string()) }),
      ),
    }),
  ),
});

/** The same variable test/helpers/parts.ts reads (not imported: this script must not load vitest). */
const ALLOW_MISSING_VAR = 'PLACEMENT_TEST_ALLOW_MISSING';
const allowMissing = process.env[ALLOW_MISSING_VAR] === '1';

// A file filter may match files of one suite only; the other then has none to run.
const filters = process.argv.slice(2);
const passWithNoTests = filters.length > 0 ? ['--passWithNoTests'] : [];

const dir = mkdtempSync(join(tmpdir(), 'npm-test-'));
const totals = { passed: 0, failed: 0, skipped: 0 };
/** Per file that skipped tests: how many, and why (the `(skipped: ...)` its titles carry, else the test's name). */
const skippedFiles = new Map<string, { count: number; why: Set<string> }>();
let exitCode = 0;

/**
 * One vitest run. The Node suite runs its files one at a time (vitest's
 * default on 2 cores), leaving part of the second core idle while its tests
 * wait on servers and clients; the Worker suite (workerd + sqld, its own
 * database) runs beside it there. The first suite's output streams; the
 * others' is held and printed after it, so the two never interleave.
 */
function runSuite(suite: (typeof SUITES)[number], live: boolean): Promise<{ status: number | null; output: string }> {
  const out = join(dir, `${suite.name}.json`);
  const args = ['vitest', 'run', '-c', suite.config, '--reporter=default', '--reporter=json', `--outputFile.json=${out}`];
  const child = spawn('npx', [...args, ...passWithNoTests, ...filters], { stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve) => {
    child.once('close', (status) => resolve({ status, output: Buffer.concat(chunks).toString() }));
  });
}

function count(suite: (typeof SUITES)[number], status: number | null): void {
  if (status !== 0) exitCode = 1;
  let report: z.infer<typeof JsonReport>;
  try {
    report = JsonReport.parse(JSON.parse(readFileSync(join(dir, `${suite.name}.json`), 'utf8')));
  } catch {
    // No report: the run died before vitest could write one. Count it as failed.
    console.error(`npm test: the ${suite.name} suite wrote no report (exit ${status})`);
    totals.failed += 1;
    exitCode = 1;
    return;
  }
  totals.passed += report.numPassedTests;
  // A file that failed to load (or a hook that threw) has no failed test but is a failure all the same.
  const brokenFiles = report.testResults.filter(
    (file) => file.status === 'failed' && !file.assertionResults.some((t) => t.status === 'failed'),
  ).length;
  totals.failed += report.numFailedTests + brokenFiles;
  totals.skipped += report.numPendingTests + report.numTodoTests;
  for (const file of report.testResults) {
    for (const test of file.assertionResults) {
      if (test.status === 'passed' || test.status === 'failed') continue;
      const name = relative(process.cwd(), file.name);
      const entry = skippedFiles.get(name) ?? { count: 0, why: new Set<string>() };
      entry.count += 1;
      // describeWithPart / itWithPart end the skipped block's title with `(skipped: <the part>)`.
      const reason = [...test.ancestorTitles, test.title].map((t) => /\(skipped: (.*)\)$/.exec(t)?.[1]).find(Boolean);
      entry.why.add(reason ?? `${test.status}: ${test.fullName}`);
      skippedFiles.set(name, entry);
    }
  }
  console.log(`npm test: ${suite.name} suite: ${report.numPassedTests} passed, ${report.numFailedTests} failed`);
}

try {
  const runs = SUITES.map((suite, i) => runSuite(suite, i === 0));
  for (const [i, suite] of SUITES.entries()) {
    const { status, output } = await runs[i]!;
    process.stdout.write(output);
    count(suite, status);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (totals.failed > 0) exitCode = 1;
const skipped = [...skippedFiles].map(([file, { count, why }]) => `${file} (${count}: ${[...why].join('; ')})`);
if (totals.skipped > 0 && !allowMissing) exitCode = 1;
console.log(
  `tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped` +
    (skipped.length ? ` in ${skipped.join(', ')}` : '') +
    (totals.skipped === 0
      ? ''
      : allowMissing
        ? ` (allowed by ${ALLOW_MISSING_VAR}=1)`
        : ` (a skipped test fails the run; install the part, or set ${ALLOW_MISSING_VAR}=1 on your own machine)`),
);
process.exit(exitCode);
