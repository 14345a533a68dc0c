// What the capacity dashboard shows, read in ONE database round trip (a
// read batch): a page of provider trees with per-class capacity and usage,
// traits and aggregates; cloud-wide totals per resource class; a page of
// per-project usage; accelerator and outbox counts. The public APIs would
// need a request per provider for inventories and usages (20,000 requests for
// 10,000 providers) and cannot list projects at all, hence this read model.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import type { z } from 'zod';
import type { BatchReader } from '../db/client.js';
import { CAPACITY_BOUND, capacitySql, usedSql } from '../placement/capacity.js';
import { AGG, ALLOC, ARQ, CONSUMER, DEVICE, INV, OUTBOX, PROJECT, RC, RP, RP_AGG, RP_TRAIT, TRAIT } from '../db/columns.js';

/** A section an extension adds to the dashboard's summary (Extension.dashboard's sections), after `projects`. */
export interface DashboardSection {
  /** Its key in GET /dashboard/api/summary. */
  readonly key: string;
  /** Its schema, described (GET /openapi.json). */
  readonly schema: z.ZodType;
  /** Its statements in the summary's one read batch. */
  statements(query: SummaryQuery): InStatement[];
  /** Its value, as the answer carries it, from its statements' results. */
  value(results: ResultSet[]): unknown;
}

/**
 * An extension's panel on the dashboard page (Extension.dashboard's panels):
 * its section's markup and where on the page it goes. The page carries only
 * the installed extensions' panels, so an app without one shows no panel for
 * it and asks for nothing of it; its script (the extension's assets) fills it.
 */
export interface DashboardPanel {
  /** Where: beside the attention list (top), under the trees (timeline), or in the row of small lists (columns). */
  readonly slot: 'top' | 'timeline' | 'columns';
  /** Its `<section>` (static markup; its script fills it). */
  readonly html: string;
}

/**
 * A file of the dashboard page (a script, a stylesheet), bundled as a string
 * by scripts/bundle-dashboard.ts: the page's own, or an extension's
 * (src/ext/<name>/dashboard-assets/, Extension.dashboard's assets: the page
 * loads them before app.js, scripts as modules, where the extension is on).
 */
export interface DashboardAsset {
  contentType: string;
  /** Strong validator: a hash of the body, fixed when the module is generated. */
  etag: string;
  body: string;
}

/** What the installed extensions add to the dashboard. */
export interface DashboardExtensions {
  providers: readonly DashboardProviderPart[];
  sections: readonly DashboardSection[];
}

/** What an extension shows on each provider of the dashboard (Extension.dashboard's provider). */
export interface DashboardProviderPart {
  /** Its key in a provider of GET /dashboard/api/summary, present only where it has something to show. */
  readonly key: string;
  /** That key's schema, optional and described (GET /openapi.json). */
  readonly schema: z.ZodType;
  /** An SQL expression of its JSON for the provider aliased `provider`, packed into the page's one statement. */
  jsonSql(provider: string): string;
  /** Its value for one provider from that JSON (undefined: nothing to show), and whether the provider is over capacity by it. */
  present(json: unknown): { value: unknown; over: boolean } | undefined;
}

export interface ProviderFilter {
  /** Substring of the name (case-insensitive), or an exact uuid. */
  name?: string | undefined;
  trait?: string | undefined;
  aggregate?: string | undefined;
  resourceClass?: string | undefined;
  /** Only providers with a class (resourceClass, if given) used above this percentage of capacity. */
  overPercent?: number | undefined;
}

export interface SummaryQuery {
  filter: ProviderFilter;
  /** Trees per page, and the 0-based offset of the first. */
  limit: number;
  offset: number;
  projectLimit: number;
  projectOffset: number;
  /** Where a class counts as "hot" in the per-class totals. */
  thresholdPercent: number;
}

export interface InventoryUsage {
  resourceClass: string;
  total: number;
  reserved: number;
  allocationRatio: number;
  capacity: number;
  used: number;
}

export interface ProviderRow {
  uuid: string;
  name: string;
  generation: number;
  parentUuid: string | null;
  rootUuid: string;
  /** Whether this provider itself passed the filter (its tree is listed if any one does). */
  matched: boolean;
  inventories: InventoryUsage[];
  traits: string[];
  aggregates: string[];
  /** Each installed extension's JSON for it (DashboardProviderPart.jsonSql), in the parts' order. */
  extensions: unknown[];
}

export interface ClassTotals {
  resourceClass: string;
  providers: number;
  capacity: number;
  used: number;
  /** Inventories used above thresholdPercent of their capacity. */
  overThreshold: number;
  /** Inventories whose usage exceeds capacity (total lowered under usage). */
  overCapacity: number;
}

export interface ProjectUsage {
  projectId: string;
  consumers: number;
  usages: Record<string, number>;
}

/** A provider in trouble: some class over capacity or used above the threshold. */
export interface AttentionRow {
  uuid: string;
  name: string;
  /** The root's name when the provider is a child (null for a root). */
  rootName: string | null;
  overCapacity: boolean;
  /** The most used class, by percent of capacity. */
  worst: InventoryUsage & { percent: number };
}

/** The trouble list's length: the dashboard shows the worst first. */
export const ATTENTION_LIMIT = 20;

export interface DashboardSummary {
  /** Providers over capacity first, then by their most used class's percent, worst first. */
  attention: AttentionRow[];
  attentionTotal: number;
  totalProviders: number;
  matchingProviders: number;
  totalTrees: number;
  providers: ProviderRow[];
  classes: ClassTotals[];
  totalProjects: number;
  projects: ProjectUsage[];
  arqsByState: Record<string, number>;
  outboxByState: Record<string, number>;
  devicesByStatus: Record<string, number>;
  /** Each installed extension's section (DashboardSection), by key, in the sections' order. */
  sections: Record<string, unknown>;
}

/** LIKE pattern for a literal substring. */
const likeSubstring = (text: string): string => `%${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

// A provider passes when every given condition holds; :x IS NULL skips one.
const MATCHING = `matching AS MATERIALIZED (
  SELECT p.${RP.id}, p.${RP.rootProviderId} AS root_id FROM resource_providers p
  WHERE (:name IS NULL OR p.${RP.name} LIKE :name ESCAPE '\\' OR p.${RP.uuid} = :name_exact)
    AND (:trait IS NULL OR EXISTS (SELECT 1 FROM resource_provider_traits rt JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId}
      WHERE rt.${RP_TRAIT.resourceProviderId} = p.${RP.id} AND t.${TRAIT.name} = :trait))
    AND (:aggregate IS NULL OR EXISTS (SELECT 1 FROM resource_provider_aggregates ra
      JOIN placement_aggregates a ON a.${AGG.id} = ra.${RP_AGG.aggregateId}
      WHERE ra.${RP_AGG.resourceProviderId} = p.${RP.id} AND a.${AGG.uuid} = :aggregate))
    AND (:class IS NULL OR EXISTS (SELECT 1 FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
      WHERE i.${INV.resourceProviderId} = p.${RP.id} AND rc.${RC.name} = :class))
    AND (:over IS NULL OR EXISTS (SELECT 1 FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
      WHERE i.${INV.resourceProviderId} = p.${RP.id} AND (:class IS NULL OR rc.${RC.name} = :class)
        AND ${usedSql('i')} * 100.0 > :over * ${capacitySql('i')}))
)`;

// One row: the counts and the page's providers packed as JSON, so an empty
// page still reports the totals.
const providersPage = (parts: readonly DashboardProviderPart[]) => `WITH ${MATCHING},
  roots AS MATERIALIZED (SELECT DISTINCT root_id FROM matching),
  page AS (SELECT r.root_id, rp.${RP.name} AS root_name FROM roots r JOIN resource_providers rp ON rp.${RP.id} = r.root_id
    ORDER BY rp.${RP.name}, rp.${RP.id} LIMIT :limit OFFSET :offset)
SELECT (SELECT count(*) FROM resource_providers), (SELECT count(*) FROM matching), (SELECT count(*) FROM roots),
  (SELECT json_group_array(json(row)) FROM (
    SELECT json_array(p.uuid, p.name, p.generation, parent.${RP.uuid}, root.${RP.uuid}, p.id IN (SELECT ${RP.id} FROM matching),
      json((SELECT json_group_array(json_array(rc.${RC.name}, i.${INV.total}, i.${INV.reserved}, i.${INV.allocationRatio}, ${capacitySql('i')}, ${usedSql('i')}))
        FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId} WHERE i.${INV.resourceProviderId} = p.id)),
      json((SELECT json_group_array(t.${TRAIT.name}) FROM resource_provider_traits rt JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId}
        WHERE rt.${RP_TRAIT.resourceProviderId} = p.id)),
      json((SELECT json_group_array(a.${AGG.uuid}) FROM resource_provider_aggregates ra JOIN placement_aggregates a ON a.${AGG.id} = ra.${RP_AGG.aggregateId}
        WHERE ra.${RP_AGG.resourceProviderId} = p.id))${parts
          .map(
            (part) => `,
      json(${part.jsonSql('p')})`,
          )
          .join('')}) AS row
    FROM page JOIN resource_providers p ON p.root_provider_id = page.root_id
    JOIN resource_providers root ON root.${RP.id} = page.root_id
    LEFT JOIN resource_providers parent ON parent.${RP.id} = p.parent_provider_id
    ORDER BY page.root_name, page.root_id, p.name))`;

// LIMIT -1 keeps the per-inventory rows a streamed co-routine: flattened,
// each inventory's usage would be summed once per reference (three times).
// Capacities are summed as floats and held within the capacity bound: an
// integer sum of huge capacities would overflow (SQLite raises an error).
const CLASS_TOTALS = `SELECT rc.${RC.name}, g.inventories, g.capacity, g.used, g.hot, g.over FROM (
    SELECT ${INV.resourceClassId}, count(*) AS inventories,
      MAX(-${CAPACITY_BOUND}, MIN(${CAPACITY_BOUND}, total(capacity))) AS capacity, sum(used) AS used,
      sum(used * 100.0 > :threshold * capacity) AS hot, sum(used > capacity) AS over
    FROM (SELECT i.${INV.resourceClassId}, ${capacitySql('i')} AS capacity, ${usedSql('i')} AS used
      FROM inventories i ORDER BY i.${INV.resourceClassId} LIMIT -1)
    GROUP BY ${INV.resourceClassId}) g
  JOIN resource_classes rc ON rc.${RC.id} = g.${INV.resourceClassId}
  ORDER BY rc.${RC.name}`;

const PROJECTS_PAGE = `WITH active AS MATERIALIZED (SELECT pr.${PROJECT.id}, pr.${PROJECT.externalId} FROM projects pr
    WHERE EXISTS (SELECT 1 FROM consumers c WHERE c.${CONSUMER.projectId} = pr.${PROJECT.id}))
SELECT (SELECT count(*) FROM active),
  (SELECT json_group_array(json(row)) FROM (
    SELECT json_array(pa.${PROJECT.externalId},
      (SELECT count(*) FROM consumers c WHERE c.${CONSUMER.projectId} = pa.${PROJECT.id}),
      json((SELECT json_group_object(rc.${RC.name}, used) FROM (
        SELECT a.${ALLOC.resourceClassId}, sum(a.${ALLOC.used}) AS used FROM consumers c
        JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid} WHERE c.${CONSUMER.projectId} = pa.${PROJECT.id} GROUP BY a.${ALLOC.resourceClassId}) per
        JOIN resource_classes rc ON rc.${RC.id} = per.${ALLOC.resourceClassId}))) AS row
    FROM (SELECT * FROM active ORDER BY ${PROJECT.externalId} LIMIT :limit OFFSET :offset) pa ORDER BY pa.${PROJECT.externalId}))`;

// Per inventory, its use in percent of capacity (capacity 0 with usage: over
// any threshold); per provider, its worst class. LIMIT -1: as CLASS_TOTALS.
const ATTENTION = `WITH inv AS MATERIALIZED (
    SELECT i.${INV.resourceProviderId} AS id, rc.${RC.name} AS class, i.${INV.total}, i.${INV.reserved}, i.${INV.allocationRatio} AS ratio,
      ${capacitySql('i')} AS capacity, ${usedSql('i')} AS used
    FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId} ORDER BY i.${INV.resourceProviderId} LIMIT -1),
  rated AS (SELECT *, CASE WHEN capacity > 0 THEN used * 100.0 / capacity WHEN used > 0 THEN 1e308 ELSE 0 END AS percent FROM inv),
  worst AS (SELECT id, class, total, reserved, ratio, capacity, used, percent,
      max(used > capacity) OVER (PARTITION BY id) AS over,
      row_number() OVER (PARTITION BY id ORDER BY used > capacity DESC, percent DESC, class) AS rank
    FROM rated),
  hot AS MATERIALIZED (SELECT * FROM worst WHERE rank = 1 AND (over = 1 OR percent > :threshold))
SELECT (SELECT count(*) FROM hot),
  (SELECT json_group_array(json(row)) FROM (
    SELECT json_array(p.${RP.uuid}, p.${RP.name}, CASE WHEN p.${RP.parentProviderId} IS NULL THEN NULL ELSE root.${RP.name} END, h.over,
      h.class, h.total, h.reserved, h.ratio, h.capacity, h.used, min(h.percent, 1e9)) AS row
    FROM hot h JOIN resource_providers p ON p.${RP.id} = h.id JOIN resource_providers root ON root.${RP.id} = p.${RP.rootProviderId}
    ORDER BY h.over DESC, h.percent DESC, p.${RP.name} LIMIT :limit))`;

const ACCELERATOR_COUNTS = `SELECT 'arq', ${ARQ.state}, count(*) FROM accelerator_requests GROUP BY ${ARQ.state}
  UNION ALL SELECT 'outbox', ${OUTBOX.state}, count(*) FROM cyborg_outbox GROUP BY ${OUTBOX.state}
  UNION ALL SELECT 'device', ${DEVICE.status}, count(*) FROM devices GROUP BY ${DEVICE.status}`;

const num = (v: unknown): number => Number(v ?? 0);

type PackedInventory = [string, number, number, number, number, number];
type PackedProvider = [string, string, number, string | null, string, number, PackedInventory[], string[], string[], ...unknown[]];
type PackedProject = [string, number, Record<string, number> | null];
type PackedAttention = [string, string, string | null, number, string, number, number, number, number, number, number];

/** One read batch; `reader` is the store's nearby reader, so a replica answers where one is configured. */
export async function readDashboardSummary(
  reader: BatchReader,
  query: SummaryQuery,
  extensions: DashboardExtensions = { providers: [], sections: [] },
): Promise<DashboardSummary> {
  const parts = extensions.providers;
  const sectionStatements = extensions.sections.map((section) => section.statements(query));
  const { filter } = query;
  const filterArgs: Record<string, InValue> = {
    name: filter.name ? likeSubstring(filter.name) : null,
    name_exact: filter.name ?? null,
    trait: filter.trait ?? null,
    aggregate: filter.aggregate ?? null,
    class: filter.resourceClass ?? null,
    over: filter.overPercent ?? null,
  };
  const [providerSet, classSet, projectSet, acceleratorSet, attentionSet, ...sectionSets] = await reader.readBatch([
    { sql: providersPage(parts), args: { ...filterArgs, limit: query.limit, offset: query.offset } },
    { sql: CLASS_TOTALS, args: { threshold: query.thresholdPercent } },
    { sql: PROJECTS_PAGE, args: { limit: query.projectLimit, offset: query.projectOffset } },
    { sql: ACCELERATOR_COUNTS, args: [] },
    { sql: ATTENTION, args: { threshold: query.thresholdPercent, limit: ATTENTION_LIMIT } },
    ...sectionStatements.flat(),
  ]);
  let next = 0;
  const sections = Object.fromEntries(
    extensions.sections.map((section, i) => [section.key, section.value(sectionSets.slice(next, (next += sectionStatements[i]!.length)))]),
  );

  const head = providerSet!.rows[0]!;
  const packed = JSON.parse(String(head[3] ?? '[]')) as PackedProvider[];
  const providers = packed.map(
    ([uuid, name, generation, parentUuid, rootUuid, matched, inv, traits, aggregates, ...extensions]): ProviderRow => ({
      uuid,
      name,
      generation,
      parentUuid,
      rootUuid,
      matched: matched === 1,
      inventories: inv
        .map(([resourceClass, total, reserved, allocationRatio, capacity, used]) => ({
          resourceClass,
          total,
          reserved,
          allocationRatio,
          capacity,
          used,
        }))
        .sort((a, b) => a.resourceClass.localeCompare(b.resourceClass)),
      traits: traits.sort(),
      aggregates: aggregates.sort(),
      extensions,
    }),
  );

  const classes = classSet!.rows.map(
    (r): ClassTotals => ({
      resourceClass: String(r[0]),
      providers: num(r[1]),
      capacity: num(r[2]),
      used: num(r[3]),
      overThreshold: num(r[4]),
      overCapacity: num(r[5]),
    }),
  );

  const projectHead = projectSet!.rows[0]!;
  const projects = (JSON.parse(String(projectHead[1] ?? '[]')) as PackedProject[]).map(([projectId, consumers, usages]) => ({
    projectId,
    consumers,
    usages: usages ?? {},
  }));

  const counts = { arq: {}, outbox: {}, device: {} } as Record<'arq' | 'outbox' | 'device', Record<string, number>>;
  for (const r of acceleratorSet!.rows) counts[String(r[0]) as keyof typeof counts][String(r[1])] = num(r[2]);

  const attentionHead = attentionSet!.rows[0]!;
  const attention = (JSON.parse(String(attentionHead[1] ?? '[]')) as PackedAttention[]).map(
    ([uuid, name, rootName, over, resourceClass, total, reserved, allocationRatio, capacity, used, percent]): AttentionRow => ({
      uuid,
      name,
      rootName,
      overCapacity: over === 1,
      worst: { resourceClass, total, reserved, allocationRatio, capacity, used, percent },
    }),
  );

  return {
    attention,
    attentionTotal: num(attentionHead[0]),
    totalProviders: num(head[0]),
    matchingProviders: num(head[1]),
    totalTrees: num(head[2]),
    providers,
    classes,
    totalProjects: num(projectHead[0]),
    projects,
    arqsByState: counts.arq,
    outboxByState: counts.outbox,
    devicesByStatus: counts.device,
    sections,
  };
}
