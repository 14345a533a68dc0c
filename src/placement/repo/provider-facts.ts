// What other modules may read of resource providers (the accelerator API
// checks a bind's device provider with it), without knowing placement's
// tables. The reads come as statements for the caller's own read batch, so
// they cost no round trip of their own, with a parser for their results; the
// guard re-checks in the caller's write batch that nothing read has changed.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import { placeholders } from '../../db/write-batch.js';
import { INV, RC, RP, RP_TRAIT, TRAIT } from '../../db/columns.js';

export interface ProviderFacts {
  uuid: string;
  generation: number;
  /** The name of the provider's root (itself when it is a root); null when that root is gone. */
  rootName: string | null;
  /** Resource classes the provider has an inventory of. */
  resourceClasses: Set<string>;
  traits: Set<string>;
}

export interface ProviderFactsRead {
  /** Three statements to put, in this order, in one read batch. */
  statements: InStatement[];
  /** Takes the results of exactly those statements; providers that do not exist are absent. */
  parse(results: ResultSet[]): Map<string, ProviderFacts>;
}

export function readProviderFacts(uuids: string[]): ProviderFactsRead {
  const list = uuids.length > 0 ? placeholders(uuids.length) : 'NULL';
  const statements: InStatement[] = [
    {
      sql: `SELECT p.${RP.uuid}, p.${RP.generation}, r.${RP.name} AS root_name FROM resource_providers p
        LEFT JOIN resource_providers r ON r.${RP.id} = COALESCE(p.${RP.rootProviderId}, p.${RP.id}) WHERE p.${RP.uuid} IN (${list})`,
      args: uuids,
    },
    {
      sql: `SELECT p.${RP.uuid}, rc.${RC.name} FROM inventories i JOIN resource_providers p ON p.${RP.id} = i.${INV.resourceProviderId}
        JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId} WHERE p.${RP.uuid} IN (${list})`,
      args: uuids,
    },
    {
      sql: `SELECT p.${RP.uuid}, t.${TRAIT.name} FROM resource_provider_traits pt JOIN resource_providers p ON p.${RP.id} = pt.${RP_TRAIT.resourceProviderId}
        JOIN traits t ON t.${TRAIT.id} = pt.${RP_TRAIT.traitId} WHERE p.${RP.uuid} IN (${list})`,
      args: uuids,
    },
  ];
  return {
    statements,
    parse([providers, classes, traits]) {
      const facts = new Map<string, ProviderFacts>();
      for (const row of providers!.rows) {
        facts.set(String(row[RP.uuid]), {
          uuid: String(row[RP.uuid]),
          generation: Number(row[RP.generation]),
          rootName: row.root_name === null || row.root_name === undefined ? null : String(row.root_name),
          resourceClasses: new Set(),
          traits: new Set(),
        });
      }
      for (const row of classes!.rows) facts.get(String(row[RP.uuid]))?.resourceClasses.add(String(row[RC.name]));
      for (const row of traits!.rows) facts.get(String(row[RP.uuid]))?.traits.add(String(row[TRAIT.name]));
      return facts;
    },
  };
}

/**
 * An SQL condition, for a write batch's guard, that holds while the provider
 * still has the generation that was read: every change to its inventories or
 * traits bumps the generation (placement's own compare-and-swap).
 */
export function providerUnchanged(facts: Pick<ProviderFacts, 'uuid' | 'generation'>): { sql: string; args: InValue[] } {
  return {
    sql: `EXISTS (SELECT 1 FROM resource_providers WHERE ${RP.uuid} = ? AND ${RP.generation} = ?)`,
    args: [facts.uuid, facts.generation],
  };
}
