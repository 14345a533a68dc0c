// Mutation testing only (`npm run mutation`, scripts/mutation.ts): the Node
// suite's settings, narrowed to the test files that cover the module being
// mutated (MUTATION_TESTS, comma-separated) and, where given, the tests whose
// names match MUTATION_TEST_NAMES. One file at a time: the machine is shared.
import { defineConfig } from 'vitest/config';

const files = (process.env.MUTATION_TESTS ?? '').split(',').filter(Boolean);
if (!files.length) throw new Error('vitest.mutation.config.ts: set MUTATION_TESTS (scripts/mutation.ts does)');

export default defineConfig({
  test: {
    include: files,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
    ...(process.env.MUTATION_TEST_NAMES ? { testNamePattern: process.env.MUTATION_TEST_NAMES } : {}),
  },
});
