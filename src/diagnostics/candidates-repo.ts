// Data access for "why no host" (GET /diagnostics/allocation_candidates):
// the starting population (providers with inventory of a requested class,
// with their roots) and the details of one named tree, for the sentence that
// says why it fails. The search itself is the candidate engine's.
import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { capacitySql, type InventoryLimits, usedSql } from '../placement/capacity.js';
import { AGG, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT } from '../db/columns.js';

/** provider uuid -> root provider uuid, for every provider with an inventory of one of `classNames`. */
export async function providersWithClasses(db: Db, classNames: string[]): Promise<Map<string, string>> {
  if (!classNames.length) return new Map();
  const rows = await db.all<{ uuid: string; root_uuid: string }>(sql`
    SELECT DISTINCT p.${sql.raw(RP.uuid)}, root.${sql.raw(RP.uuid)} AS root_uuid
    FROM inventories i
    JOIN resource_classes rc ON rc.${sql.raw(RC.id)} = i.${sql.raw(INV.resourceClassId)}
    JOIN resource_providers p ON p.${sql.raw(RP.id)} = i.${sql.raw(INV.resourceProviderId)}
    JOIN resource_providers root ON root.${sql.raw(RP.id)} = COALESCE(p.${sql.raw(RP.rootProviderId)}, p.${sql.raw(RP.id)})
    WHERE rc.${sql.raw(RC.name)} IN (SELECT value FROM json_each(${JSON.stringify(classNames)}))`);
  return new Map(rows.map((r) => [r.uuid, r.root_uuid]));
}

/** provider uuid -> root uuid for the given providers (those the population query did not cover). */
export async function rootsOf(db: Db, uuids: string[]): Promise<Map<string, string>> {
  if (!uuids.length) return new Map();
  const rows = await db.all<{ uuid: string; root_uuid: string }>(sql`
    SELECT p.${sql.raw(RP.uuid)}, root.${sql.raw(RP.uuid)} AS root_uuid FROM resource_providers p
    JOIN resource_providers root ON root.${sql.raw(RP.id)} = COALESCE(p.${sql.raw(RP.rootProviderId)}, p.${sql.raw(RP.id)})
    WHERE p.${sql.raw(RP.uuid)} IN (SELECT value FROM json_each(${JSON.stringify(uuids)}))`);
  return new Map(rows.map((r) => [r.uuid, r.root_uuid]));
}

export interface NamedTree {
  asked: string;
  uuid: string;
  name: string;
  rootUuid: string;
}

/** Resolves each name or uuid to its provider and tree; unknown ones are left out. */
export async function findProviders(db: Db, namesOrUuids: string[]): Promise<NamedTree[]> {
  if (!namesOrUuids.length) return [];
  const rows = await db.all<{ uuid: string; name: string; root_uuid: string }>(sql`
    SELECT p.${sql.raw(RP.uuid)}, p.${sql.raw(RP.name)}, root.${sql.raw(RP.uuid)} AS root_uuid FROM resource_providers p
    JOIN resource_providers root ON root.${sql.raw(RP.id)} = COALESCE(p.${sql.raw(RP.rootProviderId)}, p.${sql.raw(RP.id)})
    WHERE p.${sql.raw(RP.uuid)} IN (SELECT value FROM json_each(${JSON.stringify(namesOrUuids)}))
       OR p.${sql.raw(RP.name)} IN (SELECT value FROM json_each(${JSON.stringify(namesOrUuids)}))`);
  const out: NamedTree[] = [];
  for (const asked of namesOrUuids) {
    const row = rows.find((r) => r.uuid === asked.toLowerCase() || r.name === asked);
    if (row) out.push({ asked, uuid: row.uuid, name: row.name, rootUuid: row.root_uuid });
  }
  return out;
}

export interface TreeInventory extends InventoryLimits {
  resourceClass: string;
  capacity: number;
  used: number;
}

export interface TreeProvider {
  uuid: string;
  name: string;
  isRoot: boolean;
  traits: Set<string>;
  aggregates: Set<string>;
  inventories: TreeInventory[];
}

/** Every provider of the tree rooted at `rootUuid`, with traits, aggregate uuids and inventories with usage. */
export async function treeDetails(db: Db, rootUuid: string): Promise<TreeProvider[]> {
  const providers = await db.all<{
    id: number;
    uuid: string;
    name: string;
    is_root: number;
    traits: string | null;
    aggs: string | null;
  }>(sql`
    SELECT p.${sql.raw(RP.id)}, p.${sql.raw(RP.uuid)}, p.${sql.raw(RP.name)}, p.${sql.raw(RP.id)} = root.${sql.raw(RP.id)} AS is_root,
      (SELECT group_concat(t.${sql.raw(TRAIT.name)}) FROM resource_provider_traits rt JOIN traits t ON t.${sql.raw(TRAIT.id)} = rt.${sql.raw(RP_TRAIT.traitId)}
        WHERE rt.${sql.raw(RP_TRAIT.resourceProviderId)} = p.${sql.raw(RP.id)}) AS traits,
      (SELECT group_concat(pa.${sql.raw(AGG.uuid)}) FROM resource_provider_aggregates ra JOIN placement_aggregates pa ON pa.${sql.raw(AGG.id)} = ra.${sql.raw(RP_AGG.aggregateId)}
        WHERE ra.${sql.raw(RP_AGG.resourceProviderId)} = p.${sql.raw(RP.id)}) AS aggs
    FROM resource_providers root JOIN resource_providers p ON COALESCE(p.${sql.raw(RP.rootProviderId)}, p.${sql.raw(RP.id)}) = root.${sql.raw(RP.id)}
    WHERE root.${sql.raw(RP.uuid)} = ${rootUuid}
    ORDER BY p.${sql.raw(RP.id)}`);
  const inventories = await db.all<{
    provider_id: number;
    rc: string;
    total: number;
    reserved: number;
    min_unit: number;
    max_unit: number;
    step_size: number;
    allocation_ratio: number;
    capacity: number;
    used: number;
  }>(sql`
    SELECT i.${sql.raw(INV.resourceProviderId)} AS provider_id, rc.${sql.raw(RC.name)} AS rc, i.${sql.raw(INV.total)}, i.${sql.raw(INV.reserved)}, i.${sql.raw(INV.minUnit)}, i.${sql.raw(INV.maxUnit)}, i.${sql.raw(INV.stepSize)},
      i.${sql.raw(INV.allocationRatio)}, ${sql.raw(capacitySql('i'))} AS capacity, ${sql.raw(usedSql('i'))} AS used
    FROM resource_providers root JOIN resource_providers p ON COALESCE(p.${sql.raw(RP.rootProviderId)}, p.${sql.raw(RP.id)}) = root.${sql.raw(RP.id)}
    JOIN inventories i ON i.${sql.raw(INV.resourceProviderId)} = p.${sql.raw(RP.id)} JOIN resource_classes rc ON rc.${sql.raw(RC.id)} = i.${sql.raw(INV.resourceClassId)}
    WHERE root.${sql.raw(RP.uuid)} = ${rootUuid}`);
  const byId = new Map(
    providers.map((p) => [
      p.id,
      {
        uuid: p.uuid,
        name: p.name,
        isRoot: Boolean(p.is_root),
        traits: new Set(p.traits ? p.traits.split(',') : []),
        aggregates: new Set(p.aggs ? p.aggs.split(',') : []),
        inventories: [] as TreeInventory[],
      },
    ]),
  );
  for (const i of inventories) {
    byId.get(i.provider_id)?.inventories.push({
      resourceClass: i.rc,
      total: i.total,
      reserved: i.reserved,
      minUnit: i.min_unit,
      maxUnit: i.max_unit,
      stepSize: i.step_size,
      allocationRatio: i.allocation_ratio,
      capacity: Number(i.capacity),
      used: Number(i.used),
    });
  }
  return [...byId.values()];
}
