// Loads every *.yaml provider config file of a directory exactly as
// nova-compute's loader (nova/compute/provider_config.py) does: files in
// lexicographic order, each read as PyYAML's safe_load reads it
// (pyyaml-load.ts) and judged by Nova's rules (nova-rules.ts); an id (uuid or
// name) defined twice anywhere is an error; entries that set nothing are
// dropped with a warning. A directory that is missing or holds no *.yaml file
// configures nothing, as in Nova.
// Bad files never throw: every problem comes back naming file, entry, field.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Document, LineCounter } from 'yaml';
import { judgeFile, type Path } from './nova-rules.js';
import { isDict, type PyDict, type PyValue } from './python-values.js';
import { pythonText, safeLoad } from './pyyaml-load.js';
import { decodeUtf8 } from './pyyaml-rules.js';
import type { Inventory } from './schema.js';

export interface ConfigProblem {
  file: string;
  /** e.g. `providers[1] (name: gpu-host-1)` */
  entry?: string;
  /** dotted path inside the entry (or the file when no entry), e.g. `inventories.additional.0.CUSTOM_X.total` */
  field?: string;
  line?: number;
  column?: number;
  message: string;
}

export interface ConfiguredProvider {
  /** uuid, name or `$COMPUTE_NODE`, as written */
  id: string;
  identification: { uuid?: string; name?: string };
  /** inventories.additional merged item by item (a later item wins), as Nova's resource tracker merges them */
  inventories: Record<string, Inventory>;
  /** traits.additional as listed */
  traits: string[];
  /** exact decimal text of integers past 2^53, which `inventories` can only hold rounded: `{rc: {field: text}}` */
  exactIntegers?: Record<string, Record<string, string>>;
  sourceFile: string;
  /** position in its file's providers list */
  index: number;
}

export type PermissionPolicy = 'refuse' | 'warn' | 'ignore';

export interface LoadOptions {
  /** files writable by anyone but the agent's user (or root): refuse them, warn, or don't check (Nova does not) */
  permissions?: PermissionPolicy;
}

export interface LoadResult {
  files: string[];
  providers: ConfiguredProvider[];
  errors: ConfigProblem[];
  warnings: ConfigProblem[];
}

/**
 * `*.yaml` entries of `dir` as glob.glob(dir/*.yaml) lists them (names starting
 * with a dot excluded, directories included: Nova fails to open them), in
 * Python's sort order (code points).
 */
export function providerConfigFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && !name.startsWith('.'))
    .map((name) => join(dir, name))
    .sort(byCodePoint);
}

function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export function formatProblem(p: ConfigProblem): string {
  const where = p.line !== undefined ? `${p.file}:${p.line}:${p.column ?? 1}` : p.file;
  const parts = [where, p.entry, p.field].filter((x): x is string => Boolean(x));
  return `${parts.join(': ')}: ${p.message}`;
}

export function loadProviderConfigs(dir: string, options: LoadOptions = {}): LoadResult {
  const result: LoadResult = { files: [], providers: [], errors: [], warnings: [] };
  let files: string[];
  try {
    files = providerConfigFiles(dir);
  } catch {
    files = [];
  }
  if (files.length === 0) {
    // Nova: "No provider configs found", and it starts with none.
    result.warnings.push({ file: dir, message: 'no provider configs found (no readable *.yaml file); none applied' });
    return result;
  }
  result.files = files;
  const seen = new Map<string, ConfiguredProvider>();
  for (const file of files) {
    const before = result.errors.length;
    const providers = loadFile(file, options.permissions ?? 'warn', result);
    if (result.errors.length > before) continue;
    for (const provider of providers) {
      const earlier = seen.get(provider.id);
      if (earlier) {
        const sources = [...new Set([basename(earlier.sourceFile), basename(file)])].sort();
        result.errors.push({
          file,
          entry: entryLabel(provider.index, provider.identification),
          field: 'identification',
          message: `Provider ${provider.id} has multiple definitions in source file(s): ${sources.join(', ')}`,
        });
        continue;
      }
      seen.set(provider.id, provider);
      result.providers.push(provider);
    }
  }
  return result;
}

function loadFile(file: string, permissions: PermissionPolicy, result: LoadResult): ConfiguredProvider[] {
  const problem = (p: Omit<ConfigProblem, 'file'>) => result.errors.push({ file, ...p });
  let bytes: Buffer;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new Error('not a regular file');
    if (permissions !== 'ignore') {
      const insecure = insecurePermissions(stat.mode, stat.uid);
      if (insecure) (permissions === 'refuse' ? result.errors : result.warnings).push({ file, message: insecure });
      if (insecure && permissions === 'refuse') return [];
    }
    bytes = readFileSync(file);
  } catch (err) {
    problem({ message: `Unable to read yaml config file: ${(err as Error).message}` });
    return [];
  }

  const decoded = decodeUtf8(bytes);
  if ('problem' in decoded) {
    const before = new TextDecoder('utf-8').decode(decoded.bytesBefore);
    problem({ ...textPosition(before, before.length), message: `Unable to load yaml file: ${decoded.problem.message}` });
    return [];
  }
  const text = pythonText(decoded.text);
  const loaded = safeLoad(text);
  if ('problem' in loaded) {
    const at = loaded.problem.offset === undefined ? {} : textPosition(text, loaded.problem.offset);
    problem({ ...at, message: `Unable to load yaml file: ${loaded.problem.message}` });
    return [];
  }
  const { value, doc, lineCounter } = loaded;
  const judgement = judgeFile(value, file);
  const report = (into: ConfigProblem[], path: Path, message: string) => {
    const [entryIndex, fieldPath] = splitEntry(path);
    into.push({
      file,
      entry: entryIndex === undefined ? undefined : entryLabel(entryIndex, identificationAt(value, entryIndex)),
      field: fieldPath.length > 0 ? fieldPath.join('.') : undefined,
      ...locateNode(doc, lineCounter, path),
      message,
    });
  };
  for (const p of judgement.problems) report(result.errors, p.path, p.message);
  for (const w of judgement.warnings) report(result.warnings, w.path, w.message);
  if (judgement.problems.length > 0) return [];

  return judgement.entries.map(({ index, entry, id, identification }) => {
    const inventories = mergedInventories(entry);
    for (const [rc, inventory] of Object.entries(inventories))
      if (inventory.allocation_ratio !== undefined && !Number.isFinite(inventory.allocation_ratio))
        report(
          result.warnings,
          ['providers', index, 'inventories', 'additional'],
          `${rc} allocation_ratio is ${inventory.allocation_ratio}: Nova accepts it, but Placement will refuse this inventory`,
        );
    const exactIntegers = bigIntegers(entry);
    return {
      id,
      identification,
      inventories,
      traits: traitsOf(entry),
      sourceFile: file,
      index,
      ...(exactIntegers ? { exactIntegers } : {}),
    };
  });
}

/** What the resource tracker makes of inventories.additional: each mapping item merged in, later items winning. */
function mergedInventories(entry: PyDict): Record<string, Inventory> {
  const inventories = entry.get('inventories');
  const additional = isDict(inventories) ? inventories.get('additional') : undefined;
  const merged: Record<string, Inventory> = {};
  for (const item of Array.isArray(additional) ? additional : []) {
    if (!isDict(item)) continue;
    for (const [rc, fields] of item.entries()) {
      const inventory: Record<string, number> = {};
      for (const [field, v] of (fields as PyDict).entries()) inventory[field as string] = Number(v as bigint | number);
      merged[rc as string] = inventory as unknown as Inventory;
    }
  }
  return merged;
}

function bigIntegers(entry: PyDict): Record<string, Record<string, string>> | undefined {
  const inventories = entry.get('inventories');
  const additional = isDict(inventories) ? inventories.get('additional') : undefined;
  let found: Record<string, Record<string, string>> | undefined;
  for (const item of Array.isArray(additional) ? additional : []) {
    if (!isDict(item)) continue;
    for (const [rc, fields] of item.entries())
      for (const [field, v] of (fields as PyDict).entries())
        if (typeof v === 'bigint' && !Number.isSafeInteger(Number(v))) {
          found ??= {};
          found[rc as string] = { ...found[rc as string], [field as string]: v.toString() };
        }
  }
  return found;
}

/**
 * The `validate --json` shape other tools compare with Nova's loader, in JSON
 * as Python's json.dumps writes Nova's values: integers past 2^53 exactly,
 * infinities and NaN as Infinity / -Infinity / NaN (json.dumps' default).
 */
export function providerConfigsAsJson(providers: readonly ConfiguredProvider[]): string {
  const raw = (text: string) => `\u0000RAW:${text}`;
  const value = providers.map((p) => ({
    id: p.id,
    identification: p.identification,
    inventories: Object.fromEntries(
      Object.entries(p.inventories).map(([rc, inventory]) => [
        rc,
        Object.fromEntries(
          Object.entries(inventory).map(([field, v]) => {
            const exact = p.exactIntegers?.[rc]?.[field];
            if (exact !== undefined) return [field, raw(exact)];
            if (typeof v === 'number' && !Number.isFinite(v))
              return [field, raw(Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity')];
            return [field, v];
          }),
        ),
      ]),
    ),
    traits: p.traits,
  }));
  return JSON.stringify(value).replace(/"\\u0000RAW:([^"]*)"/g, '$1');
}

function traitsOf(entry: PyDict): string[] {
  const traits = entry.get('traits');
  const additional = isDict(traits) ? traits.get('additional') : undefined;
  return Array.isArray(additional) ? [...(additional as string[])] : [];
}

function insecurePermissions(mode: number, uid: number): string | undefined {
  if (mode & 0o022)
    return `file is writable by group or others (mode ${(mode & 0o777).toString(8)}); provider configs should be writable only by the agent's user`;
  const me = typeof process.getuid === 'function' ? process.getuid() : uid;
  if (uid !== me && uid !== 0) return `file is owned by uid ${uid}, not by the agent's user (uid ${me}) or root`;
  return undefined;
}

function entryLabel(index: number, identification: { uuid?: unknown; name?: unknown } | undefined): string {
  const id = identification?.uuid ?? identification?.name;
  return typeof id === 'string'
    ? `providers[${index}] (${identification?.uuid !== undefined ? 'uuid' : 'name'}: ${id})`
    : `providers[${index}]`;
}

function identificationAt(data: PyValue, index: number): { uuid?: unknown; name?: unknown } | undefined {
  const providers = isDict(data) ? data.get('providers') : undefined;
  const entry = Array.isArray(providers) ? providers[index] : undefined;
  const identification = isDict(entry) ? entry.get('identification') : undefined;
  return isDict(identification) ? { uuid: identification.get('uuid'), name: identification.get('name') } : undefined;
}

function splitEntry(path: Path): [number | undefined, Path] {
  if (path[0] === 'providers' && typeof path[1] === 'number') return [path[1], path.slice(2)];
  return [undefined, path];
}

function textPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}

/** Line and column of the deepest node of `path` the document has (duplicate and merged keys may point near). */
function locateNode(doc: Document, lineCounter: LineCounter, path: Path): { line?: number; column?: number } {
  for (let len = path.length; len >= 0; len--) {
    let node: unknown;
    try {
      node = len === 0 ? doc.contents : doc.getIn(path.slice(0, len), true);
    } catch {
      node = undefined;
    }
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) {
      const pos = lineCounter.linePos(range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return {};
}
