// The changes a simulation applies to its copy of the cloud (world.ts), each
// checked as the real request that would make it is: a provider that does
// not exist is 404 as GET /resource_providers/{uuid} answers, an unknown
// class or trait 400 with placement's words, and a change that names nothing
// (a selector matching no provider, a resize matching no consumer) 400; a
// hold or a gang as POST /ext/holds or POST /ext/gangs answers (hold-changes.ts).
import * as z from 'zod';
import { invalid, notFound } from '../../errors.js';
import { TAINT_KEY } from '../taints/params.js';
import { SHARES_TRAIT } from '../../placement/candidates/cloud-model.js';
import { postGangSchema } from '../gangs/schemas.js';
import { postHoldRequestSchema } from '../holds/schemas.js';
import { addGang, addHold, countHolds, type HeldChangeContext } from './hold-changes.js';
import { reservedCapacityProblem } from '../../placement/repo/inventories.js';
import { MV } from '../../placement/versions.js';
import { type AllocationsBody, allocationsBody, amountsOf, type World, type WorldConsumer, type WorldProvider } from './world.js';

const MAX_INT = 2_147_483_647;
const SQL_SP_FLOAT_MAX = 3.40282e38;
const providerRef = z.string().min(1).max(255);
const resources = z.record(z.string().min(1).max(255), z.int().min(1).max(MAX_INT));

/** Which providers a change applies to: named ones (uuid or name), the members of an aggregate, or those with a trait. */
const selector = {
  providers: z.array(providerRef).min(1).max(10_000).optional(),
  aggregate: z.string().min(1).max(64).optional(),
  trait: z.string().min(1).max(255).optional(),
};

export const changeSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('add_copies'), of: providerRef, count: z.int().min(1).max(10_000) }),
  z.strictObject({ op: z.literal('remove_trees'), providers: z.array(providerRef).min(1).max(10_000) }),
  z.strictObject({
    op: z.literal('set_inventory'),
    ...selector,
    resource_class: z.string().min(1).max(255),
    total: z.int().min(1).max(MAX_INT).optional(),
    reserved: z.int().min(0).max(MAX_INT).optional(),
    allocation_ratio: z.number().gt(0).max(SQL_SP_FLOAT_MAX).optional(),
  }),
  z.strictObject({ op: z.literal('taint'), ...selector, key: z.string().regex(TAINT_KEY).max(316) }),
  z.strictObject({ op: z.literal('resize'), from: resources, to: resources }),
  z.strictObject({ op: z.literal('remove_consumers'), consumers: z.array(z.string().min(1).max(64)).min(1).max(10_000) }),
  // POST /ext/holds' and POST /ext/gangs' own bodies.
  z.strictObject({ op: z.literal('add_hold'), hold: postHoldRequestSchema }),
  z.strictObject({ op: z.literal('add_gang'), gang: postGangSchema }),
]);
export type Change = z.infer<typeof changeSchema>;

/** What a change touched, for the answer. */
export interface ChangeReport {
  op: Change['op'];
  /** Providers (or consumers, for resize and remove_consumers) the change applied to. */
  matched: number;
  /** add_copies: each copy's providers, source uuid -> new uuid (the root's first). */
  copies?: Record<string, string>[];
  /** resize: consumers left as they were because a class of theirs is spread over several providers. */
  skipped?: string[];
  /** add_hold: the simulated hold (a query's pick pinned). */
  hold?: { uuid: string; allocations: AllocationsBody };
  /** add_gang: its members, and its lease's expiry. */
  gang?: { consumers: string[]; expires_at?: string };
}

/** A consumer that lost its place: its tree was removed, or a change made it no longer fit (reported by the simulation). */
export interface RemovedPlacement {
  consumer_uuid: string;
  from: AllocationsBody;
  reason: 'tree_removed' | 'consumer_removed';
}

const named = (what: string) => invalid(`change names nothing: ${what}`);

function providerByRef(world: World, ref: string): WorldProvider {
  for (const p of world.providers.values()) if (p.uuid === ref || p.name === ref) return p;
  throw notFound(`No resource provider with uuid ${ref} found`);
}

function selected(world: World, change: { providers?: string[]; aggregate?: string; trait?: string }, index: number): WorldProvider[] {
  const given = [change.providers, change.aggregate, change.trait].filter((v) => v !== undefined).length;
  if (given !== 1) throw invalid(`change ${index}: name exactly one of 'providers', 'aggregate' or 'trait'`);
  if (change.providers) return change.providers.map((ref) => providerByRef(world, ref));
  if (change.trait !== undefined) {
    if (!world.traitIdByName.has(change.trait)) throw invalid(`No such trait(s): ${change.trait}.`);
    return [...world.providers.values()].filter((p) => p.traits.includes(change.trait!));
  }
  const aggregateId = world.aggregateIdByUuid.get(change.aggregate!);
  return aggregateId === undefined ? [] : [...world.providers.values()].filter((p) => p.aggregates.includes(aggregateId));
}

function classId(world: World, name: string): number {
  const id = world.classIdByName.get(name);
  if (id === undefined) throw invalid(`No such resource class ${name}.`);
  return id;
}

/** Applies the changes in order to `world` (a copy); returns what each touched and the placements it took away. */
export async function applyChanges(
  world: World,
  changes: readonly Change[],
  held: HeldChangeContext,
): Promise<{ reports: ChangeReport[]; removed: RemovedPlacement[] }> {
  const { mv } = held;
  const reports: ChangeReport[] = [];
  const removed: RemovedPlacement[] = [];
  let nextId = Math.max(0, ...world.providers.keys()) + 1;
  for (const [index, change] of changes.entries()) {
    switch (change.op) {
      case 'add_copies': {
        const source = providerByRef(world, change.of);
        const tree = [...world.providers.values()].filter((p) => p.rootId === source.rootId).sort((a, b) => a.id - b.id);
        const copies: Record<string, string>[] = [];
        for (let n = 0; n < change.count; n += 1) {
          const idOf = new Map<number, number>();
          const uuids: Record<string, string> = {};
          // The root first, then in id order: a copy's ids keep the source tree's order.
          const ordered = [tree.find((p) => p.id === source.rootId)!, ...tree.filter((p) => p.id !== source.rootId)];
          for (const p of ordered) idOf.set(p.id, nextId++);
          for (const p of ordered) {
            const uuid = crypto.randomUUID();
            uuids[p.uuid] = uuid;
            world.providers.set(idOf.get(p.id)!, {
              ...p,
              id: idOf.get(p.id)!,
              uuid,
              name: `${p.name} (copy ${n + 1}: ${uuid})`,
              generation: 0,
              parentId: p.parentId === null ? null : idOf.get(p.parentId)!,
              rootId: idOf.get(p.rootId)!,
              inventories: p.inventories.map((i) => ({ ...i })),
            });
          }
          copies.push(uuids);
        }
        reports.push({ op: change.op, matched: tree.length, copies });
        break;
      }
      case 'remove_trees': {
        const roots = new Set(change.providers.map((ref) => providerByRef(world, ref).rootId));
        const gone = new Set([...world.providers.values()].filter((p) => roots.has(p.rootId)).map((p) => p.id));
        // A consumer with any allocation on a removed tree must be placed again whole (as DELETE /allocations/{consumer} before the delete).
        for (const consumer of world.consumers.values()) {
          if (!consumer.allocations.some((a) => gone.has(a.providerId))) continue;
          removed.push({ consumer_uuid: consumer.uuid, from: allocationsBody(world, consumer.allocations), reason: 'tree_removed' });
          consumer.allocations = [];
          forget(consumer);
        }
        for (const id of gone) {
          world.providers.delete(id);
          world.taints.delete(id);
        }
        reports.push({ op: change.op, matched: gone.size });
        break;
      }
      case 'set_inventory': {
        const cls = classId(world, change.resource_class);
        const providers = selected(world, change, index);
        let matched = 0;
        for (const p of providers) {
          const inv = p.inventories.find((i) => i.classId === cls);
          if (!inv) {
            // Named directly: as PUT /resource_providers/{uuid}/inventories/{class} on a class the provider lacks.
            if (change.providers) throw invalid(`No inventory of class ${change.resource_class} found for resource provider ${p.uuid}`);
            continue;
          }
          const next = { ...inv, total: change.total ?? inv.total, reserved: change.reserved ?? inv.reserved };
          // As PUT /resource_providers/{uuid}/inventories/{class} words it, per microversion.
          const problem = reservedCapacityProblem(p, { [change.resource_class]: next }, mv.atLeast(MV.RESERVED_EQUALS_TOTAL));
          if (problem) throw invalid(`Unable to update inventory for resource provider ${p.uuid}: ${problem}`);
          inv.total = next.total;
          inv.reserved = next.reserved;
          if (change.allocation_ratio !== undefined) inv.allocationRatio = change.allocation_ratio;
          matched += 1;
        }
        if (matched === 0) throw named(`change ${index} (set_inventory) matches no provider with ${change.resource_class}`);
        reports.push({ op: change.op, matched });
        break;
      }
      case 'taint': {
        const providers = selected(world, change, index);
        if (providers.length === 0) throw named(`change ${index} (taint) matches no provider`);
        for (const p of providers) {
          const keys = world.taints.get(p.id) ?? [];
          if (!keys.includes(change.key)) world.taints.set(p.id, [...keys, change.key]);
        }
        reports.push({ op: change.op, matched: providers.length });
        break;
      }
      case 'resize': {
        const from = new Map(Object.entries(change.from).map(([name, amount]) => [classId(world, name), amount]));
        const to = new Map(Object.entries(change.to).map(([name, amount]) => [classId(world, name), amount]));
        let matched = 0;
        const skipped: string[] = [];
        for (const consumer of world.consumers.values()) {
          const amounts = amountsOf(world, consumer);
          if (amounts.size !== from.size || [...from].some(([cls, amount]) => amounts.get(nameOf(world, cls)) !== amount)) continue;
          // A class the flavor gains goes to the provider of its first allocation (the host the consumer runs on).
          const perClass = new Map<number, number>();
          for (const a of consumer.allocations) perClass.set(a.classId, (perClass.get(a.classId) ?? 0) + 1);
          if ([...perClass.values()].some((n) => n > 1)) {
            skipped.push(consumer.uuid);
            continue;
          }
          const host = consumer.allocations[0]!.providerId;
          const next = consumer.allocations.flatMap((a) => (to.has(a.classId) ? [{ ...a, used: to.get(a.classId)! }] : []));
          for (const [cls, amount] of to) if (!perClass.has(cls)) next.push({ providerId: host, classId: cls, used: amount });
          consumer.allocations = next;
          matched += 1;
        }
        if (matched === 0 && skipped.length === 0)
          throw named(`change ${index} (resize) matches no consumer holding exactly ${JSON.stringify(change.from)}`);
        reports.push({ op: change.op, matched, ...(skipped.length ? { skipped } : {}) });
        break;
      }
      case 'remove_consumers': {
        for (const uuid of change.consumers) {
          const consumer = world.consumers.get(uuid);
          if (!consumer || consumer.allocations.length === 0) throw notFound(`No allocations for consumer '${uuid}'`);
          removed.push({ consumer_uuid: uuid, from: allocationsBody(world, consumer.allocations), reason: 'consumer_removed' });
          consumer.allocations = [];
          forget(consumer);
        }
        reports.push({ op: change.op, matched: change.consumers.length });
        break;
      }
      case 'add_hold': {
        const hold = await addHold(world, change.hold, held);
        reports.push({ op: change.op, matched: Object.keys(hold.allocations).length, hold });
        break;
      }
      case 'add_gang': {
        const gang = addGang(world, change.gang, held);
        reports.push({ op: change.op, matched: gang.consumers.length, gang });
        break;
      }
    }
    // Each change may move what the holds' declaration counts (a capacity, a hold, a draw): counted again over the copy.
    await countHolds(world, held);
  }
  return { reports, removed };
}

/** A consumer left without allocations is deleted: its lease and draw go with it (their triggers). */
function forget(consumer: WorldConsumer): void {
  consumer.leased = false;
  consumer.leaseEndsAtMs = null;
  consumer.drawnFrom = null;
}

function nameOf(world: World, cls: number): string {
  for (const [name, id] of world.classIdByName) if (id === cls) return name;
  return String(cls);
}

export const isSharing = (p: WorldProvider): boolean => p.traits.includes(SHARES_TRAIT);
