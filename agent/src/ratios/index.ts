// Allocation ratios for VCPU / MEMORY_MB / DISK_GB (seed 004):
// 1. an override (cpu/ram/disk_allocation_ratio) always wins;
// 2. else the ratio already stored in placement is kept (an operator may have
//    set it through the API) ...
// 3. ... unless it is 0.0, which the spec's data migration treats as unset;
// 4. else (no inventory yet) the initial_* value.
import type { AgentConfig } from '../config.js';

export const RATIO_CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB'] as const;
export type RatioClass = (typeof RATIO_CLASSES)[number];

export interface RatioSettings {
  override?: number;
  initial: number;
}

export function ratioSettings(config: AgentConfig): Record<RatioClass, RatioSettings> {
  return {
    VCPU: { override: config.cpu_allocation_ratio, initial: config.initial_cpu_allocation_ratio },
    MEMORY_MB: { override: config.ram_allocation_ratio, initial: config.initial_ram_allocation_ratio },
    DISK_GB: { override: config.disk_allocation_ratio, initial: config.initial_disk_allocation_ratio },
  };
}

/** `stored` is the allocation_ratio of the existing inventory, undefined when there is none. */
export function chooseAllocationRatio(settings: RatioSettings, stored: number | undefined): number {
  if (settings.override !== undefined) return settings.override;
  if (stored !== undefined && stored !== 0) return stored;
  return settings.initial;
}

export function isRatioClass(rc: string): rc is RatioClass {
  return (RATIO_CLASSES as readonly string[]).includes(rc);
}
