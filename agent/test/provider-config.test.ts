import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import { main } from '../src/main.js';
import { formatProblem, loadProviderConfigs } from '../src/provider-config/load.js';
import { mergeProviderConfigs, ProviderConfigConflictError } from '../src/provider-config/merge.js';
import {
  providerConfigJsonSchema,
  type ProviderConfigFileSchema,
  type Inventory,
  type ProviderConfigFile,
} from '../src/provider-config/schema.js';
import type { DiscoveredProvider } from '../src/discover/types.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'provider-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string, mode = 0o644): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

const UUID = '5b9f2a3c-1d4e-4f60-8a7b-9c0d1e2f3a4b';

// The example of the provider-config-file spec (seed 000), verbatim.
const SPEC_EXAMPLE = `meta:
  schema_version: 1.0
providers:
  - identification:
      uuid: $COMPUTE_NODE
    inventories:
      additional:
        CUSTOM_LLC:
          total: 22
    traits:
      additional:
        - CUSTOM_P_STATE_ENABLED
`;

async function validateJson(target: string): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['validate', target, '--json'], { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out, err };
}

describe('schema file', () => {
  it('schemas/provider-config.schema.json is what the zod source generates (fails when stale)', () => {
    const committed = JSON.parse(readFileSync(new URL('../../schemas/provider-config.schema.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(providerConfigJsonSchema());
  });

  it('TypeScript types are the ones inferred from that schema source', () => {
    expectTypeOf<ProviderConfigFile>().toEqualTypeOf<z.input<typeof ProviderConfigFileSchema>>();
    expectTypeOf<Inventory>().toHaveProperty('total').toEqualTypeOf<number>();
  });
});

describe('valid files', () => {
  it("refuses the spec's example as written (unquoted 1.0, mapping form), as Nova's loader does", async () => {
    file('10-llc.yaml', SPEC_EXAMPLE);
    const { code, err } = await validateJson(dir);
    expect(code).toBe(1);
    expect(err.join('\n')).toMatch(/Unable to detect schema version from 1\.0/);
    file('10-llc.yaml', SPEC_EXAMPLE.replace('1.0', "'1.0'"));
    const quoted = await validateJson(dir);
    expect(quoted.code).toBe(1);
    expect(quoted.err.join('\n')).toMatch(/inventories\.additional: .* is not of type 'array'/);
  });

  it("accepts the spec's example with a quoted '1.0' and Nova's list form, and prints the --json shape", async () => {
    file(
      '10-llc.yaml',
      `meta:
  schema_version: '1.0'
providers:
  - identification:
      uuid: $COMPUTE_NODE
    inventories:
      additional:
        - CUSTOM_LLC:
            total: 22
            reserved: 2
            min_unit: 1
            max_unit: 11
            step_size: 1
            allocation_ratio: 1
    traits:
      additional:
        - CUSTOM_P_STATE_ENABLED
`,
    );
    const { code, out } = await validateJson(dir);
    expect(code).toBe(0);
    expect(JSON.parse(out.join(''))).toEqual([
      {
        id: '$COMPUTE_NODE',
        identification: { uuid: '$COMPUTE_NODE' },
        inventories: { CUSTOM_LLC: { total: 22, reserved: 2, min_unit: 1, max_unit: 11, step_size: 1, allocation_ratio: 1 } },
        traits: ['CUSTOM_P_STATE_ENABLED'],
      },
    ]);
  });

  it("accepts Nova's list-of-mappings form, quoted '1.0', unknown keys at every open level, in file order", async () => {
    file(
      'b.yaml',
      `meta: {schema_version: '1.0', owner: ops}
future_section: {x: 1}
providers:
  - identification: {name: gpu-host-2_pci_0000_3b_00_0}
    inventories:
      additional:
        - CUSTOM_GPU_SLICE: {total: 4}
        - CUSTOM_NVLINK: {total: 2, reserved: 0, allocation_ratio: 1.5e+1}
        - CUSTOM_LANES: {total: 1_024}
      future_adjective: {}
    traits: {additional: [CUSTOM_A, CUSTOM_B], removed: []}
    future_field: true
`,
    );
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: ${UUID}}\n    traits: {additional: [CUSTOM_C]}\n`,
    );
    file('notes.txt', 'not a provider config');
    const { code, out } = await validateJson(dir);
    expect(code).toBe(0);
    expect(JSON.parse(out.join(''))).toEqual([
      { id: UUID, identification: { uuid: UUID }, inventories: {}, traits: ['CUSTOM_C'] },
      {
        id: 'gpu-host-2_pci_0000_3b_00_0',
        identification: { name: 'gpu-host-2_pci_0000_3b_00_0' },
        inventories: {
          CUSTOM_GPU_SLICE: { total: 4 },
          CUSTOM_NVLINK: { total: 2, reserved: 0, allocation_ratio: 15 },
          CUSTOM_LANES: { total: 1024 },
        },
        traits: ['CUSTOM_A', 'CUSTOM_B'],
      },
    ]);
  });

  it('reads YAML as PyYAML does: y/n are strings, a later duplicate key wins, merge keys work', async () => {
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}
base: &base {total: 3}
providers:
  - identification: {name: first}
    identification: {name: y}
    inventories: {additional: [{CUSTOM_A: {<<: *base, reserved: 1}}]}
  - identification: {name: n}
    traits: {additional: [CUSTOM_N]}
`,
    );
    const { code, out } = await validateJson(dir);
    expect(code).toBe(0);
    expect(JSON.parse(out.join(''))).toEqual([
      { id: 'y', identification: { name: 'y' }, inventories: { CUSTOM_A: { total: 3, reserved: 1 } }, traits: [] },
      { id: 'n', identification: { name: 'n' }, inventories: {}, traits: ['CUSTOM_N'] },
    ]);
  });

  it('--json writes integers past 2^53 exactly and an infinite ratio as Python does (Infinity)', async () => {
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: n1}\n    inventories: {additional: [{CUSTOM_A: {total: 99999999999999999999, reserved: 7, allocation_ratio: .inf}}]}\n`,
    );
    const { code, out } = await validateJson(dir);
    expect(code).toBe(0);
    expect(out.join('')).toBe(
      '[{"id":"n1","identification":{"name":"n1"},"inventories":{"CUSTOM_A":{"total":99999999999999999999,"reserved":7,"allocation_ratio":Infinity}},"traits":[]}]',
    );
  });

  it('warns on an unknown minor version but loads the file', () => {
    file('a.yaml', `meta: {schema_version: '1.7'}\nproviders: []\n`);
    const result = loadProviderConfigs(dir);
    expect(result.errors).toEqual([]);
    expect(result.warnings.map((w) => w.message)).toEqual([
      expect.stringContaining('schema version 1.7: Nova supports the major version, but not the minor'),
    ]);
  });

  it('an empty directory is valid and defines nothing', async () => {
    const { code, out } = await validateJson(dir);
    expect(code).toBe(0);
    expect(JSON.parse(out.join(''))).toEqual([]);
  });
});

describe('invalid files', () => {
  const cases: [string, string, RegExp][] = [
    ['no meta', 'providers: []\n', /Unable to detect schema version/],
    ['empty file', '', /Unable to detect schema version/],
    ['major 2', "meta: {schema_version: '2.0'}\n", /Unsupported schema major version: 2/],
    ['leading zero minor', "meta: {schema_version: '1.01'}\n", /does not match/],
    ['version without minor', 'meta: {schema_version: 1}\n', /Unable to detect schema version/],
    [
      'both uuid and name',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: ${UUID}, name: x}\n`,
      /exactly one of uuid or name/,
    ],
    [
      'no identification key',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {}\n`,
      /exactly one of uuid or name is required/,
    ],
    [
      'unknown identification method',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {serial: abc}\n`,
      /Additional properties are not allowed \('serial' unexpected\)/,
    ],
    [
      'missing identification',
      `meta: {schema_version: '1.0'}\nproviders:\n  - traits: {additional: [CUSTOM_A]}\n`,
      /'identification' is a required property/,
    ],
    [
      'bad uuid',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: not-a-uuid}\n`,
      /is not a uuid or '\$COMPUTE_NODE'/,
    ],
    ['empty name', `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: ''}\n`, /'' is too short/],
    [
      'standard resource class',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    inventories: {additional: [{VCPU: {total: 2}}]}\n`,
      /only custom resource classes are allowed: VCPU/,
    ],
    [
      'standard trait',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    traits: {additional: [HW_CPU_X86_AVX2]}\n`,
      /only custom traits are allowed: \['HW_CPU_X86_AVX2'\]/,
    ],
    [
      'lower-case trait',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    traits: {additional: [custom_a]}\n`,
      /does not match/,
    ],
    [
      'missing total',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    inventories: {additional: [{CUSTOM_A: {reserved: 1}}]}\n`,
      /'total' is a required property/,
    ],
    [
      'unknown inventory field',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    inventories: {additional: [{CUSTOM_A: {total: 1, totl: 2}}]}\n`,
      /'totl' was unexpected/,
    ],
    [
      'float total',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    inventories: {additional: [{CUSTOM_A: {total: 1.5}}]}\n`,
      /1\.5 is not of type 'integer'/,
    ],
    [
      '1e3 is a string in YAML 1.1',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    inventories: {additional: [{CUSTOM_A: {total: 1e3}}]}\n`,
      /'1e3' is not of type 'integer'/,
    ],
    [
      'a YAML 1.1 timestamp is no string',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: 2001-12-14}\n`,
      /2001-12-14 is not of type 'string'/,
    ],
    [
      'off is a boolean in YAML 1.1',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: off}\n`,
      /False is not of type 'string'/,
    ],
    ['providers not a list', `meta: {schema_version: '1.0'}\nproviders: {a: 1}\n`, /is not of type 'array'/],
    ['unquoted 1.0 is a float', 'meta: {schema_version: 1.0}\n', /Unable to detect schema version from 1\.0/],
    [
      'the mapping form of inventories.additional',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: x}\n    inventories: {additional: {CUSTOM_A: {total: 1}}}\n`,
      /is not of type 'array'/,
    ],
    ['reserved __source_file', `meta: {schema_version: '1.0'}\n__source_file: x\n`, /reserved/],
    ['broken YAML', `meta: {schema_version: '1.0'\nproviders: [\n`, /Unable to load yaml file/],
  ];
  it.each(cases)('%s', async (_name, text, message) => {
    file('bad.yaml', text);
    const { code, out, err } = await validateJson(dir);
    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err.join('\n')).toMatch(message);
    expect(err.join('\n')).toContain(join(dir, 'bad.yaml'));
  });

  it('names the file, the provider entry, the field and its line/column', () => {
    file(
      'gpu.yaml',
      `meta:
  schema_version: '1.0'
providers:
  - identification:
      name: ok
  - identification:
      name: gpu-1
    inventories:
      additional:
        - CUSTOM_SLICE:
            total: many
`,
    );
    const { errors } = loadProviderConfigs(dir);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      entry: 'providers[1] (name: gpu-1)',
      field: 'inventories.additional.0.CUSTOM_SLICE.total',
      line: 11,
      column: 20,
    });
    expect(formatProblem(errors[0])).toBe(
      `${join(dir, 'gpu.yaml')}:11:20: providers[1] (name: gpu-1): inventories.additional.0.CUSTOM_SLICE.total: 'many' is not of type 'integer'`,
    );
  });

  it('the same uuid or name across files (or twice in one) is an error naming both files', () => {
    const trait = '    traits: {additional: [CUSTOM_A]}\n';
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: $COMPUTE_NODE}\n${trait}  - identification: {name: n1}\n${trait}`,
    );
    file('b.yaml', `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: $COMPUTE_NODE}\n${trait}`);
    file(
      'c.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: n2}\n${trait}  - identification: {name: n2}\n${trait}`,
    );
    const { errors, providers } = loadProviderConfigs(dir);
    expect(errors.map((e) => e.message)).toEqual([
      'Provider $COMPUTE_NODE has multiple definitions in source file(s): a.yaml, b.yaml',
      'Provider n2 has multiple definitions in source file(s): c.yaml',
    ]);
    expect(providers.map((p) => p.id)).toEqual(['$COMPUTE_NODE', 'n1', 'n2']);
  });

  it('refuses files writable by group or others, or warns when configured to', () => {
    file('open.yaml', `meta: {schema_version: '1.0'}\n`, 0o666);
    expect(loadProviderConfigs(dir, { permissions: 'refuse' }).errors[0].message).toMatch(/writable by group or others/);
    const warned = loadProviderConfigs(dir, { permissions: 'warn' });
    expect(warned.errors).toEqual([]);
    expect(warned.warnings[0].message).toMatch(/writable by group or others/);
  });
});

describe('merging into the discovered tree', () => {
  const tree: DiscoveredProvider[] = [
    { name: 'host1', inventories: { VCPU: { total: 8 } }, traits: ['COMPUTE_NODE'] },
    { name: 'host1_pci_0000_3b_00_0', parentName: 'host1', inventories: { PGPU: { total: 1 } }, traits: ['CUSTOM_GPU_NVIDIA'] },
  ];
  const uuidOf = (name: string) => (name === 'host1' ? UUID : '00000000-0000-4000-8000-000000000001');

  it('$COMPUTE_NODE applies to the compute node unless it is identified by uuid or name', () => {
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}
providers:
  - identification: {uuid: $COMPUTE_NODE}
    traits: {additional: [CUSTOM_FROM_WILDCARD]}
  - identification: {name: host1_pci_0000_3b_00_0}
    inventories: {additional: [{CUSTOM_GPU_SLICE: {total: 7}}]}
`,
    );
    const configs = loadProviderConfigs(dir).providers;
    let merged = mergeProviderConfigs(tree, configs, uuidOf, { startup: true });
    expect(merged.providers[0].traits).toEqual(['COMPUTE_NODE', 'CUSTOM_FROM_WILDCARD']);
    expect(merged.providers[1].inventories).toEqual({ PGPU: { total: 1 }, CUSTOM_GPU_SLICE: { total: 7 } });

    file(
      'b.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: ${UUID}}\n    traits: {additional: [CUSTOM_EXPLICIT]}\n`,
    );
    merged = mergeProviderConfigs(tree, loadProviderConfigs(dir).providers, uuidOf, { startup: true });
    expect(merged.providers[0].traits).toEqual(['COMPUTE_NODE', 'CUSTOM_EXPLICIT']);
  });

  it('a config inventory the agent reports: refuse at startup, warn and ignore later', () => {
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}
providers:
  - identification: {name: host1}
    inventories: {additional: [{CUSTOM_EXTRA: {total: 2}}]}
  - identification: {name: host1_pci_0000_3b_00_0}
    inventories: {additional: [{PGPU: {total: 4}}]}
`,
    );
    // PGPU is not CUSTOM_: the loader refuses it first, as Nova does.
    expect(loadProviderConfigs(dir).errors.map((e) => e.message)).toEqual([
      'Invalid resource class, only custom resource classes are allowed: PGPU',
    ]);
    const agentTree: DiscoveredProvider[] = [tree[0], { ...tree[1], inventories: { CUSTOM_SLICE: { total: 1 } } }];
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: host1_pci_0000_3b_00_0}\n    inventories: {additional: [{CUSTOM_SLICE: {total: 4}}, {CUSTOM_EXTRA: {total: 2}}]}\n`,
    );
    const configs = loadProviderConfigs(dir).providers;
    expect(() => mergeProviderConfigs(agentTree, configs, uuidOf, { startup: true })).toThrow(ProviderConfigConflictError);
    const later = mergeProviderConfigs(agentTree, configs, uuidOf, { startup: false });
    expect(later.conflicts).toEqual([expect.stringContaining('inventory CUSTOM_SLICE is managed by the agent')]);
    expect(later.providers[1].inventories).toEqual({ CUSTOM_SLICE: { total: 1 }, CUSTOM_EXTRA: { total: 2 } });
  });

  it('a config trait the provider already has is no conflict (Nova leaves custom traits out of its check)', () => {
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}
providers:
  - identification: {name: host1_pci_0000_3b_00_0}
    traits: {additional: [CUSTOM_GPU_NVIDIA, CUSTOM_EXTRA]}
`,
    );
    const merged = mergeProviderConfigs(tree, loadProviderConfigs(dir).providers, uuidOf, { startup: true });
    expect(merged.conflicts).toEqual([]);
    expect(merged.providers[1].traits).toEqual(['CUSTOM_EXTRA', 'CUSTOM_GPU_NVIDIA']);
  });

  it('one provider identified by both its name and its uuid is a conflict (Nova: ValueError)', () => {
    file(
      'a.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: host1}\n    traits: {additional: [CUSTOM_BY_NAME]}\n`,
    );
    file(
      'b.yaml',
      `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {uuid: ${UUID}}\n    traits: {additional: [CUSTOM_BY_UUID]}\n`,
    );
    const configs = loadProviderConfigs(dir).providers;
    expect(() => mergeProviderConfigs(tree, configs, uuidOf, { startup: true })).toThrow(/specified using both name 'host1' and uuid/);
    expect(mergeProviderConfigs(tree, configs, uuidOf, { startup: false }).unmatched).toEqual([]);
  });
});

describe('the placement-agent bin', () => {
  const bin = fileURLToPath(new URL('../bin/placement-agent.js', import.meta.url));

  it('validate exits non-zero on a bad file and prints JSON for a good one', () => {
    file('a.yaml', `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: n1}\n    traits: {additional: [CUSTOM_A]}\n`);
    const good = spawnSync(process.execPath, [bin, 'validate', dir, '--json'], { encoding: 'utf8' });
    expect(good.status).toBe(0);
    expect(JSON.parse(good.stdout)).toEqual([{ id: 'n1', identification: { name: 'n1' }, inventories: {}, traits: ['CUSTOM_A'] }]);

    file('b.yaml', `meta: {schema_version: '1.0'}\nproviders:\n  - identification: {name: n1}\n    traits: {additional: [CUSTOM_B]}\n`);
    const bad = spawnSync(process.execPath, [bin, 'validate', dir, '--json'], { encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('Provider n1 has multiple definitions');
  });
});

// Each directory under fixtures/provider-config is a provider_config_location
// checked against what Nova's loader (PyYAML safe_load, YAML 1.1) does with it.
describe('fixture directories: parity with Nova loading through PyYAML', () => {
  const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/provider-config/${name}`, import.meta.url));
  const load = (name: string) => loadProviderConfigs(fixture(name), { permissions: 'ignore' });

  const refused: [string, string, number, number, RegExp][] = [
    ['unknown-tag', '10-custom.yaml', 4, 8, /could not determine a constructor for the tag '!custom'/],
    [
      'python-tag',
      '10-python.yaml',
      10,
      13,
      /could not determine a constructor for the tag 'tag:yaml.org,2002:python\/object\/apply:os.system'/,
    ],
    ['tab-indent', '10-tab.yaml', 5, 1, /found character '\\t' that cannot start any token/],
    ['tab-after-key', '10-tab.yaml', 9, 17, /found character '\\t' that cannot start any token/],
    ['nul-byte', '10-nul.yaml', 5, 24, /unacceptable character #x0000: special characters are not allowed/],
    ['control-character', '10-escape.yaml', 3, 27, /unacceptable character #x001b/],
    ['not-utf8', '10-latin1.yaml', 5, 16, /not valid UTF-8 \(byte 0xe9/],
  ];
  it.each(refused)('%s: refused with the file, line and column', (name, fileName, line, column, message) => {
    const { errors, providers } = load(name);
    expect(providers).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ file: join(fixture(name), fileName), line, column });
    expect(errors[0].message).toMatch(/^Unable to load yaml file: /);
    expect(errors[0].message).toMatch(message);
    expect(formatProblem(errors[0])).toContain(`${join(fixture(name), fileName)}:${line}:${column}: `);
  });

  it('tabs inside quotes, block scalars and comments are fine, as in PyYAML', () => {
    const { errors, providers } = load('tabs-allowed');
    expect(errors).toEqual([]);
    expect(providers.map((p) => p.id)).toEqual(['gpu\thost']);
  });

  it('an alias bomb under an unknown key loads at once, as in Nova: aliases are shared, never expanded', () => {
    const started = process.hrtime.bigint();
    const { errors, providers } = load('alias-bomb');
    expect(errors).toEqual([]);
    expect(providers).toEqual([]);
    // Expanding it would mean a billion nodes; sharing them is instant.
    expect(Number(process.hrtime.bigint() - started) / 1e9).toBeLessThan(5);
  });

  it('.inf and .nan: refused where Nova wants an integer, accepted (with a warning) as allocation_ratio', () => {
    const { errors, warnings, providers } = load('non-finite');
    // 10-ratio.yaml alone is fine; the directory is refused for 20-list-form.yaml.
    expect(providers.map((p) => p.inventories)).toEqual([{ CUSTOM_LLC: { total: 22, allocation_ratio: Infinity } }]);
    const dir = fixture('non-finite');
    expect(errors.map(formatProblem)).toEqual([
      `${join(dir, '20-list-form.yaml')}:9:20: providers[0] (name: gpu-host-1): inventories.additional.0.CUSTOM_SLICE.total: -inf is not of type 'integer'`,
      `${join(dir, '20-list-form.yaml')}:10:23: providers[0] (name: gpu-host-1): inventories.additional.0.CUSTOM_SLICE.reserved: nan is not of type 'integer'`,
    ]);
    expect(warnings.map((w) => w.message)).toContainEqual(
      expect.stringMatching(/CUSTOM_LLC allocation_ratio is Infinity: Nova accepts it, but Placement will refuse/),
    );
  });

  it('entries with nothing to set are dropped with a warning: not reported, no duplicate, no shadowing of $COMPUTE_NODE', async () => {
    const { errors, warnings, providers } = load('noop-entries');
    expect(errors).toEqual([]);
    expect(providers.map((p) => p.id)).toEqual(['$COMPUTE_NODE', 'gpu-host-1']);
    expect(providers[1].traits).toEqual(['CUSTOM_GPU_HOST']);
    expect(warnings.map((w) => [w.entry, w.line, w.message])).toEqual(
      [
        ['providers[0] (name: gpu-host-1)', 5, 'gpu-host-1'],
        ['providers[1] (name: gpu-host-2)', 7, 'gpu-host-2'],
        [`providers[2] (uuid: ${UUID})`, 13, UUID],
      ].map(([entry, line, id]) => [
        entry,
        line,
        `Provider ${id} defined in ${join(fixture('noop-entries'), '10-noop.yaml')} has no additional inventories or traits and will be ignored.`,
      ]),
    );

    // The host's own uuid had only a no-op entry, so $COMPUTE_NODE still applies to it.
    const tree: DiscoveredProvider[] = [{ name: 'host1', inventories: { VCPU: { total: 8 } }, traits: ['COMPUTE_NODE'] }];
    const merged = mergeProviderConfigs(tree, providers, () => UUID, { startup: true });
    expect(merged.providers[0].traits).toEqual(['COMPUTE_NODE', 'CUSTOM_FROM_WILDCARD']);

    const { code, out, err } = await validateJson(fixture('noop-entries'));
    expect(code).toBe(0);
    expect(JSON.parse(out.join('')).map((p: { id: string }) => p.id)).toEqual(['$COMPUTE_NODE', 'gpu-host-1']);
    expect(err.join('\n')).toContain('has no additional inventories or traits and will be ignored');
  });

  it('validate exits non-zero for each refused directory', async () => {
    for (const [name] of refused) {
      const { code, out } = await validateJson(fixture(name));
      expect(code, name).toBe(1);
      expect(out, name).toEqual([]);
    }
  });
});
