// Reads everything a Placement exposes over its REST API into one snapshot:
// the input of `placement-admin import` and, read from both sides, of
// `--verify`. Works against upstream OpenStack Placement and this service
// alike, at the highest microversion both the reader and the server know.
//
// Upstream has no "list consumers" call: consumers are found through every
// provider's allocations (GET /resource_providers/{uuid}/allocations), then
// each is read whole with GET /allocations/{consumer} (project, user,
// consumer type from 1.38, generation from 1.28).
import * as z from 'zod';
import { inventorySchema, type InventoryJson } from '../placement/schemas/responses.js';

/** The oldest microversion the import accepts: consumer generations (1.28) and trees (1.14) are readable. */
export const MIN_SOURCE_VERSION = '1.28';
/** The microversion of a project's usages for --verify: the last before consumer types (see readSnapshot). */
const PROJECT_USAGES_VERSION = '1.37';
/** The newest microversion this reader understands. */
export const MAX_READER_VERSION = '1.39';

export class AdminError extends Error {}

export interface PlacementEndpoint {
  /** What to call it in messages: "source", "target". */
  label: string;
  base: string;
  token: string;
  fetch: typeof fetch;
}

/** One inventory record as placement answers it (GET .../inventories), the schema the reader parses with. */
export type InventorySnap = InventoryJson;

export interface ProviderSnap {
  uuid: string;
  name: string;
  generation: number;
  parentUuid: string | null;
  rootUuid: string;
  inventories: Record<string, InventorySnap>;
  traits: string[];
  aggregates: string[];
  /** consumer uuid -> class -> used, as the provider lists them. */
  allocations: Record<string, Record<string, number>>;
  /** Only when read for --verify. */
  usages?: Record<string, number>;
}

export interface ConsumerSnap {
  uuid: string;
  projectId: string;
  userId: string;
  /** null: the consumer has no type (upstream shows "unknown"). */
  consumerType: string | null;
  generation: number;
  /** provider uuid -> class -> used. */
  allocations: Record<string, Record<string, number>>;
}

export interface Snapshot {
  version: string;
  resourceClasses: string[];
  traits: string[];
  providers: ProviderSnap[];
  consumers: ConsumerSnap[];
  /** Only when read for --verify: project id -> GET /usages?project_id= body. */
  projectUsages?: Record<string, unknown>;
}

export interface ReadProgress {
  phase: 'providers' | 'consumers' | 'usages';
  done: number;
  total: number;
}

export interface ReadOptions {
  concurrency?: number;
  /** Also read usages per provider and per project (for --verify). */
  usages?: boolean;
  /** The projects whose usages to read, besides those of the snapshot's own consumers. */
  extraProjects?: Iterable<string>;
  /** Cap on the microversion (the other side's maximum when verifying). */
  maxVersion?: string;
  onProgress?: (progress: ReadProgress) => void;
}

// ------------------------------------------------------------ answers ---

const Versions = z.object({ versions: z.array(z.object({ max_version: z.string(), min_version: z.string() })).min(1) });
const ResourceClasses = z.object({ resource_classes: z.array(z.object({ name: z.string() })) });
const Traits = z.object({ traits: z.array(z.string()) });
const Providers = z.object({
  resource_providers: z.array(
    z.object({
      uuid: z.string(),
      name: z.string(),
      generation: z.number().int(),
      parent_provider_uuid: z.string().nullable(),
      root_provider_uuid: z.string(),
    }),
  ),
});
const ProviderInventories = z.object({
  resource_provider_generation: z.number().int(),
  inventories: z.record(z.string(), inventorySchema),
});
const ProviderTraits = z.object({ resource_provider_generation: z.number().int(), traits: z.array(z.string()) });
const ProviderAggregates = z.object({ resource_provider_generation: z.number().int(), aggregates: z.array(z.string()) });
const Resources = z.record(z.string(), z.number().int());
const ProviderAllocations = z.object({
  resource_provider_generation: z.number().int(),
  allocations: z.record(z.string(), z.object({ resources: Resources })),
});
const ProviderUsages = z.object({ resource_provider_generation: z.number().int(), usages: Resources });
const ConsumerAllocations = z.object({
  allocations: z.record(z.string(), z.object({ resources: Resources })),
  consumer_generation: z.number().int().nullish(),
  project_id: z.string().optional(),
  user_id: z.string().optional(),
  consumer_type: z.string().optional(),
});
const ErrorEnvelope = z.object({ errors: z.array(z.object({ detail: z.string() })).min(1) });

// ----------------------------------------------------------- requests ---

const versionKey = (v: string): number => {
  const [major, minor] = v.split('.').map(Number);
  return (major ?? 0) * 1000 + (minor ?? 0);
};
export const versionAtLeast = (v: string, min: string): boolean => versionKey(v) >= versionKey(min);
const lowerVersion = (a: string, b: string): string => (versionKey(a) <= versionKey(b) ? a : b);

const GET_ATTEMPTS = 2;

/** One GET, its answer checked with `schema`; every failure is one AdminError line naming the endpoint. */
export async function getJson<S extends z.ZodType>(ep: PlacementEndpoint, path: string, schema: S, version?: string): Promise<z.infer<S>> {
  const headers: Record<string, string> = { accept: 'application/json', 'x-auth-token': ep.token };
  if (version) headers['openstack-api-version'] = `placement ${version}`;
  let res: Response | undefined;
  // A GET is safe to send again: a connection reset once (a server closing
  // an idle kept-alive connection) is not the source being down.
  for (let attempt = 1; res === undefined; attempt++) {
    try {
      res = await ep.fetch(`${ep.base}${path}`, { headers });
    } catch (err) {
      if (attempt < GET_ATTEMPTS) continue;
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      throw new AdminError(`cannot reach the ${ep.label} at ${ep.base}: ${err instanceof Error ? err.message : String(err)}${cause}`);
    }
  }
  const text = await res.text();
  if (res.status === 401 || res.status === 403) {
    throw new AdminError(`the ${ep.label} refused the token (HTTP ${res.status} on GET ${path})${detailOf(text)}`);
  }
  if (!res.ok) throw new AdminError(`the ${ep.label} answered HTTP ${res.status} to GET ${path}${detailOf(text)}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new AdminError(`the ${ep.label} answered GET ${path} with something that is not JSON: ${oneLine(text).slice(0, 120)}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AdminError(`the ${ep.label} answered GET ${path} unexpectedly: ${issue ? `${issue.path.join('.')}: ${issue.message}` : ''}`);
  }
  return parsed.data;
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function detailOf(text: string): string {
  try {
    const envelope = ErrorEnvelope.safeParse(JSON.parse(text));
    if (envelope.success) return `: ${oneLine(envelope.data.errors[0]!.detail)}`;
  } catch {
    /* not JSON */
  }
  return text ? `: ${oneLine(text).slice(0, 120)}` : '';
}

/** Runs fn over items, at most `limit` at a time; the first failure rejects (the others finish first). */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]!, i);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure) throw failure.err;
  return results;
}

/** The microversion to read at: the server's maximum, capped by this reader's (and maxVersion). */
export async function negotiateVersion(ep: PlacementEndpoint, cap: string = MAX_READER_VERSION): Promise<string> {
  const root = await getJson(ep, '/', Versions);
  const max = lowerVersion(root.versions[0]!.max_version, lowerVersion(cap, MAX_READER_VERSION));
  if (!versionAtLeast(max, MIN_SOURCE_VERSION)) {
    throw new AdminError(`the ${ep.label} speaks Placement up to ${max}; reading it needs at least ${MIN_SOURCE_VERSION}`);
  }
  return max;
}

/** How often one provider is read again when its answers disagree on its generation (it changed meanwhile). */
const PROVIDER_READ_ATTEMPTS = 3;

async function readProvider(
  ep: PlacementEndpoint,
  listed: z.infer<typeof Providers>['resource_providers'][number],
  version: string,
  withUsages: boolean,
): Promise<ProviderSnap> {
  const path = `/resource_providers/${encodeURIComponent(listed.uuid)}`;
  for (let attempt = 1; ; attempt++) {
    const [inv, traits, aggs, allocs, usages] = await Promise.all([
      getJson(ep, `${path}/inventories`, ProviderInventories, version),
      getJson(ep, `${path}/traits`, ProviderTraits, version),
      getJson(ep, `${path}/aggregates`, ProviderAggregates, version),
      getJson(ep, `${path}/allocations`, ProviderAllocations, version),
      withUsages ? getJson(ep, `${path}/usages`, ProviderUsages, version) : undefined,
    ]);
    const generations = new Set([inv, traits, aggs, allocs, usages].flatMap((a) => (a ? [a.resource_provider_generation] : [])));
    if (generations.size === 1) {
      return {
        uuid: listed.uuid,
        name: listed.name,
        generation: inv.resource_provider_generation,
        parentUuid: listed.parent_provider_uuid,
        rootUuid: listed.root_provider_uuid,
        inventories: inv.inventories,
        traits: [...traits.traits].sort(),
        aggregates: [...aggs.aggregates].sort(),
        allocations: Object.fromEntries(Object.entries(allocs.allocations).map(([c, a]) => [c, a.resources])),
        ...(usages ? { usages: usages.usages } : {}),
      };
    }
    if (attempt >= PROVIDER_READ_ATTEMPTS) {
      throw new AdminError(`provider ${listed.uuid} kept changing on the ${ep.label} while it was read; stop its writers and run again`);
    }
  }
}

/** Reads the whole of a Placement through its REST API. */
export async function readPlacement(ep: PlacementEndpoint, options: ReadOptions = {}): Promise<Snapshot> {
  const concurrency = options.concurrency ?? 16;
  const version = await negotiateVersion(ep, options.maxVersion);
  const [classes, traits, listed] = await Promise.all([
    getJson(ep, '/resource_classes', ResourceClasses, version),
    getJson(ep, '/traits', Traits, version),
    getJson(ep, '/resource_providers', Providers, version),
  ]);
  const list = listed.resource_providers;
  let done = 0;
  options.onProgress?.({ phase: 'providers', done, total: list.length });
  const providers = await mapLimit(list, concurrency, async (p) => {
    // A provider's own answers carry its generation again; the list's may be older.
    const snap = await readProvider(ep, p, version, options.usages === true);
    options.onProgress?.({ phase: 'providers', done: ++done, total: list.length });
    return snap;
  });
  const providerUuids = new Set(providers.map((p) => p.uuid));

  const consumerUuids = [...new Set(providers.flatMap((p) => Object.keys(p.allocations)))].sort();
  done = 0;
  options.onProgress?.({ phase: 'consumers', done, total: consumerUuids.length });
  const read = await mapLimit(consumerUuids, concurrency, async (uuid) => {
    const answer = await getJson(ep, `/allocations/${encodeURIComponent(uuid)}`, ConsumerAllocations, version);
    options.onProgress?.({ phase: 'consumers', done: ++done, total: consumerUuids.length });
    // Deleted since its provider was read: nothing to bring over.
    if (Object.keys(answer.allocations).length === 0) return undefined;
    for (const rp of Object.keys(answer.allocations)) {
      if (!providerUuids.has(rp)) {
        throw new AdminError(
          `consumer ${uuid} holds allocations on provider ${rp}, which the ${ep.label} did not list; stop its writers and run again`,
        );
      }
    }
    if (answer.project_id === undefined || answer.user_id === undefined || answer.consumer_generation == null) {
      throw new AdminError(`the ${ep.label} answered GET /allocations/${uuid} without project_id, user_id or consumer_generation`);
    }
    const consumer: ConsumerSnap = {
      uuid,
      projectId: answer.project_id,
      userId: answer.user_id,
      // Upstream shows a consumer without a type as "unknown" (a name no client can write: types are upper case).
      consumerType: answer.consumer_type === undefined || answer.consumer_type === 'unknown' ? null : answer.consumer_type,
      generation: answer.consumer_generation,
      allocations: Object.fromEntries(Object.entries(answer.allocations).map(([rp, a]) => [rp, a.resources])),
    };
    return consumer;
  });
  const consumers = read.filter((c): c is ConsumerSnap => c !== undefined);

  const snapshot: Snapshot = {
    version,
    resourceClasses: classes.resource_classes.map((rc) => rc.name),
    traits: [...traits.traits].sort(),
    providers,
    consumers,
  };
  if (options.usages) {
    const projects = [...new Set([...consumers.map((c) => c.projectId), ...(options.extraProjects ?? [])])].sort();
    done = 0;
    // Per class, not per consumer type (1.38): Placement 8.0.0 on PostgreSQL answers 500 to a
    // project's usages at 1.38+ (a GROUP BY PostgreSQL refuses). Both sides are read alike, and
    // each consumer's type is compared with its allocations.
    const usagesVersion = lowerVersion(version, PROJECT_USAGES_VERSION);
    const usages = await mapLimit(projects, concurrency, async (project) => {
      const body = await getJson(ep, `/usages?project_id=${encodeURIComponent(project)}`, z.object({ usages: z.unknown() }), usagesVersion);
      options.onProgress?.({ phase: 'usages', done: ++done, total: projects.length });
      return [project, body.usages] as const;
    });
    snapshot.projectUsages = Object.fromEntries(usages);
  }
  return snapshot;
}
