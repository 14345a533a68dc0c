// The layer rules of README "Architecture": edge (HTTP) -> domain -> db, never upwards.
// KNOWN_LEAKS lists the imports that still break a rule; it may only shrink: a new leak
// fails this test, and so does a listed leak that is gone (delete its line).
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { findViolations, importsOf, layerOf } from './layers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const KNOWN_LEAKS: string[] = [];

describe('import direction', () => {
  it('classifies files by folder', () => {
    expect(layerOf('src/placement/routes/traits.ts')).toBe('edge');
    expect(layerOf('src/http/auth.ts')).toBe('edge');
    expect(layerOf('src/placement/repo/traits.ts')).toBe('domain');
    expect(layerOf('src/placement/candidates/search.ts')).toBe('domain');
    expect(layerOf('src/db/client.ts')).toBe('db');
  });

  it('finds static, re-exported and dynamic imports', () => {
    const source =
      "import { a } from './a.js';\nimport type { B } from \"../b.js\";\nexport * from './c.js';\nconst d = await import('./d.js');";
    expect(importsOf(source)).toEqual(['./a.js', '../b.js', './c.js', './d.js']);
  });

  it('no lower layer imports a higher one beyond the known leaks', () => {
    const found = findViolations(ROOT).map((v) => `${v.file} -> ${v.imports}`);
    expect(
      found.filter((v) => !KNOWN_LEAKS.includes(v)),
      'new imports against the layer rules',
    ).toEqual([]);
    expect(
      KNOWN_LEAKS.filter((v) => !found.includes(v)),
      'fixed leaks still listed in KNOWN_LEAKS',
    ).toEqual([]);
  });
});
