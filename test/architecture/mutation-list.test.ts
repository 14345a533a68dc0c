// The mutation runner's module list names files by path; when code moves the
// list goes stale silently until someone runs `npm run mutation` (it refuses
// to start then). Checking it here keeps the list true with every change.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const listed = [...readFileSync('scripts/mutation.ts', 'utf8').matchAll(/'((?:src|test)\/[^']+\.ts)'/g)].map((m) => m[1]!);

describe('scripts/mutation.ts', () => {
  it('names files and tests that exist', () => {
    expect(listed.length).toBeGreaterThan(20);
    expect(listed.filter((path) => !existsSync(path))).toEqual([]);
  });
});
