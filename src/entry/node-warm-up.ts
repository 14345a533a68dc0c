// What a Node-mode server process does before it takes traffic, so that its
// first answers cost what its later ones do:
//
// 1. Warm-up: the real app (the same createApp, engine and database driver)
//    answers the requests a scheduler and perfload send (allocation
//    candidates flat and nested, full and limited, a claim, provider lists)
//    over a synthetic cloud shaped like upstream's perfload clouds, in a
//    temporary database file, until V8 has optimised the hot paths. Measured
//    on flat-1000, the first full answer of a fresh process cost ~5x a warm
//    one without it (bench/README.md).
// 2. The real database's provider trees are read into memory now (readiness
//    waits for it), and kept current in the background as any process
//    writes, so the first candidates request after a load finds them read.
// 3. The engine runs on those real trees (candidates/model-warm-up.ts), now
//    and again each time they have doubled (a cloud loaded after the start):
//    the synthetic cloud alone left V8 to deoptimise and recompile the
//    search and the JSON writer on the first real answers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'hono';
import { createApp } from '../app.js';
import type { AppConfig } from '../config.js';
import type { DataStore } from '../db/client.js';
import type { Deps, Logger } from '../deps.js';
import { buildNodeDeps } from './node-service.js';
import { keepCloudModelFresh, refreshCloudModel } from '../placement/candidates/model-refresh.js';
import { warmUpOnModel } from '../placement/candidates/model-warm-up.js';
import { cloudModelFor } from '../placement/candidates/cloud-model.js';
import { AGG, INV, RC, RP, TRAIT } from '../db/columns.js';

/**
 * CPU time at most for answers computed on the real trees: before listening,
 * and in the background when they have doubled (there each answer holds up
 * the requests that arrive meanwhile). A flat-1000 answer costs 5-30 ms.
 */
const REAL_DATA_BUDGET_MS = 300;
const REAL_DATA_BACKGROUND_BUDGET_MS = 150;

/** Providers of the synthetic cloud: enough for every hot loop to run long (the engine's cost follows the trees read). */
const FLAT_HOSTS = 400;
const NESTED_TREES = 100;
/**
 * Rounds of the request mix at most (each ~10 requests), within
 * PLACEMENT_WARM_UP_MS. Measured: a round's CPU time falls from ~220 ms to
 * ~50 ms by the 9th round, and to ~40 ms by the 30th.
 */
const MAX_ROUNDS = 30;

const AGGREGATE = '5a1b7c2e-0000-4000-8000-00000000a001';
const FLAT_QUERY = `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGGREGATE}&required=HW_CPU_X86_AVX2`;
const NESTED_QUERY =
  'resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH&resources_COMPUTE=VCPU:1,MEMORY_MB:256' +
  '&required_COMPUTE=CUSTOM_FOO&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA';

export interface Readiness {
  /** Stops the background refresh (shutdown). */
  stop(): void;
}

/**
 * Warms this process up (when PLACEMENT_WARM_UP_MS > 0), reads the real
 * database's trees, and starts keeping them fresh (PLACEMENT_TREE_REFRESH_MS).
 * A warm-up that fails is logged and skipped: the process serves anyway.
 */
export async function prepareForTraffic(deps: Deps): Promise<Readiness> {
  const { config, log, store } = deps;
  if (config.PLACEMENT_WARM_UP_MS > 0) {
    try {
      const done = await warmUp(config);
      log.debug('warmed up', { ...done });
    } catch (err) {
      log.warn('warm-up failed; serving without it', { err: String(err) });
    }
  }
  const cap = config.PLACEMENT_CANDIDATE_TREE_CACHE;
  // The model candidates use is the one of the reader they read through: the replica's, where one is configured.
  await refreshCloudModel(store.nearby, cap, Date.now()).catch((err: unknown) =>
    log.warn('reading the provider trees failed', { err: String(err) }),
  );
  // The same code once more on the real trees: their shapes are what traffic will bring.
  const onTrees = warmingOnTrees(deps);
  await onTrees();
  if (config.PLACEMENT_TREE_REFRESH_MS === 0 || cap === 0 || !config.PLACEMENT_DB_URL.startsWith('file:')) return { stop: () => {} };
  return keepCloudModelFresh(
    store.nearby,
    cap,
    config.PLACEMENT_TREE_REFRESH_MS,
    (err) => log.warn('refreshing the provider trees failed', { err: String(err) }),
    onTrees,
  );
}

/**
 * Answers computed on the real trees (model-warm-up.ts) before listening,
 * and again each time the trees kept in memory have doubled since (a cloud
 * loaded after the start, as perfload and a new region's first hosts do):
 * a few rounds while the cloud is small and cheap to answer, so the first
 * request after a load finds code V8 optimised for the cloud's shapes.
 */
function warmingOnTrees(deps: Deps): () => Promise<void> {
  const { config, log, store } = deps;
  const cap = config.PLACEMENT_CANDIDATE_TREE_CACHE;
  let warmedAtSize = 0;
  let budget = REAL_DATA_BUDGET_MS;
  return async () => {
    // The first call runs before listening; the later ones beside traffic.
    const budgetNow = budget;
    budget = REAL_DATA_BACKGROUND_BUDGET_MS;
    if (config.PLACEMENT_WARM_UP_MS === 0 || cap === 0) return;
    // The model of the reader candidates read through: the replica's, where one is configured.
    const size = cloudModelFor(store.nearby, cap).size;
    if (size === 0 || size < 2 * warmedAtSize) return;
    warmedAtSize = size;
    try {
      const done = await warmUpOnModel(store.nearby, cap, budgetNow);
      log.debug('warmed up on the provider trees', { providers: size, ...done });
    } catch (err) {
      log.warn('warming up on the provider trees failed; serving without it', { err: String(err) });
    }
  };
}

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

const context: ExecutionContext = {
  waitUntil: (work) => {
    work.catch(() => {});
  },
  passThroughOnException: () => {},
  props: {},
};

/** The warm-up itself: a temporary database, the synthetic cloud, the request mix until the budget is spent. */
export interface WarmUpDone {
  ms: number;
  rounds: number;
  requests: number;
  /** Candidates of the first flat and nested full answers: the synthetic cloud's shape at work. */
  flatCandidates: number;
  nestedCandidates: number;
}

export async function warmUp(config: AppConfig): Promise<WarmUpDone> {
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), `placement-warm-up-${process.pid}-`));
  const warmConfig: AppConfig = {
    ...config,
    PLACEMENT_DB_URL: `file:${join(dir, 'warm-up.db')}`,
    // Admin without a token service or policy overrides: every request of the mix is allowed.
    PLACEMENT_AUTH_STRATEGY: 'noauth2',
    PLACEMENT_POLICY_FILE: undefined,
    LOG_LEVEL: 'silent',
  };
  const deps = await buildNodeDeps(warmConfig, quiet);
  let requests = 0;
  let rounds = 0;
  let flatCandidates = 0;
  let nestedCandidates = 0;
  const candidatesIn = (json: string) => (JSON.parse(json) as { allocation_requests: unknown[] }).allocation_requests.length;
  try {
    await writeSyntheticCloud(deps.store);
    const app = createApp(deps);
    const send = async (method: string, path: string, body?: unknown): Promise<string> => {
      requests += 1;
      const res = await app.fetch(
        new Request(`http://warm-up${path}`, {
          method,
          headers: {
            'x-auth-token': 'admin',
            accept: 'application/json',
            'openstack-api-version': 'placement latest',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
        undefined,
        context,
      );
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
      return text;
    };
    // The writes a loader sends (placeload: provider, inventory, aggregates, traits).
    for (let i = 0; i < 5; i += 1) {
      const uuid = crypto.randomUUID();
      await send('POST', '/resource_providers', { uuid, name: uuid });
      await send('PUT', `/resource_providers/${uuid}/inventories`, {
        resource_provider_generation: 0,
        inventories: {
          VCPU: { total: 32, max_unit: 16 },
          MEMORY_MB: { total: 8192, min_unit: 128 },
          DISK_GB: { total: 8192, min_unit: 5 },
        },
      });
      await send('PUT', `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: 1, aggregates: [AGGREGATE] });
      await send('PUT', `/resource_providers/${uuid}/traits`, { resource_provider_generation: 2, traits: ['HW_CPU_X86_AVX2'] });
    }
    // The budget is this process's CPU time, not wall time: on a busy machine
    // a wall-clock budget would end the warm-up before the code is warm.
    const cpuStart = process.cpuUsage();
    const cpuMs = () => {
      const used = process.cpuUsage(cpuStart);
      return (used.user + used.system) / 1000;
    };
    while (rounds < MAX_ROUNDS && cpuMs() < config.PLACEMENT_WARM_UP_MS) {
      rounds += 1;
      const flat = await send('GET', `/allocation_candidates?${FLAT_QUERY}`);
      const nested = await send('GET', `/allocation_candidates?${NESTED_QUERY}`);
      if (rounds === 1) {
        flatCandidates = candidatesIn(flat);
        nestedCandidates = candidatesIn(nested);
      }
      await send('GET', `/allocation_candidates?${FLAT_QUERY}&limit=10`);
      await send('GET', `/allocation_candidates?${NESTED_QUERY}&limit=10`);
      await send('GET', '/resource_providers');
      // A scheduler's claim: the first of limit=5, written, then given back.
      const picked = JSON.parse(await send('GET', `/allocation_candidates?${FLAT_QUERY}&limit=5`)) as unknown;
      const first = (picked as { allocation_requests?: { allocations: unknown }[] }).allocation_requests?.[0];
      if (first) {
        const consumer = crypto.randomUUID();
        const claim = {
          allocations: first.allocations,
          project_id: crypto.randomUUID(),
          user_id: crypto.randomUUID(),
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        };
        await send('PUT', `/allocations/${consumer}`, claim);
        await send('GET', `/allocations/${consumer}`);
        await send('DELETE', `/allocations/${consumer}`);
      }
    }
  } finally {
    deps.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return { ms: Math.round(performance.now() - started), rounds, requests, flatCandidates, nestedCandidates };
}

/**
 * The synthetic cloud, written in a few statements (the API would take
 * seconds): FLAT_HOSTS hosts as placeload makes them and NESTED_TREES trees
 * as upstream's nested perfload gabbit makes them (compute node with
 * DISK_GB, two NUMA nodes with VCPU/MEMORY_MB, FPGA and VGPU leaves).
 */
async function writeSyntheticCloud(store: DataStore): Promise<void> {
  const now = new Date().toISOString();
  const uuid = (kind: number) => `printf('%08x-0000-4000-8000-%012x', ${kind}, n.i)`;
  const count = (n: number) => `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})`;
  const cls = (name: string) => `(SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} = '${name}')`;
  const trait = (name: string) => `(SELECT ${TRAIT.id} FROM traits WHERE ${TRAIT.name} = '${name}')`;
  const rp = (kind: number) => `(SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} = ${uuid(kind)})`;
  const inventory = (kind: number, name: string, total: number, min = 1, step = 1, max = total, reserved = 0) =>
    `${count(kind < 2 ? FLAT_HOSTS : NESTED_TREES)} INSERT INTO inventories (${INV.resourceProviderId}, ${INV.resourceClassId}, ${INV.total}, ${INV.reserved}, ${INV.minUnit}, ${INV.maxUnit}, ${INV.stepSize}, ${INV.allocationRatio}, ${INV.createdAt})
      SELECT ${rp(kind)}, ${cls(name)}, ${total}, ${reserved}, ${min}, ${max}, ${step}, 1.0, '${now}' FROM n`;
  const link = (kind: number, table: 'traits' | 'aggregates', idSql: string) =>
    `${count(kind < 2 ? FLAT_HOSTS : NESTED_TREES)} INSERT INTO resource_provider_${table} (resource_provider_id, ${table === 'traits' ? 'trait_id' : 'aggregate_id'}, created_at)
      SELECT ${rp(kind)}, ${idSql}, '${now}' FROM n`;
  // Kinds: 1 flat host; 2 compute node, 3 numa0, 4 numa1, 5 fpga0, 6 pgpu0, 7 fpga1_0, 8 fpga1_1 (parent kind).
  const nestedKinds: [number, number | null][] = [
    [2, null],
    [3, 2],
    [4, 2],
    [5, 3],
    [6, 3],
    [7, 4],
    [8, 4],
  ];
  const providers = (kind: number, parent: number | null) =>
    `${count(kind < 2 ? FLAT_HOSTS : NESTED_TREES)} INSERT INTO resource_providers (${RP.uuid}, ${RP.name}, ${RP.generation}, ${RP.createdAt}, ${RP.updatedAt}, ${RP.parentProviderId}, ${RP.rootProviderId})
      SELECT ${uuid(kind)}, ${uuid(kind)}, 2, '${now}', '${now}', ${parent === null ? 'NULL' : rp(parent)}, ${parent === null ? 'NULL' : rp(2)} FROM n`;
  await store.client.batch(
    [
      `INSERT OR IGNORE INTO traits (${TRAIT.name}, ${TRAIT.createdAt}) VALUES ('CUSTOM_FOO', '${now}')`,
      `INSERT INTO placement_aggregates (${AGG.uuid}, ${AGG.createdAt}) VALUES ('${AGGREGATE}', '${now}')`,
      providers(1, null),
      ...nestedKinds.map(([kind, parent]) => providers(kind, parent)),
      `UPDATE resource_providers SET ${RP.rootProviderId} = ${RP.id} WHERE ${RP.rootProviderId} IS NULL`,
      inventory(1, 'VCPU', 32, 1, 1, 16),
      inventory(1, 'MEMORY_MB', 8192, 128),
      inventory(1, 'DISK_GB', 8192, 5),
      link(1, 'aggregates', `(SELECT ${AGG.id} FROM placement_aggregates WHERE ${AGG.uuid} = '${AGGREGATE}')`),
      link(1, 'traits', trait('HW_CPU_X86_AVX2')),
      inventory(2, 'DISK_GB', 20480),
      link(2, 'traits', trait('COMPUTE_VOLUME_MULTI_ATTACH')),
      inventory(3, 'VCPU', 4, 1, 1, 4, 2),
      inventory(3, 'MEMORY_MB', 2048, 512, 256),
      link(3, 'traits', trait('HW_NUMA_ROOT')),
      inventory(4, 'VCPU', 4),
      inventory(4, 'MEMORY_MB', 2048, 256, 1, 1024),
      link(4, 'traits', trait('HW_NUMA_ROOT')),
      link(4, 'traits', trait('CUSTOM_FOO')),
      inventory(5, 'FPGA', 1),
      inventory(6, 'VGPU', 8),
      inventory(7, 'FPGA', 1),
      inventory(8, 'FPGA', 1),
    ],
    'write',
  );
}
