import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/slow-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'agent/test/**/*.test.ts'],
    // test/openstack/ is its own step (vitest.openstack.config.ts): a whole cloud per file.
    exclude: ['test/worker/**', 'test/openstack/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // One folder per run for the Keystone its files share (test/helpers/keystone.ts), and
    // npm start's bundle made fresh for the servers the files start (test/helpers/node-server.ts).
    globalSetup: ['test/keystone-run.ts', 'test/start-bundle-run.ts'],
    pool: 'forks',
    // Each fork runs file after file on the modules it has loaded, instead of a fresh fork
    // loading the whole app again for every file: on 2 cores that load was most of a small
    // file's CPU. Files share no state through modules: an app's caches, metrics and engine
    // live on its Deps, test/helpers/test-app.ts keeps its prepared database per process on
    // purpose, and the shared Keystone is coordinated through its run folder.
    isolate: false,
    // Three files at a time, on 2 cores too: many files wait on servers, clients and
    // Keystone rather than compute, and the longest wait out a token's life or a cache's
    // time (test/slow-first-sequencer.ts starts them first); two at a time left a core
    // idle meanwhile, as one at a time did before. Tests that compute hard carry timeouts
    // that hold at twice the load (test/fuzz/hostile-fuzz.test.ts, test/lifecycle/start-refusals.test.ts).
    maxWorkers: 3,
    // expect.poll gives up after 1 s by default: on a loaded machine a page or a server
    // takes longer than that to show what it will show. A poll still fails, after 20 s.
    expect: { poll: { timeout: 20_000 } },
    sequence: { sequencer: SlowFirstSequencer },
  },
});
