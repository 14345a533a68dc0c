// Nova's judgement of one parsed provider config file, ported from
// nova/compute/provider_config.py (26.2.2): the schema version read by
// microversion_parse, jsonschema validation against SCHEMA_V1 (Python's `re`
// and jsonschema's type rules), then _validate_provider_config (CUSTOM_ only,
// no-op entries dropped). A file is accepted only when nothing here finds a
// problem; where Nova's code would raise TypeError or AttributeError on a
// value the schema let through, that is a problem too.
import {
  isDict,
  isJsonInteger,
  isJsonNumber,
  isList,
  PyBytes,
  type PyDict,
  PySet,
  pyRepr,
  pyTypeName,
  type PyValue,
} from './python-values.js';

export type Path = (string | number)[];

export interface RuleProblem {
  path: Path;
  message: string;
}

export interface AcceptedEntry {
  index: number;
  entry: PyDict;
  /** identification uuid or name, as Nova keys it (uuid first) */
  id: string;
  identification: { uuid?: string; name?: string };
}

export interface FileJudgement {
  problems: RuleProblem[];
  warnings: RuleProblem[];
  /** entries Nova keeps, in file order; empty when there is any problem */
  entries: AcceptedEntry[];
}

export const SUPPORTED_SCHEMA_VERSIONS: ReadonlyMap<number, readonly number[]> = new Map([[1, [0]]]);

// SCHEMA_V1's patterns with Python's `$` (end, or before a final newline) and `.` (anything but a newline).
export const SCHEMA_VERSION_PATTERN = /^1[^\n]([0-9]|[1-9][0-9]+)\n?$/;
export const UUID_PATTERN = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\n?$/;
export const NAME_PATTERN = /^[A-Z0-9_]{1,255}\n?$/;
export const COMPUTE_NODE = '$COMPUTE_NODE';
const CUSTOM = 'CUSTOM_';
const INTEGER_FIELDS = ['total', 'reserved', 'min_unit', 'max_unit', 'step_size'];
const INVENTORY_FIELDS = [...INTEGER_FIELDS, 'allocation_ratio'];

/** microversion_parse.parse_version_string: `int(a), int(b)` of `text.split('.', 1)`. */
export function parseSchemaVersion(value: PyValue | undefined): { major: number; minor: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const dot = value.indexOf('.');
  if (dot === -1) return undefined;
  const major = pythonIntOf(value.slice(0, dot));
  const minor = pythonIntOf(value.slice(dot + 1));
  return major === undefined || minor === undefined ? undefined : { major, minor };
}

/** Python's int(str): surrounding whitespace, a sign, digits with single underscores between them. */
function pythonIntOf(text: string): number | undefined {
  const match = /^[\s]*([-+]?)([0-9](?:_?[0-9])*)[\s]*$/u.exec(text);
  if (!match) return undefined;
  const value = Number(match[2].replace(/_/g, ''));
  return match[1] === '-' ? -value : value;
}

export function judgeFile(data: PyValue, file: string): FileJudgement {
  const problems: RuleProblem[] = [];
  const warnings: RuleProblem[] = [];
  const judgement: FileJudgement = { problems, warnings, entries: [] };
  const problem = (path: Path, message: string) => problems.push({ path, message });

  // _parse_provider_yaml: yaml_file['meta']['schema_version'] or "Unable to detect schema version".
  const meta = isDict(data) ? data.get('meta') : undefined;
  const rawVersion = isDict(meta) ? meta.get('schema_version') : undefined;
  const version = parseSchemaVersion(rawVersion);
  if (!version) {
    problem(
      ['meta', 'schema_version'],
      `Unable to detect schema version${rawVersion === undefined ? '' : ` from ${pyRepr(rawVersion)}`} (a quoted 'MAJOR.MINOR' is required)`,
    );
    return judgement;
  }
  if (!SUPPORTED_SCHEMA_VERSIONS.has(version.major)) {
    problem(['meta', 'schema_version'], `Unsupported schema major version: ${version.major}`);
    return judgement;
  }
  if (!SUPPORTED_SCHEMA_VERSIONS.get(version.major)?.includes(version.minor))
    warnings.push({
      path: ['meta', 'schema_version'],
      message: `schema version ${version.major}.${version.minor}: Nova supports the major version, but not the minor. Some fields may be ignored.`,
    });

  validateSchema(data as PyDict, problem);
  if (problems.length > 0) return judgement;

  return validateProviderConfig(data as PyDict, file, warnings);
}

/**
 * _validate_provider_config: on a file that passed the schema, traits and
 * resource classes must be CUSTOM_; entries that add nothing are dropped with
 * a warning.
 */
export function validateProviderConfig(data: PyDict, file: string, warnings: RuleProblem[] = []): FileJudgement {
  const problems: RuleProblem[] = [];
  const judgement: FileJudgement = { problems, warnings, entries: [] };
  const problem = (path: Path, message: string) => problems.push({ path, message });
  const providers = data.get('providers');
  const entries = (isList(providers) ? providers : []) as PyDict[];
  entries.forEach((entry, index) => {
    const before = problems.length;
    const identification = entry.get('identification') as PyDict;
    const uuid = identification.get('uuid') as string | undefined;
    const name = identification.get('name') as string | undefined;
    const traits = customTraits(entry, index, problem);
    const inventories = customResourceClasses(entry, index, problem);
    if (problems.length > before) return;
    const id = (uuid ?? name)!;
    if (traits.length === 0 && inventories.length === 0) {
      warnings.push({
        path: ['providers', index],
        message: `Provider ${(name ?? uuid)!} defined in ${file} has no additional inventories or traits and will be ignored.`,
      });
      return;
    }
    judgement.entries.push({ index, entry, id, identification: uuid !== undefined ? { uuid } : { name } });
  });
  if (problems.length > 0) judgement.entries = [];
  return judgement;
}

/** jsonschema.validate(yaml_file, SCHEMA_V1); `data` is a dict with meta.schema_version. */
function validateSchema(data: PyDict, problem: (path: Path, message: string) => void): void {
  if (data.has('__source_file')) problem(['__source_file'], "'__source_file' is reserved for Nova's own use and must not be set");
  const version = (data.get('meta') as PyDict).get('schema_version');
  if (typeof version !== 'string') problem(['meta', 'schema_version'], `${pyRepr(version)} is not of type 'string'`);
  else if (!SCHEMA_VERSION_PATTERN.test(version))
    problem(['meta', 'schema_version'], `${pyRepr(version)} does not match '^1.([0-9]|[1-9][0-9]+)$'`);
  if (!data.has('providers')) return;
  const providers = data.get('providers');
  if (!isList(providers)) {
    problem(['providers'], `${pyRepr(providers)} is not of type 'array'`);
    return;
  }
  providers.forEach((entry, index) => {
    const at = (...rest: Path): Path => ['providers', index, ...rest];
    if (!isDict(entry)) {
      problem(at(), `${pyRepr(entry)} is not of type 'object'`);
      return;
    }
    if (!entry.has('identification')) problem(at('identification'), "'identification' is a required property");
    else validateIdentification(entry.get('identification'), at('identification'), problem);
    if (entry.has('inventories')) validateInventories(entry.get('inventories'), at('inventories'), problem);
    if (entry.has('traits')) validateTraits(entry.get('traits'), at('traits'), problem);
  });
}

function validateIdentification(value: PyValue | undefined, path: Path, problem: (path: Path, message: string) => void): void {
  if (!isDict(value)) {
    problem(path, `${pyRepr(value)} is not of type 'object' (exactly one of uuid or name is required)`);
    return;
  }
  const extra = value.keys().filter((k) => k !== 'uuid' && k !== 'name');
  if (extra.length > 0)
    problem(
      [...path, String(extra[0])],
      `Additional properties are not allowed (${extra.map((k) => pyRepr(k)).join(', ')} unexpected): use uuid or name`,
    );
  if (value.size === 0) problem(path, '{} should be non-empty: exactly one of uuid or name is required');
  if (value.size > 1) problem(path, `${pyRepr(value)} has too many properties: exactly one of uuid or name is allowed`);
  if (value.has('uuid')) {
    const uuid = value.get('uuid');
    if (typeof uuid !== 'string' || !(UUID_PATTERN.test(uuid) || uuid === COMPUTE_NODE))
      problem([...path, 'uuid'], `${pyRepr(uuid)} is not a uuid or '${COMPUTE_NODE}'`);
  }
  if (value.has('name')) {
    const name = value.get('name');
    if (typeof name !== 'string') problem([...path, 'name'], `${pyRepr(name)} is not of type 'string'`);
    else if ([...name].length === 0) problem([...path, 'name'], "'' is too short");
    else if ([...name].length > 200) problem([...path, 'name'], `the name is too long (${[...name].length} characters, at most 200)`);
  }
}

/**
 * `inventories` and `traits` alike: an object whose optional `additional` is
 * a list. That list, or null when absent or refused (`listHint` follows the
 * type in the refusal).
 */
function additionalList(
  value: PyValue | undefined,
  path: Path,
  problem: (path: Path, message: string) => void,
  listHint = '',
): PyValue[] | null {
  if (!isDict(value)) {
    problem(path, `${pyRepr(value)} is not of type 'object'`);
    return null;
  }
  if (!value.has('additional')) return null;
  const additional = value.get('additional');
  if (!isList(additional)) {
    problem([...path, 'additional'], `${pyRepr(additional)} is not of type 'array'${listHint}`);
    return null;
  }
  return additional;
}

function validateInventories(value: PyValue | undefined, path: Path, problem: (path: Path, message: string) => void): void {
  const additional = additionalList(value, path, problem, ' (a list of {RESOURCE_CLASS: {total: ...}} mappings)');
  additional?.forEach((item, i) => {
    // Items are not typed: only a mapping is checked further (see customResourceClasses).
    if (!isDict(item)) return;
    for (const [rc, inventory] of item.entries()) {
      const at: Path = [...path, 'additional', i, String(rc)];
      if (typeof rc !== 'string') {
        // jsonschema's re.search() on a key that is not a string raises TypeError.
        problem(at, `resource class ${pyRepr(rc)} is a ${pyTypeName(rc)}, not a string`);
        continue;
      }
      if (!NAME_PATTERN.test(rc)) {
        problem(at, `'${rc}' does not match any of the regexes: '^[A-Z0-9_]{1,255}$'`);
        continue;
      }
      validateInventory(inventory, at, problem);
    }
  });
}

function validateInventory(value: PyValue, path: Path, problem: (path: Path, message: string) => void): void {
  if (!isDict(value)) {
    problem(path, `${pyRepr(value)} is not of type 'object'`);
    return;
  }
  if (!value.has('total')) problem([...path, 'total'], "'total' is a required property");
  for (const [field, v] of value.entries()) {
    if (typeof field !== 'string' || !INVENTORY_FIELDS.includes(field)) {
      problem([...path, String(field)], `Additional properties are not allowed (${pyRepr(field)} was unexpected)`);
      continue;
    }
    if (field === 'allocation_ratio' ? !isJsonNumber(v) : !isJsonInteger(v))
      problem([...path, field], `${pyRepr(v)} is not of type '${field === 'allocation_ratio' ? 'number' : 'integer'}'`);
  }
}

function validateTraits(value: PyValue | undefined, path: Path, problem: (path: Path, message: string) => void): void {
  additionalList(value, path, problem)?.forEach((trait, i) => {
    if (typeof trait !== 'string') problem([...path, 'additional', i], `${pyRepr(trait)} is not of type 'string'`);
    else if (!NAME_PATTERN.test(trait)) problem([...path, 'additional', i], `'${trait}' does not match '^[A-Z0-9_]{1,255}$'`);
  });
}

/** _validate_traits: the set of additional traits, all CUSTOM_. */
function customTraits(entry: PyDict, index: number, problem: (path: Path, message: string) => void): string[] {
  const traits = entry.get('traits');
  const additional = (isDict(traits) ? traits.get('additional') : undefined) ?? [];
  const list = additional as string[];
  const invalid = [...new Set(list.filter((t) => !t.startsWith(CUSTOM)))].sort();
  if (invalid.length > 0)
    problem(
      ['providers', index, 'traits', 'additional'],
      `Invalid traits, only custom traits are allowed: [${invalid.map((t) => pyRepr(t)).join(', ')}]`,
    );
  return list;
}

/**
 * _validate_rc: `for rc in inventory` over each item of inventories.additional,
 * each rc must start with CUSTOM_. Iterating a string gives its characters,
 * a list its elements; a number or None cannot be iterated (TypeError) and an
 * element without startswith (AttributeError) stops Nova too.
 */
function customResourceClasses(entry: PyDict, index: number, problem: (path: Path, message: string) => void): PyValue[] {
  const inventories = entry.get('inventories');
  const additional = ((isDict(inventories) ? inventories.get('additional') : undefined) ?? []) as PyValue[];
  const invalid: string[] = [];
  additional.forEach((item, i) => {
    const at: Path = ['providers', index, 'inventories', 'additional', i];
    let names: PyValue[];
    if (isDict(item)) names = item.keys();
    else if (typeof item === 'string') names = [...item];
    else if (isList(item)) names = item;
    else if (item instanceof PySet) names = item.items;
    else if (item instanceof PyBytes) names = [...item.bytes].map((b) => BigInt(b));
    else {
      problem(at, `${pyRepr(item)} is not a mapping of resource classes ('${pyTypeName(item)}' object is not iterable)`);
      return;
    }
    for (const name of names) {
      if (typeof name !== 'string') {
        problem(at, `${pyRepr(name)} is not a resource class name ('${pyTypeName(name)}' object has no attribute 'startswith')`);
        return;
      }
      if (!name.startsWith(CUSTOM)) invalid.push(name);
    }
  });
  if (invalid.length > 0)
    problem(
      ['providers', index, 'inventories', 'additional'],
      `Invalid resource class, only custom resource classes are allowed: ${invalid.sort().join(', ')}`,
    );
  return additional;
}
