import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../src/config.js';
import { chooseAllocationRatio, ratioSettings } from '../src/ratios/index.js';

describe('allocation ratio rules (seed 004)', () => {
  const defaults = ratioSettings(loadAgentConfig({ env: {} }));

  it('initial_* defaults 16.0 / 1.5 / 1.0 apply only when the inventory does not exist yet', () => {
    expect(chooseAllocationRatio(defaults.VCPU, undefined)).toBe(16.0);
    expect(chooseAllocationRatio(defaults.MEMORY_MB, undefined)).toBe(1.5);
    expect(chooseAllocationRatio(defaults.DISK_GB, undefined)).toBe(1.0);
  });

  it('without an override the ratio an operator set through the API is kept', () => {
    expect(chooseAllocationRatio(defaults.VCPU, 4.0)).toBe(4.0);
    expect(chooseAllocationRatio(defaults.MEMORY_MB, 1.0)).toBe(1.0);
  });

  it('a stored 0.0 counts as unset: the initial value replaces it', () => {
    expect(chooseAllocationRatio(defaults.VCPU, 0)).toBe(16.0);
    expect(chooseAllocationRatio(defaults.MEMORY_MB, 0)).toBe(1.5);
  });

  it('an override always wins, over stored and initial values', () => {
    const config = loadAgentConfig({
      env: { PLACEMENT_AGENT_CPU_ALLOCATION_RATIO: '2.5', PLACEMENT_AGENT_INITIAL_RAM_ALLOCATION_RATIO: '1.2' },
    });
    const settings = ratioSettings(config);
    expect(chooseAllocationRatio(settings.VCPU, 4.0)).toBe(2.5);
    expect(chooseAllocationRatio(settings.VCPU, undefined)).toBe(2.5);
    expect(chooseAllocationRatio(settings.MEMORY_MB, undefined)).toBe(1.2);
    expect(chooseAllocationRatio(settings.DISK_GB, 3.0)).toBe(3.0);
  });

  it('refuses a zero or negative ratio in the configuration', () => {
    expect(() => loadAgentConfig({ env: { PLACEMENT_AGENT_CPU_ALLOCATION_RATIO: '0' } })).toThrow(/cpu_allocation_ratio/);
  });
});
