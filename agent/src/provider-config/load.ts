// Loads every *.yaml provider config file of a directory the way nova-compute
// does (seed 000): lexicographic order, schema major 1, exactly one of
// uuid/name, CUSTOM_ names only, an id defined twice anywhere is an error,
// entries that set nothing are dropped with a warning. YAML is read as
// PyYAML's safe_load reads it (pyyaml-rules.ts).
// Bad files never throw: every problem comes back naming file, entry, field.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { isMap, isScalar, LineCounter, parseDocument, Scalar, visit, type Document } from 'yaml';
import providerConfigSchema from '../../../schemas/provider-config.schema.json' with { type: 'json' };
import { decodeUtf8, pyyamlReadProblem } from './pyyaml-rules.js';
import { SCHEMA_VERSION_PATTERN, type Inventory, type ProviderConfigFile, type ProviderEntry } from './schema.js';

export const SUPPORTED_MAJOR = 1;
export const KNOWN_MINORS: readonly number[] = [0];
const IDENTIFICATION_METHODS = ['uuid', 'name'] as const;

export interface ConfigProblem {
  file: string;
  /** e.g. `providers[1] (name: gpu-host-1)` */
  entry?: string;
  /** dotted path inside the entry (or the file when no entry), e.g. `inventories.additional.CUSTOM_X.total` */
  field?: string;
  line?: number;
  column?: number;
  message: string;
}

export interface ConfiguredProvider {
  /** uuid, name or `$COMPUTE_NODE`, as written */
  id: string;
  identification: { uuid?: string; name?: string };
  inventories: Record<string, Inventory>;
  traits: string[];
  sourceFile: string;
  /** position in its file's providers list */
  index: number;
}

export type PermissionPolicy = 'refuse' | 'warn' | 'ignore';

export interface LoadOptions {
  /** files writable by anyone but the agent's user (or root): refuse them, warn, or don't check */
  permissions?: PermissionPolicy;
}

export interface LoadResult {
  files: string[];
  providers: ConfiguredProvider[];
  errors: ConfigProblem[];
  warnings: ConfigProblem[];
}

let compiledValidator: ReturnType<Ajv['compile']> | undefined;
function schemaValidator(): ReturnType<Ajv['compile']> {
  // Imported rather than read from disk so the bundled agent carries it.
  compiledValidator ??= new Ajv({ allErrors: true, strict: false }).compile(providerConfigSchema as Record<string, unknown>);
  return compiledValidator;
}

/** `*.yaml` files of `dir` in lexicographic order (dot files excluded, as glob does). */
export function providerConfigFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && !name.startsWith('.'))
    .sort()
    .map((name) => join(dir, name));
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
  } catch (err) {
    result.errors.push({ file: dir, message: `cannot read provider config directory: ${(err as Error).message}` });
    return result;
  }
  result.files = files;
  const seen = new Map<string, ConfiguredProvider>();
  for (const file of files) {
    const before = result.errors.length;
    const providers = loadFile(file, options.permissions ?? 'refuse', result);
    if (result.errors.length > before) continue;
    for (const provider of providers) {
      const earlier = seen.get(provider.id);
      if (earlier) {
        const sources = [...new Set([earlier.sourceFile, file])].sort();
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
  const text = decoded.text;
  const unreadable = pyyamlReadProblem(text);
  if (unreadable) {
    problem({ ...textPosition(text, unreadable.offset), message: `Unable to load yaml file: ${unreadable.message}` });
    return [];
  }

  const lineCounter = new LineCounter();
  // PyYAML's safe_load is YAML 1.1 and lets a later duplicate key win.
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: false, merge: true, lineCounter, prettyErrors: false });
  // safe_load constructs only the standard tags; any other tag (`!custom`,
  // `!!python/...`), wherever it sits, makes it fail.
  const unknownTag = doc.warnings.find((w) => w.code === 'TAG_RESOLVE_FAILED');
  const parseError = doc.errors[0] ?? unknownTag;
  if (parseError) {
    const pos = lineCounter.linePos(parseError.pos[0]);
    const message =
      parseError === unknownTag
        ? `could not determine a constructor for the tag ${unresolvedTag(parseError.message)}`
        : parseError.message.split('\n')[0];
    problem({ line: pos.line, column: pos.col, message: `Unable to load yaml file: ${message}` });
    return [];
  }
  const locate = (path: (string | number)[]) => locateNode(doc, lineCounter, path);
  matchPyYamlScalars(doc);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    // An alias bomb (aliases expanding to millions of nodes) is refused, not expanded.
    problem({ message: `Unable to load yaml file: ${(err as Error).message}` });
    return [];
  }

  // Version first: a file of another major is refused whatever it contains.
  const versionNode = isMap(doc.contents) ? doc.getIn(['meta', 'schema_version'], true) : undefined;
  const rawVersion = isScalar(versionNode) ? versionNode.value : undefined;
  const versionText =
    typeof rawVersion === 'string'
      ? rawVersion
      : typeof rawVersion === 'number'
        ? ((versionNode as { source?: string }).source ?? String(rawVersion))
        : undefined;
  const versionMatch = versionText === undefined ? null : /^(\d+)\.(\d+)$/.exec(versionText);
  if (!versionMatch) {
    problem({
      field: 'meta.schema_version',
      ...locate(['meta', 'schema_version']),
      message: `Unable to detect schema version${versionText === undefined ? '' : ` from '${versionText}'`}`,
    });
    return [];
  }
  const major = Number(versionMatch[1]);
  const minor = Number(versionMatch[2]);
  if (major !== SUPPORTED_MAJOR) {
    problem({ field: 'meta.schema_version', ...locate(['meta', 'schema_version']), message: `Unsupported schema major version: ${major}` });
    return [];
  }
  if (!SCHEMA_VERSION_PATTERN.test(versionText!)) {
    problem({
      field: 'meta.schema_version',
      ...locate(['meta', 'schema_version']),
      message: `'${versionText}' does not match '${SCHEMA_VERSION_PATTERN.source}'`,
    });
    return [];
  }
  if (!KNOWN_MINORS.includes(minor)) {
    result.warnings.push({
      file,
      field: 'meta.schema_version',
      ...locate(['meta', 'schema_version']),
      message: `schema version ${versionText}: this agent supports major ${major} but not minor ${minor}; some fields may be ignored`,
    });
  }

  // Checked before the schema so `.inf`/`.nan` get this message in every field.
  const nonFinite = nonFiniteInventoryValues(data);
  for (const path of nonFinite) {
    const [entryIndex, fieldPath] = splitEntry(path);
    const source = (doc.getIn(path, true) as { source?: unknown } | undefined)?.source;
    problem({
      entry: entryLabel(entryIndex!, identificationAt(data, entryIndex!)),
      field: fieldPath.join('.'),
      ...locate(path),
      message: `${typeof source === 'string' ? source : 'value'} is not a finite number (infinity and NaN cannot be sent to Placement)`,
    });
  }
  if (nonFinite.length > 0) return [];

  const validate = schemaValidator();
  if (!validate(data)) {
    for (const error of leafErrors(validate.errors ?? [])) {
      const path = instancePath(error);
      const [entryIndex, fieldPath] = splitEntry(path);
      const identification = entryIndex === undefined ? undefined : identificationAt(data, entryIndex);
      problem({
        entry: entryIndex === undefined ? undefined : entryLabel(entryIndex, identification),
        field: fieldPath.join('.') || undefined,
        ...locate(path),
        message: describeAjvError(error),
      });
    }
    return [];
  }

  const config = data as ProviderConfigFile;
  const providers: ConfiguredProvider[] = [];
  (config.providers ?? []).forEach((entry, index) => {
    const errorsBefore = result.errors.length;
    const label = entryLabel(index, entry.identification as Record<string, unknown>);
    const entryProblem = (field: (string | number)[], message: string) =>
      problem({ entry: label, field: field.join('.'), ...locate(['providers', index, ...field]), message });

    const keys = Object.keys(entry.identification);
    const unknown = keys.filter((k) => !(IDENTIFICATION_METHODS as readonly string[]).includes(k));
    if (unknown.length > 0)
      entryProblem(['identification', unknown[0]], `unsupported identification method '${unknown[0]}' (use uuid or name)`);
    else if (keys.length !== 1)
      entryProblem(
        ['identification'],
        keys.length === 0 ? 'exactly one of uuid or name is required' : 'exactly one of uuid or name is allowed, not both',
      );

    const inventories = collectInventories(
      entry,
      (field, message) => entryProblem(field, message),
      (field, message) =>
        result.warnings.push({ file, entry: label, field: field.join('.'), ...locate(['providers', index, ...field]), message }),
    );
    const traits = entry.traits?.additional ?? [];
    traits.forEach((trait, i) => {
      if (!trait.startsWith('CUSTOM_'))
        entryProblem(['traits', 'additional', i], `only CUSTOM_ traits may be added by a provider config, not ${trait}`);
    });
    if (result.errors.length > errorsBefore) return;
    const identification = entry.identification as { uuid?: string; name?: string };
    // Nova's no-op filter: such an entry is ignored entirely, so it neither
    // counts as a definition of its id nor shadows $COMPUTE_NODE.
    if (traits.length === 0 && isEmpty(entry.inventories?.additional)) {
      result.warnings.push({
        file,
        entry: label,
        ...locate(['providers', index]),
        message: `Provider ${(identification.uuid ?? identification.name)!} defined in ${file} has no additional inventories or traits and will be ignored`,
      });
      return;
    }
    providers.push({
      id: (identification.uuid ?? identification.name)!,
      identification: { ...identification },
      inventories,
      traits: [...traits],
      sourceFile: file,
      index,
    });
  });
  return providers;
}

// PyYAML (YAML 1.1) resolves plain scalars with these patterns; anything the
// `yaml` package reads as a number but PyYAML would not (1e3, 1.5e3) stays a
// string (so do y/n, booleans only to the `yaml` package), and timestamps become a value no JSON type accepts, as in Nova.
const PYYAML_FLOAT =
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const PYYAML_INT = /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/;
const PYYAML_BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;
const PYYAML_NULL = /^(?:~|null|Null|NULL|)$/;
const NOT_JSON = Symbol('yaml timestamp');

function matchPyYamlScalars(doc: Document): void {
  visit(doc, {
    Scalar(_key, node) {
      if (node.type !== Scalar.PLAIN || typeof node.source !== 'string') return;
      if (typeof node.value === 'number' && !PYYAML_FLOAT.test(node.source) && !PYYAML_INT.test(node.source)) node.value = node.source;
      else if (typeof node.value === 'boolean' && !PYYAML_BOOL.test(node.source)) node.value = node.source;
      else if (node.value === null && !PYYAML_NULL.test(node.source)) node.value = node.source;
      else if (node.value instanceof Date) node.value = NOT_JSON;
    },
  });
}

/** Nova tests `inventories.additional` for truth: a missing, empty list or empty mapping is nothing to set. */
function isEmpty(additional: unknown): boolean {
  if (additional === undefined || additional === null) return true;
  if (Array.isArray(additional)) return additional.length === 0;
  return typeof additional === 'object' && Object.keys(additional).length === 0;
}

/** Paths of every infinite or NaN value inside `providers[*].inventories.additional`, in either form. */
function nonFiniteInventoryValues(data: unknown): (string | number)[][] {
  const found: (string | number)[][] = [];
  const providers = (data as { providers?: unknown } | null)?.providers;
  if (!Array.isArray(providers)) return found;
  const visit = (value: unknown, path: (string | number)[]) => {
    if (typeof value === 'number' && !Number.isFinite(value)) found.push(path);
    else if (Array.isArray(value)) {
      value.forEach((item, i) => {
        visit(item, [...path, i]);
      });
    } else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) visit(item, [...path, key]);
  };
  providers.forEach((entry, index) => {
    const inventories = (entry as { inventories?: unknown } | null)?.inventories;
    const additional = (inventories as { additional?: unknown } | null | undefined)?.additional;
    visit(additional, ['providers', index, 'inventories', 'additional']);
  });
  return found;
}

/** The tag out of the `yaml` package's "Unresolved tag: !x at line ..." warning. */
function unresolvedTag(message: string): string {
  const tag = /Unresolved tag: (\S+)/.exec(message)?.[1];
  return tag === undefined ? '' : `'${tag}'`;
}

function textPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}

type Report = (field: (string | number)[], message: string) => void;

/** Both forms of `inventories.additional` become one mapping keyed by resource class. */
function collectInventories(entry: ProviderEntry, error: Report, warn: Report): Record<string, Inventory> {
  const additional = entry.inventories?.additional;
  if (!additional) return {};
  const blocks: [Array<string | number>, Record<string, Inventory>][] = Array.isArray(additional)
    ? additional.map((block, i) => [['inventories', 'additional', i], block])
    : [[['inventories', 'additional'], additional]];
  const merged: Record<string, Inventory> = {};
  for (const [path, block] of blocks) {
    for (const [rc, inventory] of Object.entries(block)) {
      if (!rc.startsWith('CUSTOM_')) error([...path, rc], `only CUSTOM_ resource classes may be added by a provider config, not ${rc}`);
      if (rc in merged) warn([...path, rc], `${rc} is listed more than once; the last one is used`);
      merged[rc] = inventory;
    }
  }
  return merged;
}

function insecurePermissions(mode: number, uid: number): string | undefined {
  if (mode & 0o022)
    return `file is writable by group or others (mode ${(mode & 0o777).toString(8)}); provider configs must be writable only by the agent's user`;
  const me = typeof process.getuid === 'function' ? process.getuid() : uid;
  if (uid !== me && uid !== 0) return `file is owned by uid ${uid}, not by the agent's user (uid ${me}) or root`;
  return undefined;
}

function entryLabel(index: number, identification: Record<string, unknown> | undefined): string {
  const id = identification?.uuid ?? identification?.name;
  return typeof id === 'string'
    ? `providers[${index}] (${identification?.uuid !== undefined ? 'uuid' : 'name'}: ${id})`
    : `providers[${index}]`;
}

function identificationAt(data: unknown, index: number): Record<string, unknown> | undefined {
  const providers = (data as { providers?: unknown }).providers;
  const entry = Array.isArray(providers) ? (providers[index] as { identification?: unknown }) : undefined;
  const identification = entry && typeof entry === 'object' ? entry.identification : undefined;
  return identification && typeof identification === 'object' ? (identification as Record<string, unknown>) : undefined;
}

function instancePath(error: ErrorObject): (string | number)[] {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
  const extra = error.params as { additionalProperty?: string; propertyName?: string; missingProperty?: string };
  if (error.propertyName !== undefined) path.push(error.propertyName);
  else if (extra.additionalProperty !== undefined) path.push(extra.additionalProperty);
  else if (extra.propertyName !== undefined) path.push(extra.propertyName);
  else if (extra.missingProperty !== undefined) path.push(extra.missingProperty);
  return path;
}

function splitEntry(path: (string | number)[]): [number | undefined, (string | number)[]] {
  if (path[0] === 'providers' && typeof path[1] === 'number') return [path[1], path.slice(2)];
  return [undefined, path];
}

/**
 * One error per offending spot: anyOf reports every branch plus a summary, so
 * keep only errors no other error lies beneath (the branch that got furthest).
 */
function leafErrors(errors: ErrorObject[]): ErrorObject[] {
  const useful = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'propertyNames');
  const pool = useful.length > 0 ? useful : errors;
  const keyOf = (e: ErrorObject) => instancePath(e).join('\u0000');
  const keys = pool.map(keyOf);
  const leaves: ErrorObject[] = [];
  const seen = new Set<string>();
  pool.forEach((error, i) => {
    const key = keys[i];
    const hasDeeper = keys.some((other) => other !== key && other.startsWith(key === '' ? '' : `${key}\u0000`));
    if (hasDeeper || seen.has(key)) return;
    seen.add(key);
    leaves.push(error);
  });
  return leaves;
}

function describeAjvError(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `Additional properties are not allowed ('${String(params.additionalProperty)}' was unexpected)`;
    case 'required':
      return `'${String(params.missingProperty)}' is a required property`;
    case 'pattern':
      return error.propertyName !== undefined
        ? `'${error.propertyName}' does not match '${String(params.pattern)}'`
        : `value does not match '${String(params.pattern)}'`;
    case 'not':
      return 'is reserved and must not be set';
    default:
      return error.message ?? error.keyword;
  }
}

function locateNode(doc: Document, lineCounter: LineCounter, path: (string | number)[]): { line?: number; column?: number } {
  for (let len = path.length; len >= 0; len--) {
    const node = len === 0 ? doc.contents : doc.getIn(path.slice(0, len), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) {
      const pos = lineCounter.linePos(range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return {};
}
