import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadAgentConfig } from '../src/config.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agent-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('agent configuration', () => {
  it('defaults: ratios unset, initial 16.0 / 1.5 / 1.0, 512 MB reserved, loose config files only warned about (as Nova loads them)', () => {
    const config = loadAgentConfig({ env: {} });
    expect(config).toMatchObject({
      root: '/',
      interval_seconds: 60,
      reserved_host_memory_mb: 512,
      initial_cpu_allocation_ratio: 16,
      initial_ram_allocation_ratio: 1.5,
      initial_disk_allocation_ratio: 1,
      provider_config_permissions: 'warn',
      aggregates: [],
    });
    expect(config.cpu_allocation_ratio).toBeUndefined();
    expect(config.endpoint).toBeUndefined();
  });

  it('file, then environment, then flags', () => {
    const file = join(dir, 'agent.yaml');
    writeFileSync(file, 'endpoint: http://placement.example:8778\ntoken: from-file\ninterval_seconds: 30\ncpu_allocation_ratio: 4.0\n');
    const config = loadAgentConfig({
      env: {
        PLACEMENT_AGENT_CONFIG: file,
        PLACEMENT_AGENT_TOKEN: 'from-env',
        PLACEMENT_AGENT_AGGREGATES: '7a1c3e5f-2b4d-4c6e-8f0a-1b2c3d4e5f60',
      },
      overrides: { interval_seconds: '5' },
    });
    expect(config).toMatchObject({
      endpoint: 'http://placement.example:8778',
      token: 'from-env',
      interval_seconds: 5,
      cpu_allocation_ratio: 4,
      aggregates: ['7a1c3e5f-2b4d-4c6e-8f0a-1b2c3d4e5f60'],
    });
  });

  it('names the bad key; unknown keys in the agent config are typos, not forward compatibility', () => {
    const file = join(dir, 'agent.yaml');
    writeFileSync(file, 'endpiont: http://x\n');
    expect(() => loadAgentConfig({ file, env: {} })).toThrow(ConfigError);
    expect(() => loadAgentConfig({ env: { PLACEMENT_AGENT_ENDPOINT: 'not a url' } })).toThrow(/endpoint/);
    expect(() => loadAgentConfig({ env: { PLACEMENT_AGENT_AGGREGATES: 'abc' } })).toThrow(/aggregates/);
  });
});
