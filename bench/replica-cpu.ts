// npx tsx bench/replica-cpu.ts [-- --hosts 1000 --reps 100 --query-add '&limit=10']
//
// The instance's own cost of reading from a replica (issue 27), in one
// process so that both sides run the same optimised code: the app on a sqld
// primary, and the app reading from a sqld replica of it, answer the same
// candidates request in turn; medians of this process's CPU per answer, and
// the batches per answer (the trees in memory are fed by the replica too).
import { parseArgs } from 'node:util';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { startSqld } from '../test/helpers/sqld.js';

const { values: args } = parseArgs({
  options: {
    hosts: { type: 'string', default: '1000' },
    reps: { type: 'string', default: '100' },
    'query-add': { type: 'string', default: '' },
  },
});
const HOSTS = Number(args.hosts);
const REPS = Number(args.reps);
const QUERY = `/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,DISK_GB:10${args['query-add']}`;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

const primary = await startSqld({ grpc: true });
const replica = await startSqld({ primaryGrpcUrl: primary.grpcUrl });
async function instance(env: Record<string, string>) {
  const config = loadConfig({ PLACEMENT_DB_URL: primary.url, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false', ...env });
  const deps = await buildNodeDeps(config, silent);
  const app = createApp(deps);
  let batches = 0;
  const read = deps.store.nearby.readBatch.bind(deps.store.nearby);
  deps.store.nearby.readBatch = (statements) => {
    batches += 1;
    return read(statements);
  };
  const call = async (method: string, path: string, body?: unknown): Promise<string> => {
    const res = await app.request(path, {
      method,
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text;
  };
  return { deps, call, batches: () => batches };
}
try {
  const local = await instance({});
  for (let start = 0; start < HOSTS; start += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, HOSTS - start) }, async () => {
        const uuid = crypto.randomUUID();
        await local.call('POST', '/resource_providers', { name: uuid, uuid });
        await local.call('PUT', `/resource_providers/${uuid}/inventories`, {
          resource_provider_generation: 0,
          inventories: {
            VCPU: { total: 24, allocation_ratio: 16 },
            MEMORY_MB: { total: 131072, allocation_ratio: 1.5 },
            DISK_GB: { total: 1024 },
          },
        });
      }),
    );
  }
  const viaReplica = await instance({ PLACEMENT_DB_READ_URL: replica.url });
  const expected = (await local.call('GET', QUERY)).length;
  for (let i = 0; i < 600 && (await viaReplica.call('GET', QUERY)).length !== expected; i += 1)
    await new Promise((r) => setTimeout(r, 100));
  const sides = [
    ['primary', local],
    ['replica', viaReplica],
  ] as const;
  for (let i = 0; i < 30; i += 1) for (const [, side] of sides) await side.call('GET', QUERY);
  const cpu: Record<string, number[]> = { primary: [], replica: [] };
  const before = sides.map(([, side]) => side.batches());
  for (let i = 0; i < REPS; i += 1) {
    for (const [name, side] of sides) {
      const start = process.cpuUsage();
      await side.call('GET', QUERY);
      const used = process.cpuUsage(start);
      cpu[name]!.push((used.user + used.system) / 1000);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(2);
  for (const [k, [name, side]] of sides.entries()) {
    console.log(
      `${name}: ${median(cpu[name]!)} ms CPU per answer (median of ${REPS}), ${(side.batches() - before[k]!) / REPS} read batches per answer`,
    );
  }
  console.log('replica reads by who answered:', JSON.stringify(viaReplica.deps.store.replica?.counts));
  local.deps.store.close();
  viaReplica.deps.store.close();
} finally {
  replica.stop();
  primary.stop();
}
