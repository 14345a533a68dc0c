// The compiled-in standard lists are generated from the data files beside them, and those
// must match the reference lists they were copied from.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GENERATED_PATH, generateFromData, readNameList, renderStandardNames } from '../../scripts/generate-standard-names.js';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../../src/placement/standard-names.generated.js';
import { describeWithPart, missingUnless } from '../helpers/parts.js';

const REF = new URL('../../../shared/reference/', import.meta.url);
const DATA = new URL('../../src/placement/standard-names/', import.meta.url);

describe('standard names', () => {
  it('the generated module is what the generator makes from the data files', () => {
    expect(readFileSync(GENERATED_PATH, 'utf8'), 'run `npm run names:generate`').toBe(generateFromData());
  });

  it('the generator keeps order and skips comments', () => {
    const out = renderStandardNames('# classes\nVCPU\nMEMORY_MB\n', '# traits\nB_TRAIT\n\nA_TRAIT\n');
    expect(out).toContain('"VCPU",\n  "MEMORY_MB",');
    expect(out).toContain('"B_TRAIT",\n  "A_TRAIT",');
    expect(out).toContain('// # classes');
  });

  it('resource class ids follow the canonical order', () => {
    expect(STANDARD_RESOURCE_CLASSES.slice(0, 3)).toEqual(['VCPU', 'MEMORY_MB', 'DISK_GB']);
    expect(STANDARD_TRAITS).toContain('HW_CPU_X86_AVX2');
  });

  const refMissing = missingUnless(
    ['resource-classes.txt', 'traits.txt'].map((name) => fileURLToPath(new URL(name, REF))),
    "upstream's reference name lists in ../shared/reference (the CI checkout has them)",
  );
  describeWithPart(refMissing, 'data files match ../shared/reference', () => {
    for (const name of ['resource-classes.txt', 'traits.txt']) {
      it(name, () => {
        const ours = readNameList(readFileSync(new URL(name, DATA), 'utf8')).names;
        expect(ours).toEqual(readNameList(readFileSync(new URL(name, REF), 'utf8')).names);
      });
    }
  });
});
