// GPU health from `nvidia-smi -q -x`: per GPU (by PCI address), the
// uncorrected ECC errors since the driver was loaded on the board
// (aggregate: DRAM uncorrectable + SRAM parity + SRAM SEC-DED) and the pages
// retired (single-bit + double-bit) or rows remapped for uncorrectable errors;
// and, on GPUs that remap rows (A100, H100, H200), a remap still pending (it
// takes effect at the next GPU reset) or one that failed (the board needs
// service): either makes the GPU unhealthy whatever the thresholds.
// A fixture root may hold a recorded `nvidia-smi-q.xml`; on the real root the
// tool runs (absent or failing: no facts, never an error).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface GpuHealth {
  pciAddress: string;
  uncorrectedEcc: number;
  retiredPages: number;
  /** `remapped_row_pending` Yes: a row remap waits for a GPU reset. */
  remapPending: boolean;
  /** `remapped_row_failure` Yes: the GPU could not remap a row. */
  remapFailed: boolean;
}

export interface HealthThresholds {
  /** More uncorrected ECC errors than this: unhealthy. */
  uncorrectedEcc: number;
  /** More retired pages (or remapped rows) than this: unhealthy. */
  retiredPages: number;
}

/** nvidia-smi prints an 8-digit PCI domain; sysfs uses 4. */
function sysfsAddress(busId: string): string {
  const match = /([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(busId.trim());
  if (!match) return busId.trim().toLowerCase();
  return `${match[1]!.slice(-4)}:${match[2]}:${match[3]}.${match[4]}`.toLowerCase();
}

/** The numbers in `<tag>` elements of `xml` (N/A and absent count 0). */
function sumOf(xml: string, tags: string[]): number {
  let sum = 0;
  for (const tag of tags) {
    for (const match of xml.matchAll(new RegExp(`<${tag}>\\s*(\\d+)\\s*</${tag}>`, 'g'))) sum += Number(match[1]);
  }
  return sum;
}

/** A section `<tag>...</tag>` of `xml`, or ''. */
const section = (xml: string, tag: string): string => new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(xml)?.[1] ?? '';

export function parseNvidiaSmiXml(xml: string): GpuHealth[] {
  const gpus: GpuHealth[] = [];
  for (const match of xml.matchAll(/<gpu id="([^"]+)">([\s\S]*?)<\/gpu>/g)) {
    const body = match[2]!;
    const aggregate = section(section(body, 'ecc_errors'), 'aggregate');
    const retired = section(body, 'retired_pages');
    const remapped = section(body, 'remapped_rows');
    gpus.push({
      pciAddress: sysfsAddress(match[1]!),
      uncorrectedEcc: sumOf(aggregate, [
        'dram_uncorrectable',
        'sram_uncorrectable_parity',
        'sram_uncorrectable_secded',
        'sram_uncorrectable',
      ]),
      retiredPages: sumOf(retired, ['retired_count']) + sumOf(remapped, ['remapped_row_unc']),
      remapPending: /<remapped_row_pending>\s*Yes\s*</.test(remapped),
      remapFailed: /<remapped_row_failure>\s*Yes\s*</.test(remapped),
    });
  }
  return gpus;
}

/** Why a GPU is unhealthy, or null when it is not. */
export function unhealthyReason(gpu: GpuHealth, limits: HealthThresholds): string | null {
  const reasons: string[] = [];
  if (gpu.uncorrectedEcc > limits.uncorrectedEcc)
    reasons.push(`${gpu.uncorrectedEcc} uncorrected ECC errors (threshold ${limits.uncorrectedEcc})`);
  if (gpu.retiredPages > limits.retiredPages) reasons.push(`${gpu.retiredPages} retired pages (threshold ${limits.retiredPages})`);
  if (gpu.remapFailed) reasons.push('row remapping failed (the GPU needs service)');
  if (gpu.remapPending) reasons.push('a row remap is pending (reset the GPU to apply it)');
  return reasons.length ? reasons.join('; ') : null;
}

export async function readNvidiaSmiXml(root: string): Promise<string | undefined> {
  if (root !== '/') {
    const recorded = join(root, 'nvidia-smi-q.xml');
    return existsSync(recorded) ? readFileSync(recorded, 'utf8') : undefined;
  }
  return new Promise((resolve) => {
    execFile('nvidia-smi', ['-q', '-x'], { timeout: 15_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) =>
      resolve(err ? undefined : stdout),
    );
  });
}
