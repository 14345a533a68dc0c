// An extension that imports another's folder says so in its object (`requires`),
// so that removing an extension is deleting its folder, its line and the lines
// of those that declare they need it, and an app that installs one without what
// it needs refuses to start, naming what is missing.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXTENSIONS } from '../../src/extensions.js';
import { importsOf } from './layers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXT = 'src/ext';

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    return statSync(join(ROOT, path)).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** extension folder -> the other extension folders its files import. */
function folderImports(): Map<string, Set<string>> {
  const folders = readdirSync(join(ROOT, EXT)).filter((name) => statSync(join(ROOT, EXT, name)).isDirectory() && name !== 'http');
  const imports = new Map<string, Set<string>>();
  for (const folder of folders) {
    const used = new Set<string>();
    for (const file of filesUnder(`${EXT}/${folder}`)) {
      for (const spec of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const target = posix.join(posix.dirname(file), spec);
        const other = target.startsWith(`${EXT}/`) ? target.slice(EXT.length + 1).split('/')[0]! : undefined;
        if (other && other !== folder && folders.includes(other)) used.add(other);
      }
    }
    imports.set(folder, used);
  }
  return imports;
}

describe("an extension's requirements", () => {
  it("every import of another extension's folder is declared in the importer's `requires`, and nothing more", () => {
    const byName = new Map(EXTENSIONS.map((e) => [e.name, e]));
    const undeclared: string[] = [];
    const unused: string[] = [];
    for (const [folder, used] of folderImports()) {
      const extension = byName.get(folder);
      expect(extension, `src/ext/${folder} is an installed extension of that name`).toBeDefined();
      const declared = new Set(extension!.requires ?? []);
      for (const other of used) if (!declared.has(other)) undeclared.push(`${folder} imports ${other}`);
      for (const name of declared) if (!used.has(name)) unused.push(`${folder} requires ${name} but imports nothing of it`);
    }
    expect(undeclared).toEqual([]);
    expect(unused).toEqual([]);
  });

  it('names only shipped extensions, and none requires itself', () => {
    const names = new Set(EXTENSIONS.map((e) => e.name));
    for (const e of EXTENSIONS)
      for (const name of e.requires ?? []) {
        expect(names.has(name), `${e.name} requires ${name}`).toBe(true);
        expect(name).not.toBe(e.name);
      }
  });

  it('leaves counters, events, first-of, gangs, leases, limits and taints needing nobody', () => {
    const free = EXTENSIONS.filter((e) => !e.requires?.length).map((e) => e.name);
    expect(free.sort()).toEqual(['counters', 'events', 'first-of', 'gangs', 'leases', 'limits', 'taints']);
  });

  it('leaves leases required by nobody: the ends the others write are a part they share (src/ext/allocation-ends.ts)', () => {
    expect(EXTENSIONS.filter((e) => e.requires?.includes('leases')).map((e) => e.name)).toEqual([]);
  });
});
