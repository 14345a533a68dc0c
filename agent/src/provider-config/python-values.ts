// The values PyYAML's safe_load builds, kept apart as Python keeps them, so
// the loader can judge a file exactly as Nova's Python code does: an int is
// not a float (1 vs 1.0), True == 1 as a dict key, keys need not be strings,
// bytes / dates / sets / tuples are neither strings nor lists.

/** int (bigint), float (number), str, bool, None (null), list, dict and the rarer types. */
export type PyValue = bigint | number | string | boolean | null | PyValue[] | PyDict | PyBytes | PyTimestamp | PySet | PyTuple;

export class PyBytes {
  constructor(readonly bytes: Uint8Array) {}
}

export class PyTimestamp {
  constructor(
    readonly text: string,
    readonly kind: 'date' | 'datetime',
  ) {}
}

export class PyTuple {
  constructor(readonly items: PyValue[]) {}
}

export class PySet {
  constructor(readonly items: PyValue[]) {}
}

export class UnhashableKeyError extends Error {}

/**
 * A Python dict: insertion ordered; a key equal to an earlier one (1 == 1.0 ==
 * True) replaces the value but keeps the first key and its place.
 */
export class PyDict {
  private readonly byHash = new Map<string, [PyValue, PyValue]>();

  set(key: PyValue, value: PyValue): void {
    const hash = hashKey(key);
    const existing = this.byHash.get(hash);
    if (existing) existing[1] = value;
    else this.byHash.set(hash, [key, value]);
  }

  has(key: string): boolean {
    return this.byHash.has(hashKey(key));
  }

  get(key: string): PyValue | undefined {
    return this.byHash.get(hashKey(key))?.[1];
  }

  entries(): [PyValue, PyValue][] {
    return [...this.byHash.values()];
  }

  keys(): PyValue[] {
    return this.entries().map(([k]) => k);
  }

  get size(): number {
    return this.byHash.size;
  }
}

let nanCount = 0;

/** Python's hash equality for the key types YAML can build; lists, dicts and sets are unhashable. */
function hashKey(key: PyValue): string {
  if (typeof key === 'string') return `s:${key}`;
  if (key === null) return 'none';
  if (typeof key === 'boolean') return `n:${key ? 1 : 0}`;
  if (typeof key === 'bigint') return `n:${key}`;
  if (typeof key === 'number') {
    if (Number.isNaN(key)) return `nan:${nanCount++}`; // nan != nan: every NaN key is its own
    if (Number.isInteger(key)) return `n:${BigInt(key)}`;
    return `n:${key}`;
  }
  if (key instanceof PyBytes) return `b:${[...key.bytes].join(',')}`;
  if (key instanceof PyTimestamp) return `t:${key.text}`;
  if (key instanceof PyTuple) return `(${key.items.map(hashKey).join('|')})`;
  throw new UnhashableKeyError('found unhashable key');
}

export function isDict(value: PyValue | undefined): value is PyDict {
  return value instanceof PyDict;
}

export function isList(value: PyValue | undefined): value is PyValue[] {
  return Array.isArray(value);
}

/** jsonschema's "integer": an int, or a float with no fractional part; never a bool. */
export function isJsonInteger(value: PyValue | undefined): boolean {
  return typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value));
}

/** jsonschema's "number": an int or a float (inf and nan included); never a bool. */
export function isJsonNumber(value: PyValue | undefined): boolean {
  return typeof value === 'bigint' || typeof value === 'number';
}

/** Python's name for the value's type, for messages. */
export function pyTypeName(value: PyValue | undefined): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'NoneType';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'float';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return 'list';
  if (value instanceof PyDict) return 'dict';
  if (value instanceof PyBytes) return 'bytes';
  if (value instanceof PyTimestamp) return value.kind === 'date' ? 'datetime.date' : 'datetime.datetime';
  if (value instanceof PySet) return 'set';
  return 'tuple';
}

/** A short Python-like rendering of a value for messages. */
export function pyRepr(value: PyValue | undefined, depth = 0): string {
  if (value === undefined) return '<missing>';
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    return Number.isInteger(value) ? value.toFixed(1) : String(value);
  }
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/'/g, "\\'")}'`;
  if (depth > 2) return '...';
  if (Array.isArray(value)) return `[${value.map((v) => pyRepr(v, depth + 1)).join(', ')}]`;
  if (value instanceof PyDict)
    return `{${value
      .entries()
      .map(([k, v]) => `${pyRepr(k, depth + 1)}: ${pyRepr(v, depth + 1)}`)
      .join(', ')}}`;
  if (value instanceof PyBytes) return `b'<${value.bytes.length} bytes>'`;
  if (value instanceof PyTimestamp) return value.text;
  if (value instanceof PySet) return `{${value.items.map((v) => pyRepr(v, depth + 1)).join(', ')}}`;
  return `(${value.items.map((v) => pyRepr(v, depth + 1)).join(', ')})`;
}
