// placement-admin import with this service as the source (no OpenStack
// Placement needed): the cloud of upstream-cloud.ts, every provider's and
// every consumer's generation above 0, imported through the CLI into an empty
// target, must read back through the API exactly as the source answers, each
// generation included. verify cannot catch a reader that loses generations
// (it reads both sides with the same reader), so this compares the API's own
// answers, not two snapshots.
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, serve } from './admin-command.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { CLOUD, loadCloud } from './upstream-cloud.js';

const PROVIDERS = [CLOUD.cn1, CLOUD.numa0, CLOUD.numa1, CLOUD.fpga0, CLOUD.cn2, CLOUD.shared];
const CONSUMERS = [CLOUD.instance1, CLOUD.instance2, CLOUD.migration, CLOUD.untyped];

describe('placement-admin import from this service, every generation above 0', () => {
  let source: TestApp;
  let target: TestApp;
  let server: Server;
  let url: string;

  const answer = async (app: TestApp, path: string) => {
    const res = await app.call('GET', path);
    expect(res.status, path).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    delete body.links;
    return body;
  };

  beforeAll(async () => {
    source = await makeTestApp();
    ({ url, server } = await serve(source.app));
    await loadCloud(url);
    // One more write on each provider and consumer, so no generation is 0 or 1 by chance.
    for (const uuid of PROVIDERS) {
      const { resource_provider_generation: generation, traits } = (await answer(source, `/resource_providers/${uuid}/traits`)) as {
        resource_provider_generation: number;
        traits: string[];
      };
      const put = await source.call('PUT', `/resource_providers/${uuid}/traits`, {
        body: { resource_provider_generation: generation, traits: [...traits, 'HW_CPU_X86_SSE2'] },
      });
      expect(put.status).toBe(200);
    }
    target = await makeTestApp();
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    source?.close();
    target?.close();
  });

  it('brings every provider, inventory, trait, aggregate and consumer over with its generation', async () => {
    for (const uuid of PROVIDERS) {
      expect(((await answer(source, `/resource_providers/${uuid}`)) as { generation: number }).generation, uuid).toBeGreaterThan(1);
    }
    for (const uuid of CONSUMERS) {
      expect(((await answer(source, `/allocations/${uuid}`)) as { consumer_generation: number }).consumer_generation, uuid).toBeGreaterThan(
        0,
      );
    }

    const imported = await admin(['import', '--from', url, '--token', 'admin', '--verify'], { PLACEMENT_DB_URL: target.dbUrl });
    expect(imported.err).toBe('');
    expect(imported.code).toBe(0);
    expect(imported.out).toMatch(/6 providers, .* 4 consumers/);

    const paths = [
      '/resource_providers',
      '/resource_classes',
      '/traits?name=startswith:CUSTOM_',
      ...PROVIDERS.flatMap((uuid) => [
        `/resource_providers/${uuid}`,
        `/resource_providers/${uuid}/inventories`,
        `/resource_providers/${uuid}/traits`,
        `/resource_providers/${uuid}/aggregates`,
        `/resource_providers/${uuid}/allocations`,
        `/resource_providers/${uuid}/usages`,
      ]),
      ...CONSUMERS.map((uuid) => `/allocations/${uuid}`),
      ...[CLOUD.project1, CLOUD.project2].map((project) => `/usages?project_id=${project}`),
    ];
    for (const path of paths) expect(await answer(target, path), path).toEqual(await answer(source, path));

    // Clients carry on with the generations they cached from the source.
    const cn1 = (await answer(target, `/resource_providers/${CLOUD.cn1}/inventories`)) as { resource_provider_generation: number };
    const renewed = await target.call('PUT', `/resource_providers/${CLOUD.cn1}/traits`, {
      body: { resource_provider_generation: cn1.resource_provider_generation, traits: [] },
    });
    expect(renewed.status).toBe(200);
    const instance1 = (await answer(target, `/allocations/${CLOUD.instance1}`)) as { consumer_generation: number };
    const deleted = await target.call('PUT', `/allocations/${CLOUD.instance1}`, {
      body: {
        allocations: {},
        project_id: CLOUD.project1,
        user_id: CLOUD.user1,
        consumer_generation: instance1.consumer_generation,
        consumer_type: 'INSTANCE',
      },
    });
    expect(deleted.status).toBe(204);
  });
});
