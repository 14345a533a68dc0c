// Which layer a source file belongs to, and which imports break the layer rules.
// Used by test/architecture/import-direction.test.ts (and `npm run lint`).
//
//   edge    the app factory src/app.ts and the HTTP folders: src/entry/, src/http/ (the kit),
//           src/openapi/, src/dashboard/, each API's own src/<api>/http/ (app, profile,
//           middleware, error rendering, routes/) and each extension's src/ext/<name>/http/
//   domain  every other folder of src/: src/placement/ (candidates/, writes/, repo/ ...),
//           src/cyborg/, src/jobs/, src/diagnostics/ ..., and src/shared/ (the leaves every
//           layer above db may use: uuid, version, validation messages, SettingProblem)
//   db      src/db/
//   root    the other loose files of src/ (deps, config, compose, errors ...): composition,
//           and each extension's own composition, src/ext/<name>/extension.ts (its one object,
//           src/extension.ts: its hooks from the domain beside its routes from its http/)
//
// A file's folder alone decides its layer: there is no list of exceptions.
// An edge file may import anything, except the HTTP kit (src/http/): it serves both APIs from
// a profile each declares, so it imports no API or domain module, only itself, the shared
// leaves and the Deps type; and only the kit handles Hono's HTTPException (every error is
// rendered by the kit's onError). A domain file may import the domain and db/, never Hono or
// the edge. A shared file (src/shared/) imports only src/shared/ and the loose files of src/
// (errors ...), never another folder: it stays a leaf. A db file imports only db/. A route file never imports another route file.
// Within the domain: jobs/ runs what modules register and imports none of them, and the
// accelerator API reads placement's data through placement's functions, not its tables.
// Placement knows no extension: src/placement never imports src/ext (the extensions plug
// into its hooks, installed by the composition root); nor does any other part but the
// extensions themselves and their one list, src/extensions.ts, so removing one is deleting
// its folder and its line. And the folders of src/ form no
// cycle: where src/a imports src/b, nothing in src/b leads back to src/a (each import
// that closes a cycle is a violation, named with the folders of its cycle). The loose
// files of src/ are in that graph too, each on its own (config.ts importing an extension
// that imports config.ts is a cycle), but for the composition types, deps.ts and
// extension.ts: they type every part of the service (Deps, Extension) and every part
// takes them, so they import types only, and never an extension's (Deps names none).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';

export type Layer = 'edge' | 'domain' | 'db' | 'root';

const EDGE_FOLDERS = /^src\/(entry|http|openapi|dashboard|[^/]+\/http|ext\/[^/]+\/http)\//;

/** An extension's one object (src/extension.ts): it composes its own layers, as compose.ts does the service's. */
const EXTENSION_OBJECT = /^src\/ext\/[^/]+\/extension\.ts$/;

export function layerOf(file: string): Layer {
  if (file === 'src/app.ts' || EDGE_FOLDERS.test(file)) return 'edge';
  if (EXTENSION_OBJECT.test(file)) return 'root';
  if (file.startsWith('src/db/')) return 'db';
  if (/^src\/[^/]+\//.test(file)) return 'domain';
  return 'root';
}

export interface Violation {
  file: string;
  imports: string;
  rule: string;
}

const HTTP_PACKAGES = /^(hono|hono\/.*|@hono\/.*)$/;

/** The one list of the extensions: besides the extensions themselves, the only file of src/ that imports src/ext/. */
const EXTENSION_LIST = 'src/extensions.ts';

/** The types every part takes (Deps, Extension): type-only imports, no extension's, outside the cycle check. */
const COMPOSITION_TYPES = new Set(['src/deps.ts', 'src/extension.ts']);

/** Relative imports that bring values, not only types (`import type`, `export type` are left out). */
function valueImportsOf(source: string): string[] {
  const pattern = /(?:^|\n)\s*(?:import|export)(?!\s+type\b)\b[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]/g;
  return [...source.matchAll(pattern)].map((m) => m[1]!);
}

/** What the HTTP kit may import besides itself: the shared leaves and the Deps type. */
const KIT_IMPORTS = new Set(['src/errors.ts', 'src/microversion.ts', 'src/shared/validation-messages.ts', 'src/deps.ts']);

/** Every .ts file under `dir`. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Static and dynamic import specifiers of a module (type-only imports included). */
export function importsOf(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const match of source.matchAll(pattern)) found.push((match[1] ?? match[2])!);
  return found;
}

export function findViolations(root: string): Violation[] {
  const sources: Record<string, string> = {};
  for (const path of sourceFiles(join(root, 'src'))) sources[relative(root, path).split('\\').join('/')] = readFileSync(path, 'utf8');
  return findViolationsIn(sources);
}

/** The violations among `sources` (repository-relative path -> module text). */
export function findViolationsIn(sources: Record<string, string>): Violation[] {
  const violations: Violation[] = [];
  for (const [file, source] of Object.entries(sources)) {
    const layer = layerOf(file);
    if (COMPOSITION_TYPES.has(file)) {
      for (const spec of valueImportsOf(source)) {
        violations.push({ file, imports: posix.join(posix.dirname(file), spec), rule: 'the composition types import a value' });
      }
    }
    for (const spec of importsOf(source)) {
      if (!spec.startsWith('.')) {
        if ((layer === 'domain' || layer === 'db') && HTTP_PACKAGES.test(spec)) {
          violations.push({ file, imports: spec, rule: `${layer} imports Hono` });
        } else if (spec === 'hono/http-exception' && !file.startsWith('src/http/')) {
          violations.push({ file, imports: spec, rule: 'handles HTTPException outside the HTTP kit' });
        }
        continue;
      }
      const target = posix.join(posix.dirname(file), spec).replace(/\.js$/, '.ts');
      const targetLayer = layerOf(target);
      if (layer === 'db' && targetLayer !== 'db') {
        violations.push({ file, imports: target, rule: `db imports ${targetLayer}` });
      } else if (file.startsWith('src/shared/') && folderOf(target) !== undefined && !target.startsWith('src/shared/')) {
        violations.push({ file, imports: target, rule: 'a shared leaf imports a folder of src/' });
      } else if (layer === 'domain' && targetLayer === 'edge') {
        violations.push({ file, imports: target, rule: 'domain imports edge' });
      } else if (file.startsWith('src/http/') && !target.startsWith('src/http/') && !KIT_IMPORTS.has(target)) {
        violations.push({ file, imports: target, rule: 'the HTTP kit imports an API or domain module' });
      } else if (file.startsWith('src/jobs/') && /^src\/(cyborg|placement)\//.test(target)) {
        violations.push({ file, imports: target, rule: 'jobs imports an API module' });
      } else if (file.startsWith('src/cyborg/') && target === 'src/db/schema/placement.ts') {
        violations.push({ file, imports: target, rule: "cyborg reads placement's tables" });
      } else if (file.startsWith('src/placement/') && target.startsWith('src/ext/')) {
        violations.push({ file, imports: target, rule: 'placement imports an extension' });
      } else if (COMPOSITION_TYPES.has(file) && target.startsWith('src/ext/')) {
        violations.push({ file, imports: target, rule: 'the composition types name an extension' });
      } else if (target.startsWith('src/ext/') && !file.startsWith('src/ext/') && file !== EXTENSION_LIST) {
        violations.push({ file, imports: target, rule: 'imports an extension outside the list' });
      } else if (/\/routes\//.test(file) && /\/routes\//.test(target) && !target.endsWith('/routes/index.ts')) {
        if (!file.endsWith('/routes/index.ts')) violations.push({ file, imports: target, rule: 'route imports route' });
      }
    }
  }
  violations.push(...folderCycles(sources));
  return violations.sort((a, b) => `${a.file} ${a.imports}`.localeCompare(`${b.file} ${b.imports}`));
}

/** The top-level folder of src/ a file is in (src/placement/writes/x.ts: placement), none for a loose file of src/. */
const folderOf = (file: string): string | undefined => /^src\/([^/]+)\//.exec(file)?.[1];

/** A node of the cycle graph: a file's folder, or a loose file of src/ itself (by its name: config.ts). */
const nodeOf = (file: string): string | undefined => folderOf(file) ?? (/^src\/[^/]+\.ts$/.test(file) ? file.slice(4) : undefined);

/**
 * Every import from one folder of src/ to another that lies on a cycle of
 * folders (Tarjan's strongly connected components over the folder graph).
 */
export function folderCycles(sources: Record<string, string>): Violation[] {
  const imports: { file: string; target: string; from: string; to: string }[] = [];
  const edges = new Map<string, Set<string>>();
  for (const [file, source] of Object.entries(sources)) {
    const from = nodeOf(file);
    if (!from || COMPOSITION_TYPES.has(file)) continue;
    for (const spec of importsOf(source)) {
      if (!spec.startsWith('.')) continue;
      const target = posix.join(posix.dirname(file), spec).replace(/\.js$/, '.ts');
      const to = nodeOf(target);
      if (!to || to === from) continue;
      imports.push({ file, target, from, to });
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  const component = new Map<string, string[]>();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const members: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      members.push(member);
    } while (member !== node);
    members.sort();
    if (members.length > 1) for (const m of members) component.set(m, members);
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return imports
    .filter(({ from, to }) => component.has(from) && component.get(from) === component.get(to))
    .map(({ file, target, from }) => ({ file, imports: target, rule: `folder cycle: ${component.get(from)!.join(', ')}` }));
}
