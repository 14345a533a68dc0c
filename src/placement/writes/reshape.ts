// POST /reshaper in the write model (kernel.ts): inventories and allocations
// moved across providers at once, decided from ONE snapshot against the claim
// rules of claims.ts and written in ONE guarded batch.
import { commitGuarded } from '../../db/write-batch.js';
import type { ConsumerClaim } from '../repo/allocations.js';
import { reservedCapacityProblem, type InventoryInput } from '../repo/inventories.js';
import { claimedNames, dropEmptyConsumers, everyBatchGuards, inventoryIndex, planClaims, type ClaimOptions } from './claims.js';
import { assertInventoryNotInUse, replaceInventoryStatements } from './inventories.js';
import { GenerationPlan, key, placementWrite, readSnapshot, type WriteDeps } from './kernel.js';
import { stillInUse } from './rules.js';
import { InvalidInventoryInput, InventoryProviderMissing, ProviderGenerationMismatch, UnknownResourceClass } from './refusals.js';

export interface ProviderInventoryChange {
  providerUuid: string;
  /** The caller's view of the provider generation. */
  generation: number;
  /** The provider's whole desired inventory, by resource class name. */
  records: Record<string, InventoryInput>;
}

export interface ReshapeRequest {
  inventories: ProviderInventoryChange[];
  claims: ConsumerClaim[];
}

export interface ReshapeOptions extends Omit<ClaimOptions, 'endpoint'> {
  /** 1.26+: reserved may equal total. */
  reservedMayEqualTotal: boolean;
}

/**
 * POST /reshaper: inventories and allocations moved across providers at
 * once, as placement/objects/reshaper.py. Upstream writes an interim
 * inventory (old classes kept, new ones added), then the allocations, then
 * the final inventory; here the same three steps are decided in memory
 * (the claims checked against the interim inventory, the final one against
 * the usage the claims leave) and written in one batch. Each provider's
 * generation moves as upstream's three steps move it.
 */
export async function reshape(deps: WriteDeps, request: ReshapeRequest, opts: ReshapeOptions): Promise<void> {
  const { store, writeHooks } = deps;
  const claimed = claimedNames(request.claims);
  const providerUuids = [...new Set([...request.inventories.map((c) => c.providerUuid), ...claimed.providers])];
  const classNames = [...new Set([...request.inventories.flatMap((c) => Object.keys(c.records)), ...claimed.classes])];
  const consumerUuids = request.claims.map((c) => c.uuid);
  await placementWrite(async () => {
    const snap = await readSnapshot(store, providerUuids, consumerUuids, classNames, writeHooks);
    // Every provider exists at the generation the caller saw, with sane input.
    for (const change of request.inventories) {
      const rp = snap.providers.get(change.providerUuid);
      if (!rp) throw new InventoryProviderMissing(change.providerUuid);
      if (rp.generation !== change.generation) throw new ProviderGenerationMismatch(rp.uuid, rp.generation, change.generation);
      const problem = reservedCapacityProblem(rp, change.records, opts.reservedMayEqualTotal);
      if (problem) throw new InvalidInventoryInput(problem);
    }
    const inventoryClasses = [...new Set(request.inventories.flatMap((ch) => Object.keys(ch.records)))];
    const unknown = inventoryClasses.find((name) => !snap.classIds.has(name));
    if (unknown) throw new UnknownResourceClass(unknown, 'reshaper');

    // Interim inventory: current classes overlaid with the requested ones.
    const gens = new GenerationPlan();
    const interim = inventoryIndex(snap.inventories);
    const usedNow = new Map(snap.inventories.map((i) => [key(i.providerId, i.classId), i.used]));
    for (const change of request.inventories) {
      if (Object.keys(change.records).length === 0) continue;
      const rp = snap.providers.get(change.providerUuid)!;
      for (const [rc, input] of Object.entries(change.records)) {
        const classId = snap.classIds.get(rc)!;
        const k = key(rp.id, classId);
        interim.set(k, { ...input, providerId: rp.id, classId, resourceClass: rc, used: usedNow.get(k) ?? 0 });
      }
      gens.bump(rp);
    }

    const { statements, usageAfter } = planClaims(deps, snap, request.claims, interim, gens, { ...opts, endpoint: 'reshaper' });

    // Final inventory, exactly as requested: removing a class still allocated is 409 inuse.
    const { now } = opts;
    for (const change of request.inventories) {
      const rp = snap.providers.get(change.providerUuid)!;
      const wanted = new Set(Object.keys(change.records).map((rc) => snap.classIds.get(rc)!));
      const current = [...interim.values()].filter((i) => i.providerId === rp.id);
      const removed = current.filter((i) => !wanted.has(i.classId)).sort((a, b) => a.classId - b.classId);
      assertInventoryNotInUse(
        rp.uuid,
        removed.filter((i) => stillInUse(usageAfter.get(key(rp.id, i.classId)) ?? 0)),
        'update conflict',
      );
      const records = Object.entries(change.records).map(([rc, input]) => ({ classId: snap.classIds.get(rc)!, input }));
      statements.push(...replaceInventoryStatements(rp.id, removed, records, now));
      gens.bump(rp);
    }
    await commitGuarded(store, [
      ...statements,
      ...gens.statements(now),
      ...everyBatchGuards(writeHooks, consumerUuids),
      ...dropEmptyConsumers(consumerUuids),
    ]);
  });
}
