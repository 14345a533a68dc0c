// Model and memory facts for NVIDIA GPUs from
// `nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,uuid,driver_version --format=csv`.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const NVIDIA_SMI_ARGS = ['--query-gpu=index,name,pci.bus_id,memory.total,uuid,driver_version', '--format=csv'];

export interface NvidiaGpuFacts {
  pciAddress: string;
  model: string;
  memoryMiB?: number;
  gpuUuid?: string;
  driverVersion?: string;
}

/** nvidia-smi prints an 8-digit PCI domain; sysfs uses 4. */
function sysfsAddress(busId: string): string {
  const match = /([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(busId.trim());
  if (!match) return busId.trim().toLowerCase();
  return `${match[1].slice(-4)}:${match[2]}:${match[3]}.${match[4]}`.toLowerCase();
}

export function parseNvidiaSmiCsv(csv: string): NvidiaGpuFacts[] {
  const facts: NvidiaGpuFacts[] = [];
  for (const line of csv.split('\n')) {
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length < 4 || cells[0] === 'index' || !/^\d+$/.test(cells[0])) continue;
    const memory = Number(/^(\d+)/.exec(cells[3])?.[1]);
    facts.push({
      pciAddress: sysfsAddress(cells[2]),
      model: cells[1],
      ...(Number.isFinite(memory) ? { memoryMiB: memory } : {}),
      ...(cells[4] ? { gpuUuid: cells[4] } : {}),
      ...(cells[5] ? { driverVersion: cells[5] } : {}),
    });
  }
  return facts;
}

/**
 * On the real root runs the tool (absent or failing: no facts, never an
 * error); a fixture root may hold a recorded `nvidia-smi.csv` instead.
 */
export async function readNvidiaSmi(root: string): Promise<string | undefined> {
  if (root !== '/') {
    const recorded = join(root, 'nvidia-smi.csv');
    return existsSync(recorded) ? readFileSync(recorded, 'utf8') : undefined;
  }
  return new Promise((resolve) => {
    execFile('nvidia-smi', NVIDIA_SMI_ARGS, { timeout: 15_000 }, (err, stdout) => resolve(err ? undefined : stdout));
  });
}
