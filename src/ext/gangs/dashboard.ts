// Gang domains on the capacity dashboard (docs/gangs.md): per aggregate, its
// hosts (root members that are not sharing providers, MISC_SHARES_VIA_AGGREGATE)
// and how many are free (no provider of the tree holds an allocation), most
// free first. A DashboardSection of diagnostics/dashboard-repo.ts, read in the
// summary's one batch, checked where the extension object names it.
import type { ResultSet } from '@libsql/client';
import * as z from 'zod';
import type { DashboardPanel } from '../../diagnostics/dashboard-repo.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { AGG, ALLOC, RP, RP_AGG, RP_TRAIT, TRAIT } from '../../db/columns.js';

/** Domains listed (most free hosts first) and free host names per domain. */
const DOMAIN_LIMIT = 50;
const DOMAIN_HOST_NAMES = 20;

const DOMAINS = `WITH hosts AS MATERIALIZED (
    SELECT a.${AGG.uuid} AS agg, r.${RP.name} AS name,
      NOT EXISTS (SELECT 1 FROM allocations al JOIN resource_providers p ON p.${RP.id} = al.${ALLOC.resourceProviderId}
        WHERE p.${RP.rootProviderId} = r.${RP.id}) AS free
    FROM resource_provider_aggregates ra JOIN placement_aggregates a ON a.${AGG.id} = ra.${RP_AGG.aggregateId}
    JOIN resource_providers r ON r.${RP.id} = ra.${RP_AGG.resourceProviderId}
    WHERE r.${RP.rootProviderId} = r.${RP.id} AND NOT EXISTS (SELECT 1 FROM resource_provider_traits rt
      JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId}
      WHERE rt.${RP_TRAIT.resourceProviderId} = r.${RP.id} AND t.${TRAIT.name} = 'MISC_SHARES_VIA_AGGREGATE')),
  domains AS MATERIALIZED (SELECT agg, count(*) AS hosts, sum(free) AS free FROM hosts GROUP BY agg)
SELECT (SELECT count(*) FROM domains),
  (SELECT json_group_array(json(row)) FROM (
    SELECT json_array(d.agg, d.hosts, d.free,
      json((SELECT json_group_array(name) FROM (SELECT h.name FROM hosts h WHERE h.agg = d.agg AND h.free ORDER BY h.name LIMIT :names)))) AS row
    FROM domains d ORDER BY d.free DESC, d.agg LIMIT :limit))`;

const count = z.number().int();

/** Its panel on the dashboard page: aggregates as gang domains, from the summary's `domains` section (dashboard-assets/domains.js fills it). */
export const gangsPanel: DashboardPanel = {
  slot: 'columns',
  html: `  <section class="panel" id="domains-panel">
    <h2>Gang domains <span class="muted small" id="domains-count"></span></h2>
    <div id="domains"></div>
  </section>`,
};

export const gangsDashboard = {
  panels: [gangsPanel],
  assets: DASHBOARD_ASSETS,
  sections: [
    {
      key: 'domains',
      schema: z
        .object({
          total: count.describe('aggregates with at least one host (a root provider that is not a sharing provider) as member'),
          items: z.array(
            z.object({
              uuid: z.string().describe("the aggregate's uuid"),
              hosts: count,
              free_hosts: count.describe('hosts with no allocation anywhere in their tree'),
              free_host_names: z.array(z.string()).describe('the free hosts by name, at most 20'),
            }),
          ),
        })
        .describe('gang domains (docs/gangs.md), most free hosts first, at most 50'),
      statements: () => [{ sql: DOMAINS, args: { limit: DOMAIN_LIMIT, names: DOMAIN_HOST_NAMES } }],
      value: ([domains]: ResultSet[]) => {
        const head = domains!.rows[0]!;
        const items = JSON.parse(String(head[1] ?? '[]')) as [string, number, number, string[]][];
        return {
          total: Number(head[0] ?? 0),
          items: items.map(([uuid, hosts, freeHosts, names]) => ({ uuid, hosts, free_hosts: freeHosts, free_host_names: names })),
        };
      },
    },
  ],
};
