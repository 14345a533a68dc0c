// The dashboard summary as JSON: snake_case like the APIs it sits beside,
// provider rows nested into trees.
import type { DashboardProviderPart, DashboardSummary, InventoryUsage, ProviderRow } from '../diagnostics/dashboard-repo.js';
import { DEFAULT_THRESHOLD_PERCENT, type DashboardProviderJson, type SummaryQueryString, type SummaryResponse } from './schema.js';

type PresentedProvider = DashboardProviderJson;

const presentResources = (inventories: InventoryUsage[]): PresentedProvider['resources'] =>
  Object.fromEntries(
    inventories.map((i) => [
      i.resourceClass,
      {
        total: i.total,
        reserved: i.reserved,
        allocation_ratio: i.allocationRatio,
        capacity: i.capacity,
        used: i.used,
        free: i.capacity - i.used,
      },
    ]),
  );

/** Flat rows (roots first, in page order) to nested trees, with what the installed extensions show of each. */
function presentTrees(rows: ProviderRow[], parts: readonly DashboardProviderPart[]): PresentedProvider[] {
  const byUuid = new Map<string, PresentedProvider>();
  for (const r of rows) {
    const shown = parts.map((part, i) => [part.key, part.present(r.extensions[i])] as const);
    byUuid.set(r.uuid, {
      uuid: r.uuid,
      name: r.name,
      generation: r.generation,
      parent_provider_uuid: r.parentUuid,
      matched: r.matched,
      over_capacity: r.inventories.some((i) => i.used > i.capacity) || shown.some(([, s]) => s?.over),
      resources: presentResources(r.inventories),
      traits: r.traits,
      aggregates: r.aggregates,
      ...Object.fromEntries(shown.flatMap(([key, s]) => (s ? [[key, s.value]] : []))),
      children: [],
    });
  }
  const roots: PresentedProvider[] = [];
  for (const r of rows) {
    const node = byUuid.get(r.uuid)!;
    const parent = r.parentUuid ? byUuid.get(r.parentUuid) : undefined;
    if (parent) parent.children.push(node);
    else roots.push(node);
  }
  // By name as the page's SQL orders them (binary), whatever order the JSON aggregate kept.
  const binary = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const byName = (a: PresentedProvider, b: PresentedProvider) => binary(a.name, b.name) || binary(a.uuid, b.uuid);
  for (const node of byUuid.values()) node.children.sort(byName);
  return roots.sort(byName);
}

export function presentSummary(
  s: DashboardSummary,
  q: SummaryQueryString,
  now: Date,
  projectNames: Record<string, string> = {},
  parts: readonly DashboardProviderPart[] = [],
): SummaryResponse {
  const threshold = q.over ?? DEFAULT_THRESHOLD_PERCENT;
  return {
    generated_at: now.toISOString(),
    threshold_percent: threshold,
    attention: {
      total: s.attentionTotal,
      items: s.attention.map((a) => ({
        uuid: a.uuid,
        name: a.name,
        root_name: a.rootName,
        over_capacity: a.overCapacity,
        worst: {
          resource_class: a.worst.resourceClass,
          total: a.worst.total,
          reserved: a.worst.reserved,
          allocation_ratio: a.worst.allocationRatio,
          capacity: a.worst.capacity,
          used: a.worst.used,
          free: a.worst.capacity - a.worst.used,
          percent: Math.round(a.worst.percent * 10) / 10,
        },
      })),
    },
    providers: {
      page: q.page,
      per_page: q.per_page,
      total_providers: s.totalProviders,
      matching_providers: s.matchingProviders,
      total_trees: s.totalTrees,
      trees: presentTrees(s.providers, parts),
    },
    resource_classes: Object.fromEntries(
      s.classes.map((c) => [
        c.resourceClass,
        {
          providers: c.providers,
          capacity: c.capacity,
          used: c.used,
          free: c.capacity - c.used,
          over_threshold: c.overThreshold,
          over_capacity: c.overCapacity,
        },
      ]),
    ),
    projects: {
      page: q.project_page,
      per_page: q.project_per_page,
      total: s.totalProjects,
      items: s.projects.map((p) => ({
        project_id: p.projectId,
        project_name: projectNames[p.projectId] ?? null,
        consumers: p.consumers,
        usages: p.usages,
      })),
    },
    domains: {
      total: s.totalDomains,
      items: s.domains.map((d) => ({ uuid: d.uuid, hosts: d.hosts, free_hosts: d.freeHosts, free_host_names: d.freeHostNames })),
    },
    accelerators: {
      arqs_by_state: s.arqsByState,
      outbox_by_state: s.outboxByState,
      devices_by_status: s.devicesByStatus,
    },
  };
}
export type PresentedSummary = SummaryResponse;
