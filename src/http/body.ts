// The one way request bodies come in, for both APIs: a size limit enforced
// while reading (413 before anything is parsed), JSON.parse, then one
// iterative walk that refuses nesting deeper than MAX_JSON_DEPTH and C0/DEL
// control characters in any key or string (NUL would be stored whole but read
// back cut at the NUL, so no string may carry one). Each API words the errors
// in its own envelope.

/** Far deeper than any legitimate body (a reshaper body is 6 levels). */
export const MAX_JSON_DEPTH = 32;

/** C0 control characters and DEL. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

export type BodyProblem =
  | { kind: 'too-large'; limit: number }
  | { kind: 'malformed'; message: string }
  | { kind: 'too-deep'; limit: number }
  | { kind: 'control-character'; path: (string | number)[]; value: string; char: string };

export class BodyError extends Error {
  constructor(readonly problem: BodyProblem) {
    super(problem.kind);
  }
}

const utf8 = new TextDecoder();

/** Reads the body as text, refusing more than `limit` bytes (by Content-Length, then while reading). */
export async function readLimitedText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw new BodyError({ kind: 'too-large', limit });
  if (declared !== null) {
    // A declared length bounds the body (the HTTP server reads no more than
    // it), so it is read whole: under @hono/node-server straight off the
    // socket, without building a fetch Request, a web stream and an
    // AbortSignal for it (an eighth of a claim's server CPU).
    const bytes = await request.arrayBuffer();
    if (bytes.byteLength > limit) throw new BodyError({ kind: 'too-large', limit });
    return utf8.decode(bytes);
  }
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
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
  return utf8.decode(bytes);
}

/** First problem in a parsed JSON value: too deep, or a control character in a key or string. */
export function inspectJson(root: unknown): BodyProblem | null {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: root, path: [] }];
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const char = CONTROL_CHARACTER.exec(value)?.[0];
      if (char !== undefined) return { kind: 'control-character', path, value, char };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) return { kind: 'too-deep', limit: MAX_JSON_DEPTH };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: [...path, i] });
      continue;
    }
    const entries = Object.entries(value as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const char = CONTROL_CHARACTER.exec(key)?.[0];
      if (char !== undefined) return { kind: 'control-character', path: [...path, key], value: key, char };
      stack.push({ value: child, path: [...path, key] });
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

/** "U+0000" for a character. */
export const codePoint = (char: string) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
