// What other modules may read of resource providers (the accelerator API
// checks a bind's device provider with it), without knowing placement's
// tables. The reads come as statements for the caller's own read batch, so
// they cost no round trip of their own, with a parser for their results; the
// guard re-checks in the caller's write batch that nothing read has changed.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import { placeholders } from '../../db/write-batch.js';

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
      sql: `SELECT p.uuid, p.generation, r.name AS root_name FROM resource_providers p
        LEFT JOIN resource_providers r ON r.id = COALESCE(p.root_provider_id, p.id) WHERE p.uuid IN (${list})`,
      args: uuids,
    },
    {
      sql: `SELECT p.uuid, rc.name FROM inventories i JOIN resource_providers p ON p.id = i.resource_provider_id
        JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE p.uuid IN (${list})`,
      args: uuids,
    },
    {
      sql: `SELECT p.uuid, t.name FROM resource_provider_traits pt JOIN resource_providers p ON p.id = pt.resource_provider_id
        JOIN traits t ON t.id = pt.trait_id WHERE p.uuid IN (${list})`,
      args: uuids,
    },
  ];
  return {
    statements,
    parse([providers, classes, traits]) {
      const facts = new Map<string, ProviderFacts>();
      for (const row of providers!.rows) {
        facts.set(String(row.uuid), {
          uuid: String(row.uuid),
          generation: Number(row.generation),
          rootName: row.root_name === null || row.root_name === undefined ? null : String(row.root_name),
          resourceClasses: new Set(),
          traits: new Set(),
        });
      }
      for (const row of classes!.rows) facts.get(String(row.uuid))?.resourceClasses.add(String(row.name));
      for (const row of traits!.rows) facts.get(String(row.uuid))?.traits.add(String(row.name));
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
    sql: 'EXISTS (SELECT 1 FROM resource_providers WHERE uuid = ? AND generation = ?)',
    args: [facts.uuid, facts.generation],
  };
}
