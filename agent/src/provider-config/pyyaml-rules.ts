// What PyYAML's safe_load (the loader nova-compute uses) refuses but the `yaml`
// package accepts. Checked before parsing so a file Nova would not start with
// is refused here too, with the file's line and column.
import { Lexer } from 'yaml';

export interface ReadProblem {
  /** offset in the decoded text, or in the bytes when the text is not UTF-8 */
  offset: number;
  message: string;
}

/** Decodes UTF-8 strictly: Nova opens the file as UTF-8 text and fails on a bad byte. */
export function decodeUtf8(bytes: Uint8Array): { text: string } | { problem: ReadProblem; bytesBefore: Uint8Array } {
  const bad = firstInvalidUtf8(bytes);
  if (bad === -1) return { text: new TextDecoder('utf-8').decode(bytes) };
  return {
    problem: { offset: bad, message: `file is not valid UTF-8 (byte 0x${bytes[bad].toString(16).padStart(2, '0')} at byte offset ${bad})` },
    bytesBefore: bytes.subarray(0, bad),
  };
}

function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    // Lead byte ranges exclude overlongs (C0, C1, E0 80-9F, F0 80-8F),
    // surrogates (ED A0-BF) and code points above U+10FFFF (F4 90+, F5+).
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i;
      const [min, max] = k === 1 ? [lo, hi] : [0x80, 0xbf];
      if (c < min || c > max) return i;
    }
    i += need + 1;
  }
  return -1;
}

// PyYAML's Reader.NON_PRINTABLE: everything but tab, LF, CR, printable ASCII,
// NEL and the printable planes is refused anywhere in the file, comments included.
const NON_PRINTABLE = /[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

export function nonPrintableCharacter(text: string): ReadProblem | undefined {
  const match = NON_PRINTABLE.exec(text);
  if (!match) return undefined;
  const code = match[0].codePointAt(0)!.toString(16).padStart(4, '0');
  return { offset: match.index, message: `unacceptable character #x${code}: special characters are not allowed` };
}

// Lexer markers that stand for no source text.
const DOCUMENT = '\x02';
const SCALAR = '\x1f';
const FLOW_END = '\x18';

/**
 * PyYAML's scanner skips only spaces between tokens, so a tab is an error
 * anywhere but inside quoted scalars, block scalar bodies and comments: as
 * indentation, right after `key:` or `-`, inside or after a plain scalar, in
 * flow collections, on an otherwise blank line.
 */
export function misplacedTab(text: string): ReadProblem | undefined {
  if (!text.includes('\t')) return undefined;
  let offset = 0;
  let scalarFollows = false;
  let blockScalarPending = false;
  for (const token of new Lexer().lex(text)) {
    if (token === DOCUMENT || token === FLOW_END) continue;
    if (token === SCALAR) {
      scalarFollows = true;
      continue;
    }
    const first = token[0];
    let tabAllowed: boolean;
    if (scalarFollows) {
      // After the marker: a plain scalar, or the body of a `|`/`>` block scalar.
      tabAllowed = blockScalarPending;
      blockScalarPending = false;
      scalarFollows = false;
    } else if (first === '|' || first === '>') {
      blockScalarPending = true;
      tabAllowed = false;
    } else {
      tabAllowed = first === '#' || first === "'" || first === '"' || first === '%';
    }
    const tab = tabAllowed ? -1 : token.indexOf('\t');
    if (tab !== -1)
      return {
        offset: offset + tab,
        message: "found character '\\t' that cannot start any token (a tab is allowed only inside quotes, block scalars and comments)",
      };
    offset += token.length;
  }
  return undefined;
}

/** The checks above in PyYAML's order: reader (characters) first, then the scanner. */
export function pyyamlReadProblem(text: string): ReadProblem | undefined {
  return nonPrintableCharacter(text) ?? misplacedTab(text);
}
