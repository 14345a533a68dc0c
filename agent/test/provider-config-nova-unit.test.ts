// Nova's own unit tests of its provider config loader
// (nova/tests/unit/compute/test_provider_config.py, 26.2.2), ported: the same
// data files (fixtures/nova-unit, copied verbatim) and the same expectations,
// run through our loader. Nova's tests hand dicts to _parse_provider_yaml /
// _validate_provider_config; here each dict is written as a provider.yaml and
// loaded from a directory, as nova-compute loads it.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { formatProblem, loadProviderConfigs } from '../src/provider-config/load.js';
import { validateProviderConfig } from '../src/provider-config/nova-rules.js';
import type { PyDict } from '../src/provider-config/python-values.js';
import { safeLoad } from '../src/provider-config/pyyaml-load.js';

const data = (name: string) => fileURLToPath(new URL(`./fixtures/nova-unit/${name}`, import.meta.url));
const cases = <T>(name: string) => Object.entries(parse(readFileSync(data(name), 'utf8')) as Record<string, T>);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nova-unit-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function load(files: Record<string, unknown>) {
  for (const [name, config] of Object.entries(files)) writeFileSync(join(dir, name), stringify(config, { version: '1.1' }));
  return loadProviderConfigs(dir, { permissions: 'ignore' });
}

const U1 = 'aa884151-b4e2-4e82-9fd4-81cfcd01abb9';
const inventory = (rc: string) => ({ [rc]: { total: 100, reserved: 0, min_unit: 1, max_unit: 10, step_size: 1, allocation_ratio: 1 } });
const v1 = (providers: unknown[]) => ({ meta: { schema_version: '1.0' }, providers });

describe('SchemaValidationTestCasesV1', () => {
  it.each(
    cases<{ config: unknown; expected_messages: string[] }>('validation_error_test_data.yaml'),
  )('test_validation_errors: %s', (_name, { config }) => {
    const { errors, providers } = load({ 'provider.yaml': config ?? {} });
    expect(errors).not.toEqual([]);
    expect(providers).toEqual([]);
  });

  it.each(cases<{ config: unknown }>('validation_success_test_data.yaml'))('test_validation_success: %s', (_name, { config }) => {
    expect(load({ 'provider.yaml': config }).errors.map(formatProblem)).toEqual([]);
  });

  it('test_schema_version_matching: 1.0 is supported, 2.0 is refused, 1.1 loads with a warning', () => {
    let result = load({ 'provider.yaml': { meta: { schema_version: '1.0' } } });
    expect([result.errors, result.warnings]).toEqual([[], []]);
    result = load({ 'provider.yaml': { meta: { schema_version: '2.0' } } });
    expect(result.errors.map((e) => e.message)).toEqual(['Unsupported schema major version: 2']);
    result = load({ 'provider.yaml': { meta: { schema_version: '1.1' } } });
    expect(result.errors).toEqual([]);
    expect(result.warnings.map((w) => w.message)).toEqual([
      'schema version 1.1: Nova supports the major version, but not the minor. Some fields may be ignored.',
    ]);
  });
});

// Nova's tests call _validate_provider_config directly on dicts that never met
// the schema (uuid: 'uuid', an inventory without total): so do these.
function validateSample(sample: unknown) {
  const loaded = safeLoad(stringify(sample, { version: '1.1' }));
  if ('problem' in loaded) throw new Error(loaded.problem.message);
  return validateProviderConfig(loaded.value as PyDict, 'fake_path');
}

describe('ValidateProviderConfigTestCases', () => {
  it.each(cases<{ sample: unknown }>('validate_provider_good_config.yaml'))('test__validate_provider_good_config: %s', (_name, {
    sample,
  }) => {
    expect(validateSample(sample).problems).toEqual([]);
  });

  it.each(
    cases<{ sample: unknown; expected_messages: string[] }>('validate_provider_bad_config.yaml'),
  )('test__validate_provider_bad_config: %s', (_name, { sample, expected_messages }) => {
    const { problems } = validateSample(sample);
    expect(problems).toHaveLength(1);
    // Nova's message less its "An error occurred while processing a provider config file: " prefix.
    const expected = expected_messages[0].replace(/^An error occurred while processing a provider config file: /, '');
    expect(problems[0].message).toBe(expected);
  });

  it('test__validate_provider_config_one_noop_provider: the no-op entry is dropped with a warning, the other kept', () => {
    const { problems, warnings, entries } = validateSample({
      providers: [
        { identification: { name: 'NAME1' }, inventories: { additional: [{ CUSTOM_RESOURCE_CLASS: {} }] } },
        { identification: { name: 'NAME_453764' }, inventories: { additional: [] }, traits: { additional: [] } },
      ],
    });
    expect(problems).toEqual([]);
    expect(warnings.map((w) => w.message)).toEqual([
      'Provider NAME_453764 defined in fake_path has no additional inventories or traits and will be ignored.',
    ]);
    expect(entries.map((e) => [e.index, e.id])).toEqual([[0, 'NAME1']]);
  });

  it('the same no-op file through the whole loader: the schema wants a total first', () => {
    const { errors } = load({
      'p.yaml': v1([{ identification: { name: 'NAME1' }, inventories: { additional: [{ CUSTOM_RESOURCE_CLASS: {} }] } }]),
    });
    expect(errors.map((e) => e.message)).toEqual(["'total' is a required property"]);
  });
});

describe('GetProviderConfigsTestCases', () => {
  it('test_get_provider_configs_one_file', () => {
    copyFileSync(data('example_provider.yaml'), join(dir, 'example_provider.yaml'));
    const { errors, providers } = loadProviderConfigs(dir, { permissions: 'ignore' });
    expect(errors).toEqual([]);
    expect(providers).toEqual([
      {
        id: '$COMPUTE_NODE',
        identification: { name: '$COMPUTE_NODE' },
        inventories: inventory('CUSTOM_EXAMPLE_RESOURCE_CLASS'),
        traits: ['CUSTOM_TRAIT_ONE', 'CUSTOM_TRAIT2'],
        sourceFile: join(dir, 'example_provider.yaml'),
        index: 0,
      },
    ]);
  });

  it('test_get_provider_configs_one_file_uuid_conflict', () => {
    const { errors } = load({
      'file1.yaml': v1([
        {
          identification: { uuid: U1 },
          inventories: { additional: [inventory('CUSTOM_EXAMPLE_RESOURCE_CLASS1')] },
          traits: { additional: ['CUSTOM_TRAIT1'] },
        },
        {
          identification: { uuid: U1 },
          inventories: { additional: [inventory('CUSTOM_EXAMPLE_RESOURCE_CLASS2')] },
          traits: { additional: ['CUSTOM_TRAIT2'] },
        },
      ]),
    });
    expect(errors.map((e) => e.message)).toEqual([`Provider ${U1} has multiple definitions in source file(s): file1.yaml`]);
  });

  const provider = (n: number, name = `EXAMPLE_RESOURCE_PROVIDER${n}`) => ({
    identification: { name },
    inventories: { additional: [inventory(`CUSTOM_EXAMPLE_RESOURCE_CLASS${n}`)] },
    traits: { additional: [`CUSTOM_TRAIT${n}`] },
  });

  it('test_get_provider_configs_two_files', () => {
    const { errors, providers } = load({ 'file1.yaml': v1([provider(1)]), 'file2.yaml': v1([provider(2)]) });
    expect(errors).toEqual([]);
    expect(providers.map((p) => [p.id, p.sourceFile, p.inventories, p.traits])).toEqual([
      ['EXAMPLE_RESOURCE_PROVIDER1', join(dir, 'file1.yaml'), inventory('CUSTOM_EXAMPLE_RESOURCE_CLASS1'), ['CUSTOM_TRAIT1']],
      ['EXAMPLE_RESOURCE_PROVIDER2', join(dir, 'file2.yaml'), inventory('CUSTOM_EXAMPLE_RESOURCE_CLASS2'), ['CUSTOM_TRAIT2']],
    ]);
  });

  it('test_get_provider_configs_two_files_name_conflict', () => {
    const { errors } = load({ 'file1.yaml': v1([provider(1)]), 'file2.yaml': v1([provider(1)]) });
    expect(errors.map((e) => e.message)).toEqual([
      'Provider EXAMPLE_RESOURCE_PROVIDER1 has multiple definitions in source file(s): file1.yaml, file2.yaml',
    ]);
  });

  it('test_get_provider_configs_no_configs: a path that does not exist configures nothing, without an error', () => {
    const { errors, providers, warnings } = loadProviderConfigs('invalid_path!@#');
    expect(errors).toEqual([]);
    expect(providers).toEqual([]);
    expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(/no provider configs found/)]);
  });
});
