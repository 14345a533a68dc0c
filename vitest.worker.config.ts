// Worker-mode tests: run inside workerd (@cloudflare/vitest-pool-workers)
// against a real sqld started by test/worker/global-setup.ts.
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      main: './src/entry/worker.ts',
      wrangler: { configPath: './wrangler.toml' },
      miniflare: {
        bindings: {
          PLACEMENT_DB_URL: inject('sqldUrl'),
          PLACEMENT_AUTH_STRATEGY: 'noauth2',
          LOG_LEVEL: 'silent',
          // Accelerator jobs: Nova events go to the fake Nova of fake-nova-setup.ts.
          NOVA_URL: `${inject('novaUrl')}/v2.1`,
          NOVA_TOKEN: 'nova-secret',
          // Project limits (test/worker/limits.test.ts) on a class of that file's own, so no other file meets them.
          PLACEMENT_LIMITS: 'static',
          PLACEMENT_LIMITS_JSON: JSON.stringify({ registered: { 'class:CUSTOM_LIMITS_WORKER': 3 } }),
        },
      },
    })),
  ],
  test: {
    include: ['test/worker/**/*.test.ts'],
    globalSetup: ['test/worker/global-setup.ts', 'test/worker/fake-nova-setup.ts', 'test/worker/fake-keystone-setup.ts'],
    // A rejection or error nobody handled fails the test it happened in.
    setupFiles: ['test/worker/no-unhandled.ts'],
    // The suite runs beside the Node suite's files: an isolate's first request (migrations,
    // the cloud read) took over 10 s at load 15. The timeouts catch hangs, not slowness.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
