// `placement-admin simulate FILE.yaml` on the sample cloud of docs/simulate.md:
// the three questions of the docs, each a YAML file of changes sent to
// POST /ext/simulate (the CLI in process, its fetch served by the app), and
// the figures the docs quote. SIMULATE_DOCS=1 prints the CLI's answers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/diagnostics/admin-cli.js';
import { simulate } from '../../src/ext/simulate/extension.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { PROJECT, USER } from './helpers.js';

const RACK7 = '7a7a7a7a-0000-4000-8000-000000000007';
const RACK8 = '8a8a8a8a-0000-4000-8000-000000000008';
const LARGE = { VCPU: 4, MEMORY_MB: 8192 };

let t: TestApp;
let dir: string;
const uuidOf = new Map<string, string>();

async function host(name: string, rack: string, inventories: Record<string, { total: number }>) {
  const uuid = crypto.randomUUID();
  uuidOf.set(name, uuid);
  expect((await t.call('POST', '/resource_providers', { body: { name, uuid } })).status).toBe(200);
  expect(
    (await t.call('PUT', `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 0, inventories } })).status,
  ).toBe(200);
  expect(
    (await t.call('PUT', `/resource_providers/${uuid}/aggregates`, { body: { resource_provider_generation: 1, aggregates: [rack] } }))
      .status,
  ).toBe(200);
}

async function servers(name: string, resources: Record<string, number>, n: number) {
  for (let i = 0; i < n; i += 1) {
    const res = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [uuidOf.get(name)!]: { resources } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(res.status).toBe(204);
  }
}

/** The sample cloud: six compute hosts and four GPU hosts in two racks (aggregates), m1.large servers and GPU jobs. */
beforeAll(async () => {
  t = await makeTestApp();
  dir = mkdtempSync(join(tmpdir(), 'simulate-cli-'));
  for (const [i, rack] of [RACK7, RACK7, RACK7, RACK8, RACK8, RACK8].entries()) {
    await host(`cn${i + 1}`, rack, { VCPU: { total: 16 }, MEMORY_MB: { total: 65536 }, DISK_GB: { total: 1000 } });
  }
  for (const [i, rack] of [RACK7, RACK7, RACK8, RACK8].entries()) {
    await host(`gpu${i + 1}`, rack, { VCPU: { total: 32 }, MEMORY_MB: { total: 131072 }, VGPU: { total: 8 } });
  }
  for (const [name, n] of [
    ['cn1', 3],
    ['cn2', 2],
    ['cn3', 3],
    ['cn4', 1],
    ['cn5', 2],
    ['cn6', 0],
  ] as const)
    await servers(name, LARGE, n);
  for (const [name, n] of [
    ['gpu1', 2],
    ['gpu2', 1],
    ['gpu3', 3],
    ['gpu4', 2],
  ] as const)
    await servers(name, { VCPU: 2, MEMORY_MB: 4096, VGPU: 1 }, n);
});
afterAll(() => {
  t.close();
  rmSync(dir, { recursive: true, force: true });
});

async function cli(yaml: string, ...flags: string[]): Promise<{ code: number; out: string; err: string }> {
  const file = join(dir, `${crypto.randomUUID()}.yaml`);
  writeFileSync(file, yaml);
  let out = '';
  let err = '';
  const code = await main(['simulate', '--endpoint', 'http://placement.test', ...flags, file], {
    out: (text) => {
      out += `${text}\n`;
    },
    err: (text) => {
      err += `${text}\n`;
    },
    fetch: async (input, init) => t.app.fetch(new Request(input, init)),
    commands: simulate.admin,
  });
  if (process.env.SIMULATE_DOCS) {
    // The docs show host names where the CLI prints provider uuids.
    let named = out;
    for (const [name, uuid] of uuidOf) named = named.replaceAll(uuid, name);
    console.info(`$ placement-admin simulate ...\n${yaml}\n${named}${err}`);
  }
  return { code, out, err };
}

describe('placement-admin simulate', () => {
  it('question 1: m1.large grows to 8 VCPU', async () => {
    const { code, out } = await cli(`# m1.large: 4 VCPU / 8 GiB today, 8 VCPU tomorrow
changes:
  - op: resize
    from: {VCPU: 4, MEMORY_MB: 8192}
    to: {VCPU: 8, MEMORY_MB: 8192}
queries:
  - name: m1.large (new)
    query: resources=VCPU:8,MEMORY_MB:8192
`);
    // cn1 and cn3 hold 3 m1.large (24 of 16 VCPU after): one server each must go. Room for the new
    // size: 17 today (cn hosts 1+2+1+3+2+4 by their free VCPU, the GPU hosts' spare VCPU), 15 after.
    expect(code).toBe(1);
    expect(out).toMatch(/m1\.large \(new\)\s+17\s+15\s+-2/);
    expect(out).toContain('Consumers that would no longer fit where they are: 2');
    expect(out).toContain(uuidOf.get('cn1')!);
    expect(out).toContain(uuidOf.get('cn3')!);
    // Where they could go, in turn: cn4 (8 VCPU free after its own resize), then cn6 (empty); cn5 is full.
    expect(out).toContain(uuidOf.get('cn4')!);
    expect(out).toContain(uuidOf.get('cn6')!);
  });

  it('question 2: rack 7 goes into maintenance; do GPU gangs of two still fit?', async () => {
    const { code, out } = await cli(`changes:
  - op: taint
    aggregate: ${RACK7}
    key: example.com/maintenance
queries:
  - name: gang of 2 x 4 GPU
    query: resources=VGPU:4&count=2
`);
    expect(code).toBe(0);
    // Each GPU host has room for one 4-GPU member: a gang of two per rack today, only rack 8's after.
    expect(out).toMatch(/gang of 2 x 4 GPU\s+4\s+2\s+-2/);
    const json = JSON.parse(
      (
        await cli(
          `changes: [{op: taint, aggregate: ${RACK7}, key: example.com/maintenance}]
queries: [{name: gangs, query: "resources=VGPU:4&count=2"}]
`,
          '--json',
        )
      ).out,
    ) as { queries: { before: { domains: unknown[] }; after: { domains: unknown[] } }[] };
    expect(json.queries[0]!.before.domains).toEqual([
      { domain: RACK7, gangs: 1 },
      { domain: RACK8, gangs: 1 },
    ]);
    expect(json.queries[0]!.after.domains).toEqual([{ domain: RACK8, gangs: 1 }]);
  });

  it('question 3: CPU allocation ratio 4.0 on rack 8', async () => {
    const { code, out } = await cli(`changes:
  - op: set_inventory
    aggregate: ${RACK8}
    resource_class: VCPU
    allocation_ratio: 4.0
queries:
  - name: m1.large
    query: resources=VCPU:4,MEMORY_MB:8192
`);
    expect(code).toBe(0);
    // Rack 8's hosts are then bound by memory (cn4 7, cn5 6, cn6 8, gpu3 14, gpu4 15 instead of 3, 2, 4, 6, 7).
    expect(out).toMatch(/m1\.large\s+40\s+68\s+\+28/);
  });

  it('defrag on the sample cloud: one move empties a GPU host for an 8-GPU job', async () => {
    const res = await t.call('GET', '/ext/defrag?resources=VGPU:8&count=1&max_moves=2');
    const plan = (await res.json()) as { feasible: boolean; moves: { consumer_uuid: string; from: object; to: object }[] };
    if (process.env.SIMULATE_DOCS) console.info(JSON.stringify(plan, null, 2));
    expect(plan.feasible).toBe(true);
    expect(plan.moves).toHaveLength(1);
    // gpu2 holds one job: it goes to the fullest GPU host with room (gpu3: 5 free), leaving gpu2 whole.
    expect(Object.keys(plan.moves[0]!.from)).toEqual([uuidOf.get('gpu2')]);
    expect(Object.keys(plan.moves[0]!.to)).toEqual([uuidOf.get('gpu3')]);
  });

  it('names a bad file before sending anything', async () => {
    expect((await cli('changes: [{op: resize}]\nqueries: []\n')).code).toBe(2);
    expect((await cli('changes: [\n')).code).toBe(2);
    const unknown = await cli('changes: [{op: add_copies, of: nosuchhost, count: 1}]\nqueries: []\n');
    expect(unknown.code).toBe(3);
    expect(unknown.err).toContain('No resource provider with uuid nosuchhost found');
  });
});
