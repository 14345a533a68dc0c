// Hardware discovery from a root directory (default /): tests point it at a
// fixture tree with a fake /proc and /sys, so no path needs real hardware.
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { dirname, join } from 'node:path';
import { cpuTraits } from './cpu-traits.js';
import { parseNvidiaSmiCsv, readNvidiaSmi } from './nvidia-smi.js';
import { migLayouts, readMigOutputs, type MigLayout, type MigOutputs } from './mig.js';
import { discoverPciAccelerators, type PciAccelerator } from './pci.js';
import type { DiscoveredProvider, Discovery, HostFacts, InventoryFields } from './types.js';

export type { Discovery, DiscoveredProvider, InventoryFields, HostFacts, DeviceFacts } from './types.js';

export interface Reserved {
  vcpu: number;
  memoryMb: number;
  diskGb: number;
}

export interface DiscoverOptions {
  root?: string;
  /** compute node provider name; default the host name */
  hostname?: string;
  /** filesystem whose size becomes DISK_GB */
  instancesPath?: string;
  reserved?: Partial<Reserved>;
  /** seams for tests */
  statfs?: (path: string) => { bsize: number; blocks: number };
  nvidiaSmi?: (root: string) => Promise<string | undefined>;
  /** MIG mode, profiles and placements from nvidia-smi (tests pass recorded outputs). */
  nvidiaSmiMig?: (root: string) => Promise<MigOutputs>;
}

const GIB = 1024 ** 3;

function read(root: string, path: string): string | undefined {
  try {
    return readFileSync(join(root, path), 'utf8');
  } catch {
    return undefined;
  }
}

/** "0-3,6,8-9" -> 7 */
export function countCpuList(list: string): number {
  let count = 0;
  for (const part of list.trim().split(',').filter(Boolean)) {
    const [from, to] = part.split('-').map(Number);
    count += to === undefined ? 1 : to - from + 1;
  }
  return count;
}

interface CpuInfo {
  processors: number;
  flags: string[];
  vendor?: string;
  model?: string;
  arch: string;
  hyperthreading: boolean;
}

export function parseCpuinfo(text: string): CpuInfo {
  const first = new Map<string, string>();
  let processors = 0;
  for (const line of text.split('\n')) {
    const idx = line.indexOf(':');
    if (idx < 0) continue;
    const key = line.slice(0, idx).trim();
    const value = line.slice(idx + 1).trim();
    if (key === 'processor') processors++;
    if (!first.has(key)) first.set(key, value);
  }
  const flags = (first.get('flags') ?? '').split(/\s+/).filter(Boolean);
  const arm = first.has('CPU architecture') || first.has('Features');
  const arch = flags.includes('lm') ? 'x86_64' : arm ? 'aarch64' : flags.length > 0 ? 'i686' : 'unknown';
  const siblings = Number(first.get('siblings'));
  const cores = Number(first.get('cpu cores'));
  return {
    processors,
    flags,
    vendor: first.get('vendor_id'),
    model: first.get('model name'),
    arch,
    hyperthreading: flags.includes('ht') && siblings > cores,
  };
}

function memTotalMiB(meminfo: string | undefined): number {
  const kib = Number(/^MemTotal:\s+(\d+)\s*kB/m.exec(meminfo ?? '')?.[1] ?? 0);
  return Math.floor(kib / 1024);
}

function defaultStatfs(path: string): { bsize: number; blocks: number } {
  // The instances path may not exist yet: measure the filesystem it will live on.
  let probe = path;
  while (!existsSync(probe) && dirname(probe) !== probe) probe = dirname(probe);
  return statfsSync(probe);
}

const ARCH_TRAITS: Readonly<Record<string, string>> = { x86_64: 'HW_ARCH_X86_64', aarch64: 'HW_ARCH_AARCH64', i686: 'HW_ARCH_I686' };

function wholeUnitInventory(total: number, reserved = 0): InventoryFields {
  return { total, reserved, min_unit: 1, max_unit: total, step_size: 1 };
}

export function deviceProviderName(host: string, pciAddress: string): string {
  return `${host}_pci_${pciAddress.replace(/[:.]/g, '_')}`;
}

function traitToken(text: string): string {
  return text
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

function deviceProvider(host: string, device: PciAccelerator, mig?: MigLayout): DiscoveredProvider {
  const kind = device.kind;
  const traits = [`CUSTOM_${kind}_${device.vendorName}`, `CUSTOM_${kind}_PRODUCT_ID_${device.productId.toUpperCase()}`];
  if (device.model) traits.push(`CUSTOM_${kind}_MODEL_${traitToken(device.model)}`);
  if (device.memoryMiB) traits.push(`CUSTOM_${kind}_MEMORY_${Math.round(device.memoryMiB / 1024)}GB`);
  const inventories: Record<string, InventoryFields> = kind === 'FPGA' ? { FPGA: wholeUnitInventory(1) } : { PGPU: wholeUnitInventory(1) };
  if (kind === 'GPU' && device.vgpuInstances) inventories.VGPU = wholeUnitInventory(device.vgpuInstances);
  const { vgpuInstances: _unused, ...facts } = device;
  const name = deviceProviderName(host, device.pciAddress);
  if (mig) {
    // MIG mode on: the GPU is handed out only as instances, of any mix of profiles its slices allow.
    const { counters, consumption } = mig;
    return {
      name,
      parentName: host,
      inventories: mig.inventories,
      traits: [...traits, 'CUSTOM_GPU_MIG'].sort(),
      device: facts,
      counters: { counters, consumption },
    };
  }
  return { name, parentName: host, inventories, traits: traits.sort(), device: facts };
}

export async function discover(options: DiscoverOptions = {}): Promise<Discovery> {
  const root = options.root ?? '/';
  const cpu = parseCpuinfo(read(root, 'proc/cpuinfo') ?? '');
  const online = read(root, 'sys/devices/system/cpu/online');
  const onlineCpus = online ? countCpuList(online) : cpu.processors;
  const memoryMiB = memTotalMiB(read(root, 'proc/meminfo'));
  const instancesPath = options.instancesPath ?? '/var/lib/placement-agent/instances';
  let diskGiB = 0;
  try {
    const fs = (options.statfs ?? defaultStatfs)(join(root, instancesPath));
    diskGiB = Math.floor((fs.bsize * fs.blocks) / GIB);
  } catch {
    diskGiB = 0;
  }
  const hostname = options.hostname ?? (root === '/' ? osHostname() : (read(root, 'proc/sys/kernel/hostname') ?? 'localhost').trim());
  const host: HostFacts = {
    hostname,
    arch: cpu.arch,
    ...(cpu.model ? { cpuModel: cpu.model } : {}),
    ...(cpu.vendor ? { cpuVendor: cpu.vendor } : {}),
    onlineCpus,
    memoryMiB,
    diskGiB,
    instancesPath,
  };

  const reserved = { vcpu: 0, memoryMb: 512, diskGb: 0, ...options.reserved };
  const inventories: Record<string, InventoryFields> = {};
  // Placement refuses total 0; a resource the host lacks is simply not reported.
  if (onlineCpus > 0) inventories.VCPU = wholeUnitInventory(onlineCpus, reserved.vcpu);
  if (memoryMiB > 0) inventories.MEMORY_MB = wholeUnitInventory(memoryMiB, reserved.memoryMb);
  if (diskGiB > 0) inventories.DISK_GB = wholeUnitInventory(diskGiB, reserved.diskGb);
  const rootTraits = new Set<string>(['COMPUTE_NODE', ...cpuTraits(cpu.flags, cpu.vendor)]);
  if (ARCH_TRAITS[cpu.arch]) rootTraits.add(ARCH_TRAITS[cpu.arch]);
  if (cpu.hyperthreading) rootTraits.add('HW_CPU_HYPERTHREADING');

  const accelerators = discoverPciAccelerators(root);
  let mig = new Map<string, MigLayout>();
  if (accelerators.some((d) => d.vendorName === 'NVIDIA' && d.kind === 'GPU')) {
    mig = migLayouts(await (options.nvidiaSmiMig ?? readMigOutputs)(root));
    const csv = await (options.nvidiaSmi ?? readNvidiaSmi)(root);
    const facts = csv ? parseNvidiaSmiCsv(csv) : [];
    for (const device of accelerators) {
      const fact = facts.find((f) => f.pciAddress === device.pciAddress);
      if (!fact) continue;
      device.model = fact.model;
      if (fact.memoryMiB !== undefined) device.memoryMiB = fact.memoryMiB;
      if (fact.gpuUuid) device.gpuUuid = fact.gpuUuid;
      if (fact.driverVersion) device.driverVersion = fact.driverVersion;
    }
  }

  const computeNode: DiscoveredProvider = { name: hostname, inventories, traits: [...rootTraits].sort() };
  return { host, providers: [computeNode, ...accelerators.map((d) => deviceProvider(hostname, d, mig.get(d.pciAddress)))] };
}
