// Differential test: every case of the corpus must get the verdict Nova's own
// loader (nova/compute/provider_config.py, python3-nova 26.2.2) gives it, and
// an accepted case must yield the same providers. The verdicts were produced
// by running Nova's code (agent/scripts/nova-provider-config-verdicts.py); see
// fixtures/README.md to regenerate them. No python is needed here.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatProblem, loadProviderConfigs, type ConfiguredProvider } from '../src/provider-config/load.js';

interface NovaProvider {
  id: string;
  identification: Record<string, unknown>;
  source_file: string;
  inventories: Record<string, Record<string, unknown>>;
  traits: unknown[];
}
type NovaVerdict =
  | { accepted: true; providers: NovaProvider[]; warnings: string[] }
  | { accepted: false; error_class: string; message: string; warnings: string[] };

const corpus = fileURLToPath(new URL('./fixtures/provider-config-corpus/', import.meta.url));
const verdicts = (JSON.parse(readFileSync(join(corpus, 'nova-verdicts.json'), 'utf8')) as { cases: Record<string, NovaVerdict> }).cases;

/** Nova's JSON form of a float it could not write as a number. */
function numberOf(value: unknown): unknown {
  if (value && typeof value === 'object' && 'float' in value) {
    const f = (value as { float: string }).float;
    return f === 'nan' ? Number.NaN : f === 'inf' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  }
  return value;
}

function novaShape(p: NovaProvider) {
  return {
    id: p.id,
    identification: p.identification,
    sourceFile: p.source_file,
    inventories: Object.fromEntries(
      Object.entries(p.inventories).map(([rc, inv]) => [rc, Object.fromEntries(Object.entries(inv).map(([k, v]) => [k, numberOf(v)]))]),
    ),
    traits: p.traits,
  };
}

function ourShape(p: ConfiguredProvider) {
  return { id: p.id, identification: p.identification, sourceFile: basename(p.sourceFile), inventories: p.inventories, traits: p.traits };
}

describe("provider config corpus judged by Nova's loader", () => {
  const names = Object.keys(verdicts);
  it('has the corpus and its verdicts', () => {
    expect(names.length).toBeGreaterThan(400);
  });

  it.each(names)('%s', (name) => {
    const nova = verdicts[name];
    const ours = loadProviderConfigs(join(corpus, 'cases', name), { permissions: 'ignore' });
    const problems = ours.errors.map(formatProblem);
    if (!nova.accepted) {
      expect(problems, `Nova refuses it (${nova.error_class}: ${nova.message})`).not.toEqual([]);
      return;
    }
    expect(problems, 'Nova accepts it').toEqual([]);
    expect(ours.providers.map(ourShape)).toEqual(nova.providers.map(novaShape));
  });
});
