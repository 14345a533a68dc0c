import { defineConfig } from 'vitest/config';

// The OpenStack cloud files (test/openstack/: a real Nova, Glance, Keystone, RabbitMQ and
// PostgreSQL around each placement service, scripts/openstack-cloud.ts). Each file starts
// its own cloud (minutes on 2 cores) and drives it for minutes more, so they run one at a
// time, as their own step of .ci/run after `npm test` (README "Tests").
export default defineConfig({
  test: {
    include: ['test/openstack/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
