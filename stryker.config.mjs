// StrykerJS for one module at a time: scripts/mutation.ts sets MUTATE (the
// files to mutate), MUTATION_TESTS (the only tests run against them, read by
// vitest.mutation.config.ts) and MUTATION_NAME (where the report goes).
const name = process.env.MUTATION_NAME ?? 'adhoc';
export default {
  mutate: (process.env.MUTATE ?? '').split(',').filter(Boolean),
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  coverageAnalysis: 'perTest',
  concurrency: 1,
  timeoutMS: 30_000,
  reporters: ['clear-text', 'json', 'progress-append-only'],
  // Keeps each mutant's result in reports/mutation/NAME.incremental.json: a re-run tests again only
  // the mutants whose code or covering tests changed (--force tests them all).
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
