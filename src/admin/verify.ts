// `--verify`: what differs between two Placements, each read whole through
// its REST API (admin/placement-reader.ts). Standard names are each
// service's own: the target may know more standard traits than an older
// source, never fewer, and must hold exactly the source's custom ones.
import { STANDARD_TRAITS } from '../placement/standard-names.generated.js';
import type { ConsumerSnap, ProviderSnap, Snapshot } from './placement-reader.js';

const STANDARD_TRAIT_SET = new Set<string>(STANDARD_TRAITS);

/** A value written the same whatever order its object keys came in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const differ = (a: unknown, b: unknown) => canonical(a) !== canonical(b);
const show = (value: unknown) => (value === undefined ? 'nothing' : canonical(value));

/** Every difference, one line each, in a stable order (names, providers, consumers, project usages). */
export function diffSnapshots(source: Snapshot, target: Snapshot): string[] {
  const out: string[] = [];
  const both = (what: string, a: unknown, b: unknown) => {
    if (differ(a, b)) out.push(`${what}: ${show(a)} on the source, ${show(b)} on the target`);
  };

  const targetClasses = new Set(target.resourceClasses);
  const sourceClasses = new Set(source.resourceClasses);
  for (const rc of source.resourceClasses) if (!targetClasses.has(rc)) out.push(`resource class ${rc}: missing on the target`);
  for (const rc of target.resourceClasses) {
    if (rc.startsWith('CUSTOM_') && !sourceClasses.has(rc)) out.push(`resource class ${rc}: only on the target`);
  }
  const targetTraits = new Set(target.traits);
  const sourceTraits = new Set(source.traits);
  for (const t of source.traits) if (!targetTraits.has(t)) out.push(`trait ${t}: missing on the target`);
  for (const t of target.traits) if (!sourceTraits.has(t) && !STANDARD_TRAIT_SET.has(t)) out.push(`trait ${t}: only on the target`);

  const targetProviders = new Map(target.providers.map((p) => [p.uuid, p]));
  const sourceProviders = new Set(source.providers.map((p) => p.uuid));
  for (const p of source.providers) {
    const t = targetProviders.get(p.uuid);
    if (!t) out.push(`provider ${p.uuid} (${p.name}): missing on the target`);
    else diffProvider(p, t, both);
  }
  for (const p of target.providers) if (!sourceProviders.has(p.uuid)) out.push(`provider ${p.uuid} (${p.name}): only on the target`);

  const targetConsumers = new Map(target.consumers.map((c) => [c.uuid, c]));
  const sourceConsumers = new Set(source.consumers.map((c) => c.uuid));
  for (const c of source.consumers) {
    const t = targetConsumers.get(c.uuid);
    if (!t) out.push(`consumer ${c.uuid}: missing on the target`);
    else diffConsumer(c, t, both);
  }
  for (const c of target.consumers) if (!sourceConsumers.has(c.uuid)) out.push(`consumer ${c.uuid}: only on the target`);

  const projects = [...new Set([...Object.keys(source.projectUsages ?? {}), ...Object.keys(target.projectUsages ?? {})])].sort();
  for (const project of projects) both(`usages of project ${project}`, source.projectUsages?.[project], target.projectUsages?.[project]);
  return out;
}

type Both = (what: string, a: unknown, b: unknown) => void;

function diffProvider(s: ProviderSnap, t: ProviderSnap, both: Both): void {
  const at = `provider ${s.uuid}`;
  both(`${at} name`, s.name, t.name);
  both(`${at} generation`, s.generation, t.generation);
  both(`${at} parent`, s.parentUuid, t.parentUuid);
  both(`${at} root`, s.rootUuid, t.rootUuid);
  both(`${at} inventories`, s.inventories, t.inventories);
  both(`${at} traits`, s.traits, t.traits);
  both(`${at} aggregates`, s.aggregates, t.aggregates);
  both(`${at} usages`, s.usages, t.usages);
  both(`${at} allocations`, s.allocations, t.allocations);
}

function diffConsumer(s: ConsumerSnap, t: ConsumerSnap, both: Both): void {
  const at = `consumer ${s.uuid}`;
  both(`${at} project`, s.projectId, t.projectId);
  both(`${at} user`, s.userId, t.userId);
  both(`${at} consumer type`, s.consumerType, t.consumerType);
  both(`${at} generation`, s.generation, t.generation);
  both(`${at} allocations`, s.allocations, t.allocations);
}
