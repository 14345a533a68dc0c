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
        },
      },
    })),
  ],
  test: {
    include: ['test/worker/**/*.test.ts'],
    globalSetup: ['test/worker/global-setup.ts'],
    testTimeout: 30_000,
  },
});
