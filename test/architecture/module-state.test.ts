// State at module scope is shared by every app of the process: the Node suite
// builds many apps per process (its files share forks), a cluster's server
// builds one, a Worker isolate one. What one app keeps about its database (a
// cache keyed by a handle, an id or an epoch) lives on what the app builds
// (its Deps, its store, an extension's setUp state: ext/holds/installed.ts,
// ext/preemption/cloud.ts), never at module scope, where two test databases
// copied from one template read each other's. Module scope keeps only what
// is derived from code and its arguments alone (a memo), and what is the
// process's by design (its stderr, a Worker isolate's one app), each listed
// here with why. Found: variables (let, var), collections (Map, Set, WeakMap,
// WeakSet) and empty arrays that are not read-only, and static fields; a
// constant table (an UPPER_CASE name built from its entries) is not state.
// Not found: state inside an object a module-level call returns (a review's
// job; a factory's state belongs to whoever calls it per app).
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from './layers.js';

type Why = { pure: string } | { process: string };

/** Every module-level state of src/ (file#name), and why it may be there. */
const ALLOWED: Record<string, Why> = {
  'src/db/hrana-reads.ts#rowMakers': { pure: 'a row maker per column list, bounded' },
  'src/deps.ts#stderrGuarded': { process: "stderr is the process's" },
  'src/entry/worker.ts#ready': { process: 'a Worker isolate serves one app' },
  'src/entry/worker.ts#warming': { process: "the isolate's one warm-up" },
  'src/ext/preemption/victims.ts#sortedIdsOf': { pure: 'a victim list, sorted once (keyed by the list)' },
  'src/ext/simulate/world.ts#classNameCache': { pure: "a snapshot's names inverted (keyed by its map, never changed)" },
  'src/http/observe.ts#templates': { pure: 'a route label per path, bounded' },
  'src/microversion.ts#parsedConstants': { pure: 'the versions named in code, parsed' },
  'src/openapi/document.ts#cached': { pure: 'the document, from the code (EXTENSIONS)' },
  'src/openapi/operations.ts#operations': { pure: 'the operations, from the code (EXTENSIONS)' },
  'src/placement/candidates/index.ts#sharedRequestTexts': { pure: "a parsed request's text (keyed by the request, never changed)" },
  'src/placement/candidates/index.ts#sharedRequestParts': { pure: "a parsed request's names and prefilter (keyed by the request)" },
  'src/placement/candidates/present/json.ts#quotedNames': { pure: 'a name, quoted once, bounded' },
  'src/placement/candidates/present/json.ts#traitLists': { pure: 'a trait set, quoted once (keyed by the set)' },
  'src/placement/candidates/present/json.ts#lastKeys': { pure: 'the last suffix list sorted, and its order' },
  'src/placement/candidates/present/json.ts#lastOrder': { pure: 'the last suffix list sorted, and its order' },
  'src/placement/candidates/present/json.ts#indexKeys': { pure: 'whether a suffix is an array index, bounded' },
  'src/placement/schemas/reshaper.ts#byAllocations': { pure: 'a body schema per allocations schema' },
};

const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet']);

/** Whether a module-level declaration holds state: a variable, or a collection or empty array that may be changed. */
function holdsState(list: ts.VariableDeclarationList, declaration: ts.VariableDeclaration, file: ts.SourceFile): boolean {
  if ((list.flags & ts.NodeFlags.Const) === 0) return true;
  const init = declaration.initializer;
  const type = declaration.type?.getText(file) ?? '';
  const name = declaration.name.getText(file);
  if (init && ts.isNewExpression(init) && ts.isIdentifier(init.expression) && COLLECTIONS.has(init.expression.text)) {
    const constantTable = /^[A-Z][A-Z0-9_]*$/.test(name) && (init.arguments?.length ?? 0) > 0;
    return !constantTable && !/^Readonly(Map|Set)</.test(type);
  }
  return !!init && ts.isArrayLiteralExpression(init) && init.elements.length === 0 && !type.startsWith('readonly ');
}

/** The module-level state of one module's text, by name. */
function stateIn(path: string, text: string): string[] {
  const found: string[] = [];
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  for (const statement of file.statements) {
    if (ts.isVariableStatement(statement))
      for (const declaration of statement.declarationList.declarations)
        if (holdsState(statement.declarationList, declaration, file)) found.push(declaration.name.getText(file));
    if (ts.isClassDeclaration(statement))
      for (const member of statement.members) {
        const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
        const isStatic = modifiers.some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
        const isReadonly = modifiers.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword);
        if (ts.isPropertyDeclaration(member) && isStatic && !isReadonly) found.push(member.name.getText(file));
      }
  }
  return found;
}

/** What may declare state (a top-level declaration starts its line): the modules parsed. */
const MAY_HOLD_STATE =
  /^(?:export )?(?:let|var) |^(?:export )?const .*= (?:new (?:Weak)?(?:Map|Set)\b|\[\])|\bstatic (?!readonly\b)\w+\s*[=:;]/m;

/** src/'s module-level state, as file#name. */
function moduleState(root: string): string[] {
  return sourceFiles(join(root, 'src')).flatMap((path) => {
    const text = readFileSync(path, 'utf8');
    if (!MAY_HOLD_STATE.test(text)) return [];
    const at = relative(root, path).split('\\').join('/');
    return stateIn(path, text).map((name) => `${at}#${name}`);
  });
}

describe('state at module scope', () => {
  it("is only what is pure or the process's by design, each listed with why", () => {
    const unlisted = moduleState(join(import.meta.dirname, '../..')).filter((key) => !(key in ALLOWED));
    expect(
      unlisted,
      "module-level state that is not listed: move what an app keeps onto what it builds (Deps, its store, an extension setUp state), or list why it is pure or the process's",
    ).toEqual([]);
  });

  it('is found: a variable, a cache, an empty list that may grow and a static field; a constant table is not', () => {
    // As the scan reads a module: the lines that may hold state first, then the declarations.
    const sample = (text: string) => MAY_HOLD_STATE.test(text) && stateIn('x.ts', text).length > 0;
    expect(sample('let seen = 0;')).toBe(true);
    expect(sample('const byHandle = new WeakMap<object, number>();')).toBe(true);
    expect(sample('export const waiting: Map<number, () => void> = new Map();')).toBe(true);
    expect(sample('const KNOWN = new Map<string, number>();')).toBe(true);
    expect(sample('const pending: string[] = [];')).toBe(true);
    expect(sample("const NAMES = new Set(['a', 'b']);")).toBe(false);
    expect(sample('const NONE: ReadonlySet<number> = new Set();')).toBe(false);
    expect(sample('const NO_IDS: readonly number[] = [];')).toBe(false);
    expect(sample('const table = { a: 1 };')).toBe(false);
    expect(sample('class Pool { static size = 0; }')).toBe(true);
    expect(sample('class Pool { static readonly SIZE = 4; static of() {} }')).toBe(false);
  });
});
