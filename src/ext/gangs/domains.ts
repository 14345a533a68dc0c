// What gangs read besides the candidates engine's answer: which aggregates
// hold which host roots (a domain is an aggregate; a host is in it when its
// root provider is), and, for the providers a candidate uses, their root and
// whether they are sharing providers (MISC_SHARES_VIA_AGGREGATE), so each
// candidate is tied to the one host tree it runs on. Two read statements.
import type { BatchReader } from '../../db/client.js';
import { AGG, RP, RP_AGG, RP_TRAIT, TRAIT } from '../../db/columns.js';

export interface ProviderFacts {
  /** Root provider uuid of the provider. */
  root: string;
  /** The provider carries MISC_SHARES_VIA_AGGREGATE: it serves other trees, it is no host. */
  sharing: boolean;
}

export interface DomainFacts {
  /** Aggregate uuid -> root provider uuids that are members, for the domains asked (all when none named). */
  rootsOf: Map<string, Set<string>>;
  /** Provider uuid -> its facts, for the providers asked. */
  providers: Map<string, ProviderFacts>;
}

/**
 * Reads the domains (`only`: these aggregate uuids; null: every aggregate
 * with a root member) and the facts of `providerUuids`, in one read batch.
 */
export async function readDomainFacts(
  reader: BatchReader,
  only: readonly string[] | null,
  providerUuids: readonly string[],
): Promise<DomainFacts> {
  const [members, facts] = await reader.readBatch([
    {
      sql: `SELECT a.${AGG.uuid} AS agg, r.${RP.uuid} AS root FROM resource_provider_aggregates ra
        JOIN placement_aggregates a ON a.${AGG.id} = ra.${RP_AGG.aggregateId}
        JOIN resource_providers r ON r.${RP.id} = ra.${RP_AGG.resourceProviderId}
        WHERE r.${RP.rootProviderId} = r.${RP.id}${only ? ` AND a.${AGG.uuid} IN (SELECT value FROM json_each(?))` : ''}
        ORDER BY a.${AGG.uuid}, r.${RP.uuid}`,
      args: only ? [JSON.stringify(only)] : [],
    },
    {
      sql: `SELECT p.${RP.uuid} AS uuid, r.${RP.uuid} AS root, EXISTS (SELECT 1 FROM resource_provider_traits pt
          JOIN traits t ON t.${TRAIT.id} = pt.${RP_TRAIT.traitId}
          WHERE pt.${RP_TRAIT.resourceProviderId} = p.${RP.id} AND t.${TRAIT.name} = 'MISC_SHARES_VIA_AGGREGATE') AS sharing
        FROM resource_providers p JOIN resource_providers r ON r.${RP.id} = p.${RP.rootProviderId}
        WHERE p.${RP.uuid} IN (SELECT value FROM json_each(?))`,
      args: [JSON.stringify(providerUuids)],
    },
  ]);
  const rootsOf = new Map<string, Set<string>>();
  for (const row of members!.rows) {
    const agg = String(row.agg);
    let roots = rootsOf.get(agg);
    if (!roots) rootsOf.set(agg, (roots = new Set()));
    roots.add(String(row.root));
  }
  const providers = new Map<string, ProviderFacts>();
  for (const row of facts!.rows) providers.set(String(row.uuid), { root: String(row.root), sharing: Number(row.sharing) === 1 });
  return { rootsOf, providers };
}
