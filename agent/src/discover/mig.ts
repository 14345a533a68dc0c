// MIG (docs/extensions-gpu.md): an NVIDIA GPU with MIG mode on is reported as one provider
// with an inventory per GPU instance profile (CUSTOM_MIG_3G_40GB: as many as
// the driver says fit) and shared counters, so Placement lets any mix of
// profiles that fits the GPU's slices be claimed: compute_slices (the "Ng"
// of a profile's name; 7 on an H100) and memory_slices (the slices a
// profile's placement spans, from `nvidia-smi mig -lgipp`; 8 on an H100).
// The counters are necessary, not sufficient, for the hardware's placement
// rules (KEP-4815 models each slice as its own counter for that); the
// driver refuses a layout the counters allowed but the slices' positions do not.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InventoryFields } from './types.js';

export const MIG_MODE_ARGS = ['--query-gpu=index,pci.bus_id,mig.mode.current', '--format=csv'];
export const MIG_PROFILES_ARGS = ['mig', '-lgip'];
export const MIG_PLACEMENTS_ARGS = ['mig', '-lgipp'];

export interface MigProfile {
  /** e.g. 3g.40gb, 1g.10gb+me */
  name: string;
  id: number;
  /** Most instances of this profile alone (the "Total" of Free/Total). */
  instances: number;
}

/** What a MIG-mode GPU adds to its provider: inventories, counters and consumption (PUT /ext/.../counters). */
export interface MigLayout {
  inventories: Record<string, InventoryFields>;
  counters: Record<string, number>;
  consumption: Record<string, Record<string, number>>;
}

/** GPU index -> whether MIG mode is on, by the sysfs PCI address of the GPU. */
export function parseMigModes(csv: string): Map<string, { index: number; enabled: boolean }> {
  const modes = new Map<string, { index: number; enabled: boolean }>();
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 3 || !/^\d+$/.test(cells[0]!)) continue;
    const match = /([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(cells[1]!);
    if (!match) continue;
    const address = `${match[1]!.slice(-4)}:${match[2]}:${match[3]}.${match[4]}`.toLowerCase();
    modes.set(address, { index: Number(cells[0]), enabled: cells[2] === 'Enabled' });
  }
  return modes;
}

/** `nvidia-smi mig -lgip`: GPU index -> its profiles (the first row of each; the second holds CE/JPEG/OFA). */
export function parseGpuInstanceProfiles(text: string): Map<number, MigProfile[]> {
  const byGpu = new Map<number, MigProfile[]>();
  for (const line of text.split('\n')) {
    const match = /^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\/(\d+)\s/.exec(line);
    if (!match) continue;
    const gpu = Number(match[1]);
    const list = byGpu.get(gpu) ?? [];
    list.push({ name: match[2]!, id: Number(match[3]), instances: Number(match[5]) });
    byGpu.set(gpu, list);
  }
  return byGpu;
}

/** `nvidia-smi mig -lgipp`: GPU index -> profile id -> {memory slices one instance spans, end of the last placement}. */
export function parseProfilePlacements(text: string): Map<number, Map<number, { slices: number; end: number }>> {
  const byGpu = new Map<number, Map<number, { slices: number; end: number }>>();
  for (const line of text.split('\n')) {
    const match = /GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,\s]+)\}:(\d+)/.exec(line);
    if (!match) continue;
    const starts = match[3]!.split(',').map((s) => Number(s.trim()));
    const slices = Number(match[4]);
    const perGpu = byGpu.get(Number(match[1])) ?? new Map<number, { slices: number; end: number }>();
    perGpu.set(Number(match[2]), { slices, end: Math.max(...starts) + slices });
    byGpu.set(Number(match[1]), perGpu);
  }
  return byGpu;
}

/** CUSTOM_MIG_3G_40GB for 3g.40gb, CUSTOM_MIG_1G_10GB_ME for 1g.10gb+me. */
export function migResourceClass(profile: string): string {
  return `CUSTOM_MIG_${profile.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}`;
}

/** A GPU's profiles and placements as inventories plus counters; null without profiles. */
export function migLayout(profiles: MigProfile[], placements: Map<number, { slices: number; end: number }>): MigLayout | null {
  const usable = profiles.filter((p) => p.instances > 0 && /^\d+g\./.test(p.name));
  if (!usable.length) return null;
  const inventories: Record<string, InventoryFields> = {};
  const consumption: Record<string, Record<string, number>> = {};
  let computeSlices = 0;
  let memorySlices = 0;
  for (const profile of usable) {
    const rc = migResourceClass(profile.name);
    const compute = Number(/^(\d+)g\./.exec(profile.name)![1]);
    const placement = placements.get(profile.id);
    inventories[rc] = { total: profile.instances, reserved: 0, min_unit: 1, max_unit: profile.instances, step_size: 1 };
    consumption[rc] = { compute_slices: compute, ...(placement ? { memory_slices: placement.slices } : {}) };
    computeSlices = Math.max(computeSlices, compute);
    if (placement) memorySlices = Math.max(memorySlices, placement.end);
  }
  return {
    inventories,
    counters: { compute_slices: computeSlices, ...(memorySlices ? { memory_slices: memorySlices } : {}) },
    consumption,
  };
}

export interface MigOutputs {
  modes?: string;
  profiles?: string;
  placements?: string;
}

function run(args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('nvidia-smi', args, { timeout: 15_000 }, (err, stdout) => resolve(err ? undefined : stdout));
  });
}

/** On the real root runs nvidia-smi (absent or failing: nothing); a fixture root holds recorded outputs. */
export async function readMigOutputs(root: string): Promise<MigOutputs> {
  if (root !== '/') {
    const recorded = (name: string) => (existsSync(join(root, name)) ? readFileSync(join(root, name), 'utf8') : undefined);
    const modes = recorded('nvidia-smi-mig-mode.csv');
    const profiles = recorded('nvidia-smi-mig-lgip.txt');
    const placements = recorded('nvidia-smi-mig-lgipp.txt');
    return { ...(modes ? { modes } : {}), ...(profiles ? { profiles } : {}), ...(placements ? { placements } : {}) };
  }
  const modes = await run(MIG_MODE_ARGS);
  if (!modes || !/Enabled/.test(modes)) return modes ? { modes } : {};
  const [profiles, placements] = await Promise.all([run(MIG_PROFILES_ARGS), run(MIG_PLACEMENTS_ARGS)]);
  return { modes, ...(profiles ? { profiles } : {}), ...(placements ? { placements } : {}) };
}

/** sysfs PCI address -> the MIG layout of each GPU with MIG mode on. */
export function migLayouts(outputs: MigOutputs): Map<string, MigLayout> {
  const layouts = new Map<string, MigLayout>();
  if (!outputs.modes || !outputs.profiles) return layouts;
  const profiles = parseGpuInstanceProfiles(outputs.profiles);
  const placements = parseProfilePlacements(outputs.placements ?? '');
  for (const [address, mode] of parseMigModes(outputs.modes)) {
    if (!mode.enabled) continue;
    const layout = migLayout(profiles.get(mode.index) ?? [], placements.get(mode.index) ?? new Map());
    if (layout) layouts.set(address, layout);
  }
  return layouts;
}
