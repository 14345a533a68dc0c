// PCI accelerators from <root>/sys/bus/pci/devices: GPUs (class 0x03xxxx,
// VGA and 3D controllers alike) and FPGAs (class 0x1200xx).
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { DeviceFacts, DeviceKind } from './types.js';

const VENDOR_NAMES: Readonly<Record<string, string>> = {
  '10de': 'NVIDIA',
  '1002': 'AMD',
  '8086': 'INTEL',
  '1172': 'INTEL', // Altera
  '10ee': 'XILINX',
  '1d0f': 'AMAZON',
};

export interface PciAccelerator extends DeviceFacts {
  /** VGPU capacity when the device offers mediated device types */
  vgpuInstances?: number;
}

function readAttr(dir: string, name: string): string | undefined {
  try {
    return readFileSync(join(dir, name), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function hexId(value: string | undefined): string {
  return (value ?? '').replace(/^0x/i, '').toLowerCase().padStart(4, '0');
}

function kindOf(pciClass: string): DeviceKind | undefined {
  const cls = pciClass.replace(/^0x/i, '').toLowerCase();
  if (cls.startsWith('03')) return 'GPU';
  if (cls.startsWith('1200')) return 'FPGA';
  return undefined;
}

/** First mediated device type (sorted) and its capacity: instances still available plus those already created. */
function mediatedCapacity(deviceDir: string): { type: string; instances: number } | undefined {
  const typesDir = join(deviceDir, 'mdev_supported_types');
  if (!existsSync(typesDir)) return undefined;
  const types = readdirSync(typesDir).sort();
  for (const type of types) {
    const available = Number(readAttr(join(typesDir, type), 'available_instances') ?? '0');
    const devicesDir = join(typesDir, type, 'devices');
    const created = existsSync(devicesDir) ? readdirSync(devicesDir).length : 0;
    if (available + created > 0) return { type, instances: available + created };
  }
  return undefined;
}

export function discoverPciAccelerators(root: string): PciAccelerator[] {
  const base = join(root, 'sys/bus/pci/devices');
  if (!existsSync(base)) return [];
  const found: PciAccelerator[] = [];
  for (const address of readdirSync(base).sort()) {
    const dir = join(base, address);
    const kind = kindOf(readAttr(dir, 'class') ?? '');
    if (!kind) continue;
    const vendorId = hexId(readAttr(dir, 'vendor'));
    let driver: string | undefined;
    try {
      driver = basename(readlinkSync(join(dir, 'driver')));
    } catch {
      driver = readAttr(dir, 'driver_name');
    }
    const numa = Number(readAttr(dir, 'numa_node'));
    const mdev = kind === 'GPU' ? mediatedCapacity(dir) : undefined;
    found.push({
      kind,
      pciAddress: address,
      vendorId,
      productId: hexId(readAttr(dir, 'device')),
      vendorName: VENDOR_NAMES[vendorId] ?? `VENDOR_${vendorId.toUpperCase()}`,
      ...(driver ? { driver } : {}),
      ...(Number.isInteger(numa) && numa >= 0 ? { numaNode: numa } : {}),
      ...(mdev ? { mdevType: mdev.type, vgpuInstances: mdev.instances } : {}),
    });
  }
  return found;
}
