// The compiled-in standard lists must match the reference files they came from.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../../src/placement/standard-names.js';

const REF = new URL('../../../shared/reference/', import.meta.url);
const lines = (name: string) =>
  readFileSync(new URL(name, REF), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));

describe.skipIf(!existsSync(new URL('traits.txt', REF)))('standard names match ../shared/reference', () => {
  it('resource classes, in canonical order', () => {
    expect([...STANDARD_RESOURCE_CLASSES]).toEqual(lines('resource-classes.txt'));
  });
  it('traits', () => {
    expect([...STANDARD_TRAITS]).toEqual(lines('traits.txt'));
  });
});
