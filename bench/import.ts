// npm run bench:import [-- --providers 10000 --consumers 20000 --concurrency 16 --processes 2 --threads 8]
//
// placement-admin import from the real OpenStack Placement 8.0.0 (Debian's
// placement-api under uwsgi on sqlite, started here; the bench stops with a
// message naming the package when it is absent) into a fresh embedded
// database. The cloud: trees of 4 providers (a compute node with MEMORY_MB
// and DISK_GB, two NUMA children with VCPU, a device child with a custom
// class), traits and an aggregate on every root, CONSUMERS consumers of two
// types each holding VCPU on a NUMA node and MEMORY_MB on its root.
//
// Loading 10,000 providers through upstream's REST API costs ~50,000 writes
// (minutes to hours on a small machine), so the cloud is written straight
// into upstream's own sqlite database (its schema, after `placement-manage
// db sync`, before the API starts): what is timed is the import, which reads
// it back through the REST API like any other source.
//
// Prints: the time to read the source (and its request count, per-request
// mean), the time to write the target (one transaction), and the total; cold
// means a fresh target database and a freshly started upstream.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createClient, type InStatement, type InValue } from '@libsql/client';
import { countsOf, writeSnapshot } from '../src/admin/import-writer.js';
import {
  type ConsumerSnap,
  type PlacementEndpoint,
  type ProviderSnap,
  readPlacement,
  type Snapshot,
} from '../src/admin/placement-reader.js';
import { diffSnapshots } from '../src/admin/verify.js';
import { applyMigrations } from '../src/db/migrate.js';
import { MIGRATIONS } from '../src/db/migrations.generated.js';
import { openNodeClient } from '../src/db/node-client.js';
import { syncStandards } from '../src/placement/sync-standards.js';
import { STANDARD_RESOURCE_CLASSES } from '../src/placement/standard-names.generated.js';
import { snapshotInventory } from '../test/helpers/snapshot-inventory.js';
import { startUpstreamPlacement, UPSTREAM_PLACEMENT_MISSING } from '../test/helpers/upstream-placement.js';

const { values: args } = parseArgs({
  options: {
    providers: { type: 'string', default: '10000' },
    consumers: { type: 'string', default: '20000' },
    /** Also time the write half alone at this scale (0: skip). */
    'write-providers': { type: 'string', default: '10000' },
    'write-consumers': { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '16' },
    processes: { type: 'string', default: '2' },
    threads: { type: 'string', default: '8' },
  },
});
const PROVIDERS = Math.max(4, Math.floor(Number(args.providers) / 4) * 4);
const CONSUMERS = Number(args.consumers);

if (UPSTREAM_PLACEMENT_MISSING) {
  console.error(`bench:import: ${UPSTREAM_PLACEMENT_MISSING}; install it to run this benchmark`);
  process.exit(2);
}

const uuid = (kind: number, i: number) => `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

/** Multi-row inserts of `rows` into upstream's table. */
function inserts(head: string, rows: InValue[][]): InStatement[] {
  const out: InStatement[] = [];
  for (let i = 0; i < rows.length; i += 300) {
    const chunk = rows.slice(i, i + 300);
    const tuple = `(${rows[0]!.map(() => '?').join(', ')})`;
    out.push({ sql: `${head} VALUES ${chunk.map(() => tuple).join(', ')}`, args: chunk.flat() });
  }
  return out;
}

const inventory = snapshotInventory;

/** The bench cloud as the snapshot an import of it reads (trees of 4, two allocations per consumer). */
export function benchCloud(providerCount: number, consumerCount: number): Snapshot {
  const trees = Math.max(1, Math.floor(providerCount / 4));
  const aggregateCount = Math.max(1, Math.floor(trees / 50));
  const providers: ProviderSnap[] = [];
  const node = (
    id: number,
    name: string,
    generation: number,
    parent: number | null,
    root: number,
    inventories: ProviderSnap['inventories'],
  ) => {
    const p: ProviderSnap = {
      uuid: uuid(0xa, id),
      name,
      generation,
      parentUuid: parent === null ? null : uuid(0xa, parent),
      rootUuid: uuid(0xa, root),
      inventories,
      traits: [],
      aggregates: [],
      allocations: {},
    };
    providers.push(p);
    return p;
  };
  for (let t = 0; t < trees; t++) {
    const root = t * 4 + 1;
    const cn = node(root, `cn-${t}`, 1 + (t % 5), null, root, {
      MEMORY_MB: inventory(262144, { reserved: 2048, allocation_ratio: 1.5 }),
      DISK_GB: inventory(4000),
    });
    cn.traits = ['CUSTOM_BENCH_GOLD', 'HW_CPU_X86_AVX2'];
    cn.aggregates = [uuid(0xb, 1 + (t % aggregateCount))];
    node(root + 1, `cn-${t}-numa0`, 2, root, root, { VCPU: inventory(32, { allocation_ratio: 4 }) });
    node(root + 2, `cn-${t}-numa1`, 2, root, root, { VCPU: inventory(32, { allocation_ratio: 4, reserved: 2 }) });
    node(root + 3, `cn-${t}-accel`, 1, root + 1, root, { CUSTOM_BENCH_ACCEL: inventory(4, { max_unit: 1 }) });
  }
  const consumers: ConsumerSnap[] = [];
  for (let c = 0; c < consumerCount; c++) {
    const root = (c % trees) * 4 + 1;
    const id = uuid(0xe, c + 1);
    const numa = uuid(0xa, root + 1 + (c % 2));
    const cn = uuid(0xa, root);
    consumers.push({
      uuid: id,
      projectId: `project-${c % 100}`,
      userId: `user-${c % 37}`,
      consumerType: c % 2 === 0 ? 'INSTANCE' : 'MIGRATION',
      generation: 1 + (c % 3),
      allocations: { [numa]: { VCPU: 1 + (c % 4) }, [cn]: { MEMORY_MB: 2048 } },
    });
    providers[(c % trees) * 4 + 1 + (c % 2)]!.allocations[id] = { VCPU: 1 + (c % 4) };
    providers[(c % trees) * 4]!.allocations[id] = { MEMORY_MB: 2048 };
  }
  return {
    version: '1.39',
    resourceClasses: ['CUSTOM_BENCH_ACCEL'],
    traits: ['CUSTOM_BENCH_GOLD', 'HW_CPU_X86_AVX2'],
    providers,
    consumers,
  };
}

/** A snapshot written into upstream's sqlite schema (placement/db/sqlalchemy/models.py), after `db sync`. */
async function loadUpstreamDatabase(dbFile: string, cloud: Snapshot): Promise<void> {
  const db = createClient({ url: `file:${dbFile}` });
  const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
  // Standard class ids as upstream's db sync wrote them (os-resource-classes order); custom ones from 10000.
  const classId = new Map<string, number>(STANDARD_RESOURCE_CLASSES.map((name, i) => [name, i]));
  for (const [i, name] of cloud.resourceClasses.entries()) classId.set(name, 10000 + i);
  const traitId = new Map(cloud.traits.map((name, i) => [name, i + 1]));
  const providerId = new Map(cloud.providers.map((p, i) => [p.uuid, i + 1]));
  const aggregateId = new Map<string, number>();
  for (const p of cloud.providers) for (const a of p.aggregates) if (!aggregateId.has(a)) aggregateId.set(a, aggregateId.size + 1);
  const numbered = (values: string[]) => new Map([...new Set(values)].map((v, i) => [v, i + 1]));
  const projectId = numbered(cloud.consumers.map((c) => c.projectId));
  const userId = numbered(cloud.consumers.map((c) => c.userId));
  const typeId = numbered(cloud.consumers.flatMap((c) => (c.consumerType ? [c.consumerType] : [])));
  const statements: InStatement[] = [
    ...inserts(
      'INSERT INTO resource_classes (created_at, id, name)',
      cloud.resourceClasses.map((name) => [now, classId.get(name)!, name]),
    ),
    ...inserts(
      'INSERT INTO traits (created_at, id, name)',
      [...traitId].map(([name, id]) => [now, id, name]),
    ),
    ...inserts(
      'INSERT INTO consumer_types (created_at, id, name)',
      [...typeId].map(([name, id]) => [now, id, name]),
    ),
    ...inserts(
      'INSERT INTO projects (created_at, id, external_id)',
      [...projectId].map(([name, id]) => [now, id, name]),
    ),
    ...inserts(
      'INSERT INTO users (created_at, id, external_id)',
      [...userId].map(([name, id]) => [now, id, name]),
    ),
    ...inserts(
      'INSERT INTO placement_aggregates (created_at, id, uuid)',
      [...aggregateId].map(([name, id]) => [now, id, name]),
    ),
    ...inserts(
      'INSERT INTO resource_providers (created_at, id, uuid, name, generation, root_provider_id, parent_provider_id)',
      cloud.providers.map((p) => [
        now,
        providerId.get(p.uuid)!,
        p.uuid,
        p.name,
        p.generation,
        providerId.get(p.rootUuid)!,
        p.parentUuid === null ? null : providerId.get(p.parentUuid)!,
      ]),
    ),
    ...inserts(
      'INSERT INTO inventories (created_at, resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)',
      cloud.providers.flatMap((p) =>
        Object.entries(p.inventories).map(([rc, i]) => [
          now,
          providerId.get(p.uuid)!,
          classId.get(rc)!,
          i.total,
          i.reserved,
          i.min_unit,
          i.max_unit,
          i.step_size,
          i.allocation_ratio,
        ]),
      ),
    ),
    ...inserts(
      'INSERT INTO resource_provider_traits (created_at, trait_id, resource_provider_id)',
      cloud.providers.flatMap((p) => p.traits.map((t) => [now, traitId.get(t)!, providerId.get(p.uuid)!])),
    ),
    ...inserts(
      'INSERT INTO resource_provider_aggregates (created_at, resource_provider_id, aggregate_id)',
      cloud.providers.flatMap((p) => p.aggregates.map((a) => [now, providerId.get(p.uuid)!, aggregateId.get(a)!])),
    ),
    ...inserts(
      'INSERT INTO consumers (created_at, id, uuid, project_id, user_id, generation, consumer_type_id)',
      cloud.consumers.map((c, i) => [
        now,
        i + 1,
        c.uuid,
        projectId.get(c.projectId)!,
        userId.get(c.userId)!,
        c.generation,
        c.consumerType ? typeId.get(c.consumerType)! : null,
      ]),
    ),
    ...inserts(
      'INSERT INTO allocations (created_at, resource_provider_id, consumer_id, resource_class_id, used)',
      cloud.consumers.flatMap((c) =>
        Object.entries(c.allocations).flatMap(([rp, resources]) =>
          Object.entries(resources).map(([rc, used]) => [now, providerId.get(rp)!, c.uuid, classId.get(rc)!, used]),
        ),
      ),
    ),
  ];
  await db.batch(statements, 'write');
  db.close();
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The write half alone at any scale: the same snapshot shape into a fresh database, one transaction. */
async function timeWrite(cloud: Snapshot, dir: string): Promise<{ prepare: number; write: number }> {
  const client = await openNodeClient(`file:${join(dir, `write-${cloud.providers.length}.db`)}`);
  const started = Date.now();
  await applyMigrations(client, MIGRATIONS);
  await syncStandards(client);
  const prepared = Date.now();
  await writeSnapshot(client, cloud);
  const written = Date.now();
  client.close();
  return { prepare: prepared - started, write: written - prepared };
}

const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
const cloud = benchCloud(PROVIDERS, CONSUMERS);
const aggregates = new Set(cloud.providers.flatMap((p) => p.aggregates)).size;
console.log(
  `bench:import: ${cloud.providers.length} providers (trees of 4), ${cloud.consumers.length} consumers, ${aggregates} aggregates; ` +
    `OpenStack Placement 8.0.0 under uwsgi (${args.processes} processes x ${args.threads} threads, sqlite), import concurrency ${args.concurrency}`,
);
const loadStarted = Date.now();
const upstream = await startUpstreamPlacement({
  processes: Number(args.processes),
  threads: Number(args.threads),
  beforeStart: (dbFile) => loadUpstreamDatabase(dbFile, cloud),
});
console.log(`source loaded (straight into its sqlite) and started in ${s(Date.now() - loadStarted)}`);
try {
  let requests = 0;
  const source: PlacementEndpoint = {
    label: 'source',
    base: upstream.url,
    token: 'admin',
    fetch: (input, init) => {
      requests += 1;
      return fetch(input, init);
    },
  };
  const phases: Record<string, number> = {};
  let phaseStart = Date.now();
  let phase = '';
  const started = Date.now();
  const snapshot = await readPlacement(source, {
    concurrency: Number(args.concurrency),
    onProgress: (p) => {
      if (p.phase !== phase) {
        if (phase) phases[phase] = Date.now() - phaseStart;
        phase = p.phase;
        phaseStart = Date.now();
      }
    },
  });
  if (phase) phases[phase] = Date.now() - phaseStart;
  const readMs = Date.now() - started;
  // What came back is what was loaded (upstream's answers, not the generator, are imported).
  const differences = diffSnapshots({ ...cloud, traits: snapshot.traits, resourceClasses: snapshot.resourceClasses }, snapshot);
  if (differences.length > 0)
    throw new Error(`the source answered differently from what was loaded: ${differences.slice(0, 3).join('; ')}`);
  const write = await timeWrite(snapshot, dir);
  console.log(`imported: ${JSON.stringify(countsOf(snapshot))}`);
  console.log(
    `read the source:   ${s(readMs)} (${requests} GETs, ${(readMs / requests).toFixed(2)} ms each at concurrency ${args.concurrency}; ` +
      `providers ${s(phases.providers ?? 0)}, consumers ${s(phases.consumers ?? 0)})`,
  );
  console.log(`prepare target:    ${s(write.prepare)} (migrations + standard names on a new file)`);
  console.log(`write (one tx):    ${s(write.write)}`);
  console.log(`total:             ${s(readMs + write.prepare + write.write)} (cold: fresh target, freshly started source)`);
  const wantProviders = Number(args['write-providers']);
  const wantConsumers = Number(args['write-consumers']);
  if (wantProviders > 0 && (wantProviders > cloud.providers.length || wantConsumers > cloud.consumers.length)) {
    const big = benchCloud(wantProviders, wantConsumers);
    const measured = await timeWrite(big, dir);
    const perRequest = readMs / requests;
    const bigRequests = 4 * big.providers.length + big.consumers.length + 4;
    console.log(
      `write alone at ${big.providers.length} providers / ${big.consumers.length} consumers (same shape, measured): ` +
        `prepare ${s(measured.prepare)}, write (one tx) ${s(measured.write)}`,
    );
    console.log(
      `read at that scale, EXTRAPOLATED (not measured): ${bigRequests} GETs x ${perRequest.toFixed(2)} ms = ~${s(bigRequests * perRequest)} ` +
        '(linear in GETs: 4 per provider, 1 per consumer, at the per-GET time measured above on this machine)',
    );
  }
} finally {
  await upstream.stop();
  upstream.remove();
  rmSync(dir, { recursive: true, force: true });
}
