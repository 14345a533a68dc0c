// What the candidates engine's parts share: the shapes the rules (rules.ts)
// give the search (search.ts) and presentation (present/), the request's name
// lookups (the first statements of every read batch) and the tree-level
// conditions of a request (TreePrefilter), which the SQL prefilter
// (prefilter.ts) and the rules over the model both apply.
import type { InStatement, ResultSet } from '@libsql/client';
import type { InventoryLimits } from '../capacity.js';
import { AGG, RC, RP, TRAIT } from '../../db/columns.js';

export interface Inventory extends InventoryLimits {
  used: number;
}

/** An inventory as provider summaries show it; its usage is looked up in the request's Usage. */
export interface SummaryInventory {
  classId: number;
  className: string;
  capacity: number;
}

/** provider id -> class id -> units allocated (absent: none), as one request read it. */
export type Usage = Map<number, Map<number, number>>;

export const usedOf = (usage: Usage, providerId: number, classId: number): number => usage.get(providerId)?.get(classId) ?? 0;

export function addUsage(usage: Usage, providerId: number, classId: number, used: number): void {
  let perClass = usage.get(providerId);
  if (!perClass) usage.set(providerId, (perClass = new Map()));
  perClass.set(classId, used);
}

export interface ProviderNode {
  id: number;
  uuid: string;
  parentId: number | null;
  rootId: number;
  traits: Set<string>;
  aggregates: Set<number>;
  /** Every inventory of the provider, for provider summaries (usage: the request's Usage). */
  inventories: SummaryInventory[];
  /**
   * The uuid as a JSON string's UTF-8 bytes, encoded once by the trees kept in
   * memory (absent on the SQL engine's nodes, which live one request): the
   * presenter keeps its bytes between answers only for nodes that carry it.
   */
  uuidJson?: Uint8Array;
}

export interface Lookups {
  classIdByName: Map<string, number>;
  traitIdByName: Map<string, number>;
  aggregateIdByUuid: Map<string, number>;
  /** in_tree uuid -> root provider id of that tree. */
  rootIdByProviderUuid: Map<string, number>;
}

export interface CandidateInventories {
  /** provider id -> class id -> inventory, only where some group's amount could fit. */
  byProvider: Map<number, Map<number, Inventory>>;
  rootOf: Map<number, number>;
  /** sharing provider id -> roots of the trees it shares with (its own tree included). */
  anchorsOfSharing: Map<number, Set<number>>;
}

export const SHARES_TRAIT = 'MISC_SHARES_VIA_AGGREGATE';

/** The request's names looked up: four statements of the first read batch, read back by lookupsOf(). */
export function lookupStatements(names: { classes: string[]; traits: string[]; aggregates: string[]; inTree: string[] }): InStatement[] {
  const nameLookup = (sql: string, values: string[]): InStatement => ({ sql, args: { names: JSON.stringify(values) } });
  return [
    nameLookup(
      `SELECT ${RC.id}, ${RC.name} FROM resource_classes WHERE ${RC.name} IN (SELECT value FROM json_each(:names))`,
      names.classes,
    ),
    nameLookup(`SELECT ${TRAIT.id}, ${TRAIT.name} FROM traits WHERE ${TRAIT.name} IN (SELECT value FROM json_each(:names))`, names.traits),
    nameLookup(
      `SELECT ${AGG.id}, ${AGG.uuid} FROM placement_aggregates WHERE ${AGG.uuid} IN (SELECT value FROM json_each(:names))`,
      names.aggregates,
    ),
    nameLookup(
      `SELECT ${RP.uuid}, ${RP.rootProviderId} FROM resource_providers WHERE ${RP.uuid} IN (SELECT value FROM json_each(:names))`,
      names.inTree,
    ),
  ];
}

export function lookupsOf([classes, traits, aggregates, trees]: ResultSet[]): Lookups {
  return {
    classIdByName: new Map(classes!.rows.map((r) => [String(r.name), Number(r.id)])),
    traitIdByName: new Map(traits!.rows.map((r) => [String(r.name), Number(r.id)])),
    aggregateIdByUuid: new Map(aggregates!.rows.map((r) => [String(r.uuid), Number(r.id)])),
    rootIdByProviderUuid: new Map(trees!.rows.map((r) => [String(r.uuid), Number(r.root_provider_id)])),
  };
}

/**
 * Tree-level conditions every usable tree must meet, pushed into SQL so that
 * hopeless trees never leave the database. Each is necessary, never
 * sufficient: the search applies the exact rules. Rows of sharing providers
 * are exempt (their anchor decides), and a trait or aggregate condition that
 * a sharing provider could meet is not applied.
 */
export interface TreePrefilter {
  requiredAnyOf: string[][];
  forbiddenTraits: string[];
  memberOf: string[][];
  rootRequired: string[];
  rootForbidden: string[];
  /**
   * Several groups: their conditions cannot prune trees, but a tree must
   * still offer every requested class that no sharing provider offers.
   */
  everyClassInTree: boolean;
  /**
   * Alternatives (alternatives.ts): the classes of each variant; a tree must
   * offer every class of one of them (that no sharing provider offers).
   * Applied by the rules over the model; the SQL prefilter leaves it to them.
   */
  someClassSetInTree?: string[][];
}
