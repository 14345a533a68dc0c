// The one way request bodies come in, for both APIs: a size limit enforced
// while reading (413 before anything is parsed), JSON.parse, then one
// iterative walk that refuses nesting deeper than MAX_JSON_DEPTH and C0/DEL
// control characters in any key or string (NUL would be stored whole but read
// back cut at the NUL, so no string may carry one). Bytes that are not UTF-8
// and unpaired UTF-16 surrogates ("\ud800") are refused too: both would be
// stored as U+FFFD, silently changed. Each API words the errors in its own
// envelope.

/** Far deeper than any legitimate body (a reshaper body is 6 levels). */
export const MAX_JSON_DEPTH = 32;

/** C0 control characters and DEL. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** A high surrogate without its low half, or a low one without its high half. */
export const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export type BodyProblem =
  | { kind: 'too-large'; limit: number }
  | { kind: 'malformed'; message: string }
  | { kind: 'not-utf8' }
  | { kind: 'incomplete' }
  | { kind: 'too-deep'; limit: number }
  | { kind: 'control-character'; path: (string | number)[]; value: string; char: string }
  | { kind: 'unpaired-surrogate'; path: (string | number)[]; value: string; char: string };

export class BodyError extends Error {
  constructor(readonly problem: BodyProblem) {
    super(problem.kind);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeUtf8(bytes: ArrayBuffer | Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new BodyError({ kind: 'not-utf8' });
  }
}

/**
 * A read of the body stream; its failure (the client went away mid-body, or
 * sent a chunked body Node's parser gave up on) is the client's error, not
 * the service's.
 */
async function received<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch {
    throw new BodyError({ kind: 'incomplete' });
  }
}

/** Reads the body as text, refusing more than `limit` bytes (by Content-Length, then while reading). */
export async function readLimitedText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw new BodyError({ kind: 'too-large', limit });
  if (declared !== null) {
    // A declared length bounds the body (the HTTP server reads no more than
    // it), so it is read whole: under @hono/node-server straight off the
    // socket, without building a fetch Request, a web stream and an
    // AbortSignal for it (an eighth of a claim's server CPU).
    const bytes = await received(request.arrayBuffer());
    if (bytes.byteLength > limit) throw new BodyError({ kind: 'too-large', limit });
    return decodeUtf8(bytes);
  }
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await received(reader.read());
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new BodyError({ kind: 'too-large', limit });
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return decodeUtf8(bytes);
}

/** A control character or unpaired surrogate in `value` (the string at `at`, or its key `key`), or null. */
function characterProblem(value: string, at: Visit, key?: string): BodyProblem | null {
  const control = CONTROL_CHARACTER.exec(value)?.[0];
  if (control !== undefined) return { kind: 'control-character', path: pathOf(at, key), value, char: control };
  const surrogate = UNPAIRED_SURROGATE.exec(value)?.[0];
  if (surrogate !== undefined) return { kind: 'unpaired-surrogate', path: pathOf(at, key), value, char: surrogate };
  return null;
}

/** A value met in the walk: its key in its parent, so its path is only built for a problem's answer. */
interface Visit {
  value: unknown;
  key: string | number;
  parent: Visit | undefined;
  depth: number;
}

function pathOf(visit: Visit, key?: string): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at: Visit = visit; at.parent; at = at.parent) path.push(at.key);
  path.reverse();
  if (key !== undefined) path.push(key);
  return path;
}

/** First problem in a parsed JSON value: too deep, or a control character or unpaired surrogate in a key or string. */
export function inspectJson(root: unknown): BodyProblem | null {
  const stack: Visit[] = [{ value: root, key: '', parent: undefined, depth: 0 }];
  while (stack.length) {
    const visit = stack.pop()!;
    const { value, depth } = visit;
    if (typeof value === 'string') {
      const problem = characterProblem(value, visit);
      if (problem) return problem;
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { kind: 'too-deep', limit: MAX_JSON_DEPTH };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], key: i, parent: visit, depth: depth + 1 });
      continue;
    }
    const entries = Object.entries(value as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const problem = characterProblem(key, visit, key);
      if (problem) return problem;
      stack.push({ value: child, key, parent: visit, depth: depth + 1 });
    }
  }
  return null;
}

/** Size-limited read, JSON.parse and inspection; BodyError for each problem. */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  const text = await readLimitedText(request, limit);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new BodyError({ kind: 'malformed', message: err instanceof Error ? err.message : String(err) });
  }
  const problem = inspectJson(parsed);
  if (problem) throw new BodyError(problem);
  return parsed;
}

/** "U+0000" for a character (an unpaired surrogate's own code unit). */
export const codePoint = (char: string) => `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
