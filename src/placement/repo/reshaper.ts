// POST /reshaper: inventories and allocations moved across providers in ONE
// write transaction, as placement/objects/reshaper.py. Inventory changes
// happen in two steps because allocations cannot sit on missing inventory
// and inventory with allocations cannot be removed: first an interim
// inventory (old classes kept, new ones added or updated), then the
// allocations, then the final inventory.
import { DomainError, ErrorCode } from '../../errors.js';
import type { Db } from '../../db/client.js';
import { replaceAllocations, type ClaimOptions, type ConsumerClaim } from './allocations.js';
import { listInventories, replaceInventories, reservedCapacityProblem, type InventoryInput } from './inventories.js';
import { bumpGeneration, findProvider, providerNotFound, resourceClassIdsByName, type ProviderRow } from './lookups.js';

export interface ProviderInventoryChange {
  providerUuid: string;
  /** The caller's view of the provider generation: checked before anything is written. */
  generation: number;
  /** The provider's whole desired inventory, by resource class name. */
  records: Record<string, InventoryInput>;
}

export interface ReshapeRequest {
  inventories: ProviderInventoryChange[];
  claims: ConsumerClaim[];
}

/** Thrown for a resource class that does not exist in the inventories (400 "malformed reshaper data"). */
export class UnknownResourceClass extends Error {
  constructor(readonly resourceClass: string) {
    super(`No such resource class ${resourceClass}.`);
    this.name = 'UnknownResourceClass';
  }
}

async function currentProvider(tx: Db, uuid: string): Promise<ProviderRow> {
  const rp = await findProvider(tx, uuid);
  if (!rp) throw providerNotFound(uuid);
  return rp;
}

/** Replaces a provider's inventory and bumps its generation (compare-and-swap). */
async function setInventory(tx: Db, uuid: string, records: Record<string, InventoryInput>, now: string): Promise<void> {
  const rp = await currentProvider(tx, uuid);
  await replaceInventories(tx, rp, records, now);
  await bumpGeneration(tx, rp.id, rp.generation, now);
}

export interface ReshapeOptions extends ClaimOptions {
  /** 1.26+: reserved may equal total. */
  reservedMayEqualTotal: boolean;
}

export async function reshape(tx: Db, request: ReshapeRequest, opts: ReshapeOptions): Promise<void> {
  // Every provider must exist (400 resource_provider.not_found) at the generation the caller saw.
  for (const change of request.inventories) {
    const rp = await findProvider(tx, change.providerUuid);
    if (!rp) {
      throw new DomainError('invalid', `Resource provider ${change.providerUuid} in inventories not found: No resource provider with uuid ${change.providerUuid} found`, ErrorCode.PROVIDER_NOT_FOUND);
    }
    if (rp.generation !== change.generation) {
      throw new DomainError('conflict', `resource provider generation conflict for provider ${rp.uuid}: actual: ${rp.generation}, given: ${change.generation}`, ErrorCode.CONCURRENT_UPDATE);
    }
    const problem = reservedCapacityProblem(rp, change.records, opts.reservedMayEqualTotal);
    if (problem) throw new DomainError('invalid', problem);
  }
  const classNames = [...new Set(request.inventories.flatMap((ch) => Object.keys(ch.records)))];
  const known = await resourceClassIdsByName(tx, classNames);
  const unknown = classNames.find((name) => !known.has(name));
  if (unknown) throw new UnknownResourceClass(unknown);

  // Interim inventory: current classes overlaid with the requested ones.
  for (const change of request.inventories) {
    if (Object.keys(change.records).length === 0) continue;
    const rp = await currentProvider(tx, change.providerUuid);
    const union: Record<string, InventoryInput> = {};
    for (const inv of await listInventories(tx, rp.id)) {
      union[inv.resourceClass] = {
        total: inv.total, reserved: inv.reserved, minUnit: inv.minUnit, maxUnit: inv.maxUnit,
        stepSize: inv.stepSize, allocationRatio: inv.allocationRatio,
      };
    }
    Object.assign(union, change.records);
    await setInventory(tx, rp.uuid, union, opts.now);
  }

  await replaceAllocations(tx, request.claims, opts);

  // Final inventory, exactly as requested: removing a class still allocated is 409 inuse.
  for (const change of request.inventories) await setInventory(tx, change.providerUuid, change.records, opts.now);
}
