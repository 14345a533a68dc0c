// The differential tests' oracles (test/write-model/old/, test/write-model/old-cyborg/,
// test/placement/candidates-reference/) must not run the live domain rules they are
// compared with, or a regression in a rule would pass the differential unseen.
// They import frozen copies (test/oracle-rules/) and, from src/, only the harness both
// sides share: the database, the HTTP plumbing, wire schemas and presenters, the job
// plumbing and the live routes the old app falls back to for the reads it does not own.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf } from './layers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ORACLES = ['test/write-model/old', 'test/write-model/old-cyborg', 'test/placement/candidates-reference', 'test/oracle-rules'];

/** Live modules an oracle may import: the shared harness, never a domain rule. */
const HARNESS = [
  /^src\/db\//, // schema and client
  /^src\/(http|placement\/http|cyborg\/http)\//, // the HTTP kit and each API's plumbing
  /^src\/(placement|cyborg)\/(schemas\/|present\/|present\.ts$|versions\.ts$)/, // wire shapes
  /^src\/(errors|deps|microversion)\.ts$/, // the error type the kit renders, Deps
  /^src\/jobs\/(messages|registry)\.ts$/, // job plumbing
  /^src\/cyborg\/nova-events\.ts$/, // delivery to Nova (a fake in the test)
  /^src\/placement\/standard-names\.generated\.ts$/, // data
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** `file -> live module` for every import of a live module outside the harness. */
function liveRuleImports(sources: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [file, source] of Object.entries(sources)) {
    for (const spec of importsOf(source)) {
      if (!spec.startsWith('.')) continue;
      const target = posix.join(posix.dirname(file), spec).replace(/\.js$/, '.ts');
      if (target.startsWith('src/') && !HARNESS.some((allowed) => allowed.test(target))) found.push(`${file} -> ${target}`);
    }
  }
  return found.sort();
}

describe('frozen oracles', () => {
  it('flag an oracle that imports a live rule', () => {
    expect(
      liveRuleImports({
        'test/placement/candidates-reference/search.ts': "import { capacityOf } from '../../../src/placement/capacity.js';",
        'test/write-model/old-cyborg/bind.ts': "import { ArqState } from '../../../src/cyborg/arq-state.js';",
        'test/write-model/old/app.ts': "import type { Db } from '../../../src/db/client.js';",
      }),
    ).toEqual([
      'test/placement/candidates-reference/search.ts -> src/placement/capacity.ts',
      'test/write-model/old-cyborg/bind.ts -> src/cyborg/arq-state.ts',
    ]);
  });

  it('import no live domain rule', () => {
    const sources: Record<string, string> = {};
    for (const dir of ORACLES) {
      for (const path of files(join(ROOT, dir))) sources[relative(ROOT, path).split('\\').join('/')] = readFileSync(path, 'utf8');
    }
    expect(Object.keys(sources).length).toBeGreaterThan(20);
    expect(liveRuleImports(sources)).toEqual([]);
  });
});
