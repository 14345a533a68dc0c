// Reads a provider config file into the values PyYAML's yaml.safe_load
// (Nova's loader) would build from it, or refuses it where safe_load raises.
// The `yaml` package parses (failsafe schema: every scalar a string, tags
// kept); the scalars are then resolved and constructed by PyYAML's own YAML
// 1.1 rules (resolver.py, constructor.py SafeConstructor), merge keys and
// duplicate keys included.
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  parseAllDocuments,
  parseDocument,
  Scalar,
  type Document,
  type Node,
} from 'yaml';
import { PyBytes, PyDict, PySet, PyTimestamp, PyTuple, UnhashableKeyError, type PyValue } from './python-values.js';
import { pyyamlReadProblem } from './pyyaml-rules.js';

export interface YamlLoadProblem {
  offset?: number;
  message: string;
}

export type YamlLoadResult = { value: PyValue; doc: Document; lineCounter: LineCounter } | { problem: YamlLoadProblem };

const TAG = 'tag:yaml.org,2002:';

class ConstructorError extends Error {
  constructor(
    message: string,
    readonly offset?: number,
  ) {
    super(message);
  }
}

/**
 * `text` as Python's open() hands it over: decoded, universal newlines (CR
 * and CRLF read as LF). PyYAML also breaks lines at NEL, LS and PS.
 */
export function pythonText(decoded: string): string {
  return decoded.replace(/\r\n?/g, '\n');
}

export function safeLoad(text: string): YamlLoadResult {
  const unreadable = pyyamlReadProblem(maskQuotedContinuationTabs(text));
  if (unreadable) return { problem: unreadable };
  const directive = directiveProblem(text.replace(/[\x85\u2028\u2029]/g, '\n'));
  if (directive) return { problem: directive };
  const anchored = pyyamlAnchors(pyyamlLineBreaks(withoutInnerBoms(text)));
  if ('problem' in anchored) return anchored;
  const source = anchored.text;
  let lineCounter = new LineCounter();
  const parse = (yaml: string, counter: LineCounter) =>
    parseDocument(yaml, { version: '1.1', schema: 'failsafe', uniqueKeys: false, lineCounter: counter, prettyErrors: false });
  // PyYAML takes `'a'#b` or `]#b` as a value then a comment; the `yaml` package wants a space.
  const firstError = (d: Document, yaml: string) =>
    d.errors.find(
      (e) =>
        !(e.code === 'MISSING_CHAR' && /Comments must be separated/.test(e.message) && /['"\]}]/.test(yaml[e.pos[0] - 1] ?? '')) &&
        !(e.code === 'MULTIPLE_DOCS' && onlyDocumentEndsFollow(yaml)),
    );
  let doc = parse(source, lineCounter);
  let parsed = source;
  const error = firstError(doc, source);
  if (error) {
    const reindented = indentContinuationLines(source);
    const retryCounter = new LineCounter();
    const retry = reindented === undefined ? undefined : parse(reindented, retryCounter);
    if (!retry || firstError(retry, reindented!)) return { problem: { offset: error.pos[0], message: error.message.split('\n')[0] } };
    doc = retry;
    parsed = reindented!;
    lineCounter = retryCounter;
  }
  const depth = nestingDepth(doc.contents);
  if (depth > PYYAML_MAX_DEPTH)
    return {
      problem: { message: `collections nested ${depth} deep: PyYAML exceeds Python's recursion limit (Nova fails with RecursionError)` },
    };
  const flowProblem = pyyamlFlowProblem(doc, parsed);
  if (flowProblem) return { problem: flowProblem };
  const version = doc.warnings.map((w) => /Unsupported YAML version (\d+)\./.exec(w.message)).find(Boolean);
  if (version && version[1] !== '1')
    return { problem: { offset: 0, message: 'found incompatible YAML document (version 1.* is required)' } };
  try {
    return { value: new Constructor(doc, parsed).construct(doc.contents), doc, lineCounter };
  } catch (err) {
    if (err instanceof ConstructorError) return { problem: { offset: err.offset, message: err.message } };
    if (err instanceof UnhashableKeyError) return { problem: { message: 'while constructing a mapping: found unhashable key' } };
    throw err;
  }
}

/**
 * PyYAML breaks lines at NEL, LS and PS as at LF. NEL reads as LF everywhere;
 * inside a quoted scalar LS and PS stay themselves (PyYAML keeps them in the
 * value), elsewhere they break the line.
 */
function pyyamlLineBreaks(text: string): string {
  if (!/[\x85\u2028\u2029]/.test(text)) return text;
  const nel = text.replace(/\x85/g, '\n');
  if (!/[\u2028\u2029]/.test(nel)) return nel;
  let out = '';
  let offset = 0;
  for (const token of new Lexer().lex(nel)) {
    if (token === '\x02' || token === '\x1f' || token === '\x18') continue;
    // In a quoted scalar PyYAML drops the blanks around such a break.
    out +=
      token[0] === '"' || token[0] === "'" ? token.replace(/[ \t]*([\u2028\u2029])[ \t]*/g, '$1') : token.replace(/[\u2028\u2029]/g, '\n');
    offset += token.length;
  }
  return offset === nel.length ? out : nel.replace(/[\u2028\u2029]/g, '\n');
}

/**
 * The directives before a document, as PyYAML scans them: a name of letters,
 * digits, `-` and `_`; `%YAML MAJOR.MINOR` once; `%TAG !handle! prefix`.
 */
function directiveProblem(text: string): YamlLoadProblem | undefined {
  let offset = 0;
  let yamlSeen = false;
  for (const line of text.split('\n')) {
    const here = offset;
    offset += line.length + 1;
    if (line.trim() === '' || line.startsWith('#')) continue;
    if (!line.startsWith('%')) return undefined;
    const fail = (message: string) => ({ offset: here, message: `while scanning a directive: ${message}` });
    const name = /^%([0-9A-Za-z_-]+)(?= |$)/.exec(line);
    if (!name) return fail('expected alphabetic or numeric character');
    const rest = line.slice(name[0].length);
    if (name[1] === 'YAML') {
      if (yamlSeen) return { offset: here, message: 'found duplicate YAML directive' };
      yamlSeen = true;
      if (!/^[ ]+[0-9]+\.[0-9]+(?:[ ]+(?:#.*)?)?$/.test(rest)) return fail("expected a digit or '.' in the YAML version");
    } else if (name[1] === 'TAG') {
      if (!/^[ ]+!(?:[0-9A-Za-z_-]*!)?[ ]+\S+(?:[ ]+(?:#.*)?)?$/.test(rest)) return fail('expected a tag handle and prefix');
    }
  }
  return undefined;
}

/**
 * A `?` starting a token inside a flow collection is PyYAML's key indicator.
 * PyYAML's anchors and aliases are made of ASCII letters, digits, `-` and `_`;
 * one ends at any of `?:,]}%@\`` (so `&a:` is an anchored empty key), any other
 * character is an error. An anchor may not be defined twice in a document.
 * Returns the text with a space after such anchors, as PyYAML splits them.
 */
function pyyamlAnchors(text: string): { text: string } | { problem: YamlLoadProblem } {
  if (!/[&*?[{:]/.test(text)) return { text };
  let offset = 0;
  let flowDepth = 0;
  let previous = '';
  let lastColon = 0;
  let flowIsValue = false;
  let valueFlowJustEnded = false;
  let lineStart = true;
  let question: number | undefined;
  const anchors = new Set<string>();
  const splits: number[] = [];
  for (const token of new Lexer().lex(text)) {
    // The lexer's document, scalar and flow-end markers stand for no source text.
    if (token === '\x02' || token === '\x1f' || token === '\x18') continue;
    if (token === '[' || token === '{') {
      // A flow collection that is a mapping value on its line may not be a key itself (`a: {b}: c`).
      if (flowDepth === 0) flowIsValue = previous === ':' && !text.slice(lastColon, offset).includes('\n');
      flowDepth++;
    } else if ((token === ']' || token === '}') && flowDepth > 0) {
      flowDepth--;
      if (flowDepth === 0 && flowIsValue) {
        valueFlowJustEnded = true;
        previous = token;
        offset += token.length;
        continue;
      }
    }
    // In a flow collection PyYAML takes a `?` that starts a token for the key indicator: `{?a: 1}` is {a: 1}.
    else if (flowDepth > 0 && token.length > 1 && token[0] === '?' && token[1] !== ' ') splits.push(offset + 1);
    // PyYAML wants a node before a `:` in a flow collection: `{: 1}` and `[a, :b]` are errors.
    if (flowDepth > 0 && token[0] === ':' && (previous === '[' || previous === '{' || previous === ',' || previous === ':'))
      return { problem: { offset, message: "while parsing a flow node: expected the node content, but found ':'" } };
    // Block context: a `:` that starts a line is the value of an explicit `? key` at its column, or an error.
    if (flowDepth === 0 && lineStart) {
      const column = offset - (text.lastIndexOf('\n', offset - 1) + 1);
      if (token === '?') question = column;
      else if (token === ':') {
        if (question !== column)
          return { problem: { offset, message: "while parsing a block mapping: expected <block end>, but found ':'" } };
        question = undefined;
      }
    }
    if (token === '\n') lineStart = true;
    else if (token.trim() !== '' && token !== '-') lineStart = false;
    if (token.trim() !== '' && token[0] !== '#') previous = token;
    if (token === ':') lastColon = offset;
    if (token === '&' || token === '*')
      return {
        problem: { offset, message: `while scanning an ${token === '&' ? 'anchor' : 'alias'}: expected alphabetic or numeric character` },
      };
    if (flowDepth === 0 && token === ':' && valueFlowJustEnded)
      return { problem: { offset, message: 'mapping values are not allowed here' } };
    if (token.trim() !== '' && token[0] !== '#') valueFlowJustEnded = false;
    if ((token[0] === '&' || token[0] === '*') && token.length > 1) {
      const name = /^[&*][0-9A-Za-z_-]*/.exec(token)![0];
      if (name.length < token.length) {
        const next = token[name.length];
        const before = text.slice(text.lastIndexOf('\n', offset - 1) + 1, offset);
        // `&a:` is an anchored empty key only where a key may start (PyYAML:
        // "mapping values are not allowed here" after `key: `).
        const keyMayStart = /^[ ]*(?:[-?][ ]+)*$/.test(before) || /[[{,][ ]*$/.test(before);
        if (name.length === 1 || !'?:,]}%@`'.includes(next) || (next === ':' && !keyMayStart))
          return {
            problem: {
              offset,
              message: `while scanning an ${token[0] === '&' ? 'anchor' : 'alias'}: expected alphabetic or numeric character`,
            },
          };
        splits.push(offset + name.length);
      }
      if (name[0] === '&') {
        if (anchors.has(name)) return { problem: { offset, message: `found duplicate anchor '${name.slice(1)}'` } };
        anchors.add(name);
      }
    }
    offset += token.length;
  }
  let out = text;
  for (const at of splits.sort((a, b) => b - a)) out = `${out.slice(0, at)} ${out.slice(at)}`;
  return { text: out };
}

/**
 * PyYAML does not look at indentation inside a flow collection or a quoted
 * scalar; the `yaml` package wants continuation lines indented past their
 * block parent. Returns the text with such lines indented (leading spaces on
 * a continuation line are folded away, so no value changes), or undefined
 * when no line needed it. Only tried on a file the `yaml` package refused.
 */
export function indentContinuationLines(text: string): string | undefined {
  return scanContinuations(text, true).text;
}

/**
 * PyYAML allows tabs among the blanks that start a quoted scalar's
 * continuation line; the `yaml` package's lexer does not see that such a line
 * is inside quotes. Those tabs become spaces for the tab check only.
 */
export function maskQuotedContinuationTabs(text: string): string {
  if (!text.includes('\t')) return text;
  const { quotedContinuations } = scanContinuations(text, false);
  if (quotedContinuations.length === 0) return text;
  const lines = text.split('\n');
  for (const n of quotedContinuations) lines[n] = lines[n].replace(/^[ \t]+/, (blank) => blank.replace(/\t/g, ' '));
  return lines.join('\n');
}

function scanContinuations(text: string, reindent: boolean): { text?: string; quotedContinuations: number[] } {
  const lines = text.split('\n');
  const quotedContinuations: number[] = [];
  let changed = false;
  let flowDepth = 0;
  let quote: '"' | "'" | undefined;
  let ownerIndent = 0; // column where the open flow collection or quote began
  let lineIndent = 0;
  let blockScalarIndent: number | undefined;
  let emptyValueColumn: number | undefined;
  for (let n = 0; n < lines.length; n++) {
    let line = lines[n];
    const indent = /^ */.exec(line)![0].length;
    if (blockScalarIndent !== undefined) {
      if (line.trim() === '' || indent > blockScalarIndent) continue;
      blockScalarIndent = undefined;
    }
    if (quote) quotedContinuations.push(n);
    if (reindent && (flowDepth > 0 || quote)) {
      const documentMarker = /^(?:---|\.\.\.)(?:[ \t]|$)/.test(line);
      if (!documentMarker && line.trim() !== '' && indent <= ownerIndent) {
        line = ' '.repeat(ownerIndent + 1 - indent) + line;
        lines[n] = line;
        changed = true;
      }
    } else if (flowDepth === 0 && !quote) {
      lineIndent = indent;
      // PyYAML takes a block scalar header at its key's column as that key's value (`key:\n|\n  text`).
      if (reindent && emptyValueColumn === indent && /^ *[|>][0-9+-]*(?: +#.*)?$/.test(line)) {
        line = ` ${line}`;
        lines[n] = line;
        changed = true;
      }
    }
    if (flowDepth === 0 && !quote && line.trim() !== '' && !/^ *#/.test(line)) {
      const key = /^( *(?:- +)*)[^ #][^#]*:[ ]*(?:#.*)?$/.exec(line);
      emptyValueColumn = key ? key[1].length : undefined;
    }
    let i = /^ */.exec(line)![0].length;
    let nodeStart = flowDepth === 0 && !quote;
    while (i < line.length) {
      const c = line[i];
      if (quote) {
        if (quote === '"' && c === '\\') i += 2;
        else if (c === quote && quote === "'" && line[i + 1] === "'") i += 2;
        else {
          if (c === quote) quote = undefined;
          i++;
        }
        continue;
      }
      if (c === ' ' || c === '\t') {
        i++;
        continue;
      }
      if (c === '#' && (i === 0 || line[i - 1] === ' ' || line[i - 1] === '\t')) break;
      if (flowDepth > 0) {
        const prev = line.slice(0, i).trimEnd().slice(-1);
        if ((c === '"' || c === "'") && (prev === '' || '[{,:?'.includes(prev))) quote = c;
        else if (c === '[' || c === '{') flowDepth++;
        else if (c === ']' || c === '}') flowDepth--;
        i++;
        continue;
      }
      if (nodeStart) {
        if ((c === '-' || c === '?' || c === ':') && /[ \t]|$/.test(line[i + 1] ?? '')) {
          i++;
          continue;
        }
        if ((c === '&' || c === '!' || c === '*') && i + 1 < line.length) {
          while (i < line.length && line[i] !== ' ') i++;
          continue;
        }
        if (c === '[' || c === '{') {
          flowDepth = 1;
          ownerIndent = i;
          i++;
          continue;
        }
        if (c === '"' || c === "'") {
          quote = c;
          ownerIndent = i;
          i++;
          continue;
        }
        if (c === '|' || c === '>') {
          blockScalarIndent = lineIndent;
          break;
        }
        nodeStart = false;
      }
      // A plain scalar (or what follows a closed flow collection or quote): a `: ` starts a value.
      if (c === ':' && /[ \t]|$/.test(line[i + 1] ?? '')) nodeStart = true;
      i++;
    }
  }
  return { text: changed ? lines.join('\n') : undefined, quotedContinuations };
}

/** After `...`, PyYAML skips further `...` markers; anything else is a second document. */
function onlyDocumentEndsFollow(yaml: string): boolean {
  const docs = parseAllDocuments(yaml, { version: '1.1', schema: 'failsafe' });
  if (!Array.isArray(docs)) return false;
  return docs
    .slice(1)
    .every((d) => d.directives?.docStart !== true && isScalar(d.contents) && d.contents.range?.[0] === d.contents.range?.[1]);
}

/**
 * What PyYAML refuses in flow collections but the `yaml` package reads: an
 * implicit key whose `:` is on a later line (`{a\n: 1}`), and a `?` inside a
 * plain scalar (`[a?b]`: PyYAML takes it for a key indicator).
 */
function pyyamlFlowProblem(doc: Document, yaml: string): YamlLoadProblem | undefined {
  let found: YamlLoadProblem | undefined;
  const check = (node: unknown, inFlow: boolean): void => {
    if (found) return;
    if (isScalar(node)) {
      if (inFlow && node.type === Scalar.PLAIN && /.\?/s.test(scalarText(node)))
        found = {
          offset: node.range?.[0],
          message: "while parsing a flow collection: expected ',' or the end of the collection, but found '?'",
        };
      return;
    }
    if (!isMap(node) && !isSeq(node)) return;
    const flow = inFlow || Boolean(node.flow);
    for (const item of node.items as unknown[]) {
      if (isPair(item)) {
        const key = item.key as Node | null;
        const value = item.value as Node | null;
        if (flow && key?.range && value?.range) {
          const colon = yaml.indexOf(':', key.range[1]);
          const before = yaml.slice(0, key.range[0]).trimEnd();
          if (colon !== -1 && colon < value.range[0] && yaml.slice(key.range[0], colon).includes('\n') && !before.endsWith('?'))
            found = {
              offset: colon,
              message: "while parsing a flow mapping: expected ',' or '}', but got ':' (a key and its ':' on different lines)",
            };
        }
        check(key, flow);
        check(value, flow);
      } else check(item, flow);
    }
  };
  // Recursion is safe: the caller has refused documents nested deeper than PYYAML_MAX_DEPTH.
  check(doc.contents, false);
  return found;
}

/** Nesting depth of collections (aliases not followed), as PyYAML's recursive composer goes down. */
function nestingDepth(root: Node | null | undefined): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (isMap(node) || isSeq(node)) {
      deepest = Math.max(deepest, depth + 1);
      for (const item of node.items as unknown[]) {
        if (isPair(item)) stack.push([item.key, depth + 1], [item.value, depth + 1]);
        else stack.push([item, depth + 1]);
      }
    }
  }
  return deepest;
}

// Past about this many nested collections PyYAML's composer exceeds Python's
// default recursion limit (1000 frames) and Nova fails with RecursionError;
// the exact depth varies by a few with the caller's stack and the collection kinds.
export const PYYAML_MAX_DEPTH = 487;

type Pairs = [Node | null, Node | null][];

class Constructor {
  private readonly built = new Map<Node, PyValue>();
  private readonly building = new Set<Node>();

  constructor(
    private readonly doc: Document,
    private readonly source: string,
  ) {}

  construct(input: Node | null | undefined): PyValue {
    if (input === null || input === undefined) return null;
    const node = this.deref(input);
    const done = this.built.get(node);
    if (done !== undefined || this.built.has(node)) return done as PyValue;
    if (this.building.has(node)) throw new ConstructorError('found a recursive alias through a set or an ordered map', this.offset(node));
    this.building.add(node);
    const value = this.build(node);
    this.building.delete(node);
    this.built.set(node, value);
    return value;
  }

  private deref(node: Node): Node {
    if (!isAlias(node)) return node;
    const target = node.resolve(this.doc);
    if (!target) throw new ConstructorError(`found undefined alias '${node.source}'`, this.offset(node));
    return target as Node;
  }

  private offset(node: Node): number | undefined {
    const start = node.range?.[0];
    // PyYAML marks a node where its properties start: point at the tag.
    if (start === undefined || node.tag === undefined) return start;
    let end = start;
    while (end > 0 && /\s/.test(this.source[end - 1])) end--;
    let tag = end;
    while (tag > 0 && !/[\s,[{]/.test(this.source[tag - 1])) tag--;
    return this.source[tag] === '!' ? tag : start;
  }

  private build(node: Node): PyValue {
    const tag = node.tag === '!' ? undefined : node.tag;
    if (isScalar(node)) {
      const text = scalarText(node);
      const resolved = tag ?? (node.type === Scalar.PLAIN ? resolvePlain(text) : `${TAG}str`);
      return constructScalar(resolved, text, this.offset(node));
    }
    if (isMap(node)) {
      const pairs: Pairs = node.items.map((p) => [p.key as Node | null, p.value as Node | null]);
      if (tag === undefined || tag === `${TAG}map`) {
        // Registered before it is filled, so an alias inside may refer to it (as PyYAML allows).
        const dict = new PyDict();
        this.built.set(node, dict);
        return this.mapping(pairs, dict);
      }
      if (tag === `${TAG}set`) return new PySet(this.mapping(pairs).keys());
      throw this.mismatch(tag, 'a mapping', node);
    }
    if (isSeq(node)) {
      // `[a: 1]`: a single-pair mapping inside a flow sequence.
      const items = node.items.map((item) => (isPair(item) ? { pairs: [[item.key, item.value]] as Pairs, node } : (item as Node | null)));
      const element = (item: (typeof items)[number]): PyValue =>
        item !== null && typeof item === 'object' && 'pairs' in item ? this.mapping(item.pairs) : this.construct(item);
      if (tag === undefined || tag === `${TAG}seq`) {
        const list: PyValue[] = [];
        this.built.set(node, list);
        for (const item of items) list.push(element(item));
        return list;
      }
      if (tag === `${TAG}omap` || tag === `${TAG}pairs`) {
        return items.map((item) => {
          const pairs = item !== null && typeof item === 'object' && 'pairs' in item ? item.pairs : this.pairsOf(item);
          if (!pairs || pairs.length !== 1)
            throw new ConstructorError('while constructing an ordered map: expected a mapping of length 1', this.offset(node));
          return new PyTuple([this.construct(pairs[0][0]), this.construct(pairs[0][1])]);
        });
      }
      throw this.mismatch(tag, 'a sequence', node);
    }
    throw new ConstructorError('unexpected node', this.offset(node));
  }

  private pairsOf(item: Node | null): Pairs | undefined {
    if (item === null) return undefined;
    const node = this.deref(item);
    return isMap(node) ? node.items.map((p) => [p.key as Node | null, p.value as Node | null]) : undefined;
  }

  private mismatch(tag: string, found: string, node: Node): ConstructorError {
    const known = ['str', 'int', 'float', 'bool', 'null', 'binary', 'timestamp', 'map', 'seq', 'set', 'omap', 'pairs'];
    return known.some((t) => tag === `${TAG}${t}`)
      ? new ConstructorError(`expected a node of another kind for the tag '${tag}', but found ${found}`, this.offset(node))
      : new ConstructorError(`could not determine a constructor for the tag '${tag}'`, this.offset(node));
  }

  /** SafeConstructor.flatten_mapping + construct_mapping: merged pairs first, later keys win. */
  private mapping(pairs: Pairs, dict = new PyDict()): PyDict {
    for (const [keyNode, valueNode] of this.flatten(pairs)) {
      const key =
        keyNode !== null && isScalar(keyNode) && keyNode.tag === undefined && keyNode.type === Scalar.PLAIN && scalarText(keyNode) === '='
          ? '=' // a `=` key is a string (flatten_mapping retags it)
          : this.construct(keyNode);
      dict.set(key, this.construct(valueNode));
    }
    return dict;
  }

  private flatten(pairs: Pairs): Pairs {
    const merged: Pairs = [];
    const own: Pairs = [];
    for (const [keyNode, valueNode] of pairs) {
      if (!isMergeKey(keyNode)) {
        own.push([keyNode, valueNode]);
        continue;
      }
      const value = valueNode === null ? null : this.deref(valueNode);
      if (value !== null && isMap(value))
        merged.push(...this.flatten(value.items.map((p) => [p.key as Node | null, p.value as Node | null])));
      else if (value !== null && isSeq(value)) {
        const groups: Pairs[] = [];
        for (const sub of value.items) {
          const subNode = sub === null ? null : this.deref(sub as Node);
          if (subNode === null || !isMap(subNode))
            throw new ConstructorError('while constructing a mapping: expected a mapping for merging', this.offset(value));
          groups.push(this.flatten(subNode.items.map((p) => [p.key as Node | null, p.value as Node | null])));
        }
        for (const group of groups.reverse()) merged.push(...group);
      } else
        throw new ConstructorError('while constructing a mapping: expected a mapping or list of mappings for merging', keyNode?.range?.[0]);
    }
    return [...merged, ...own];
  }
}

function isMergeKey(node: Node | null): boolean {
  if (node === null || !isScalar(node)) return false;
  if (node.tag === `${TAG}merge`) return true;
  return node.tag === undefined && node.type === Scalar.PLAIN && scalarText(node) === '<<';
}

function scalarText(node: Scalar): string {
  if (node.value === null || node.value === undefined) return '';
  const text = String(node.value);
  return text.includes(BOM_STAND_IN) ? text.replaceAll(BOM_STAND_IN, '\ufeff') : text;
}

// PyYAML skips a BOM only at the very start; elsewhere it is an ordinary
// character, where the `yaml` package would take it for a document start.
const BOM_STAND_IN = '\ufdd0';
function withoutInnerBoms(text: string): string {
  return text.indexOf('\ufeff', 1) === -1 ? text : text[0] + text.slice(1).replaceAll('\ufeff', BOM_STAND_IN);
}

// PyYAML's implicit resolvers (resolver.py), tried in its order for a plain scalar.
const BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;
const FLOAT =
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const INT = /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/;
const NULL = /^(?:~|null|Null|NULL|)$/;
const TIMESTAMP =
  /^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$/;

function resolvePlain(text: string): string {
  // Python's `$` also matches before a final newline; a plain scalar has none.
  if (BOOL.test(text)) return `${TAG}bool`;
  if (FLOAT.test(text)) return `${TAG}float`;
  if (INT.test(text)) return `${TAG}int`;
  if (text === '<<') return `${TAG}merge`;
  if (NULL.test(text)) return `${TAG}null`;
  if (TIMESTAMP.test(text)) return `${TAG}timestamp`;
  if (text === '=') return `${TAG}value`;
  return `${TAG}str`;
}

function constructScalar(tag: string, text: string, offset: number | undefined): PyValue {
  const fail = (message: string) => new ConstructorError(message, offset);
  switch (tag) {
    case `${TAG}str`:
      return text;
    case `${TAG}null`:
      return null;
    case `${TAG}bool`: {
      const value = { yes: true, true: true, on: true, no: false, false: false, off: false }[text.toLowerCase()];
      if (value === undefined) throw fail(`'${text}' is not a boolean`);
      return value;
    }
    case `${TAG}int`:
      return constructInt(text, fail);
    case `${TAG}float`:
      return constructFloat(text, fail);
    case `${TAG}binary`:
      return constructBinary(text, fail);
    case `${TAG}timestamp`:
      return constructTimestamp(text, fail);
    default:
      if ([`${TAG}map`, `${TAG}seq`, `${TAG}set`, `${TAG}omap`, `${TAG}pairs`].includes(tag))
        throw fail(`expected a collection node for the tag '${tag}', but found a scalar`);
      throw fail(`could not determine a constructor for the tag '${tag}'`);
  }
}

/** Python's int(text, base) after PyYAML removed the underscores. */
function pythonInt(text: string, base: number, fail: (m: string) => Error): bigint {
  const trimmed = text.trim();
  const match = /^([-+]?)(.+)$/.exec(trimmed);
  // int(text, base) also takes the base's own prefix: int('0o17', 8) == 15.
  const prefixed = { 2: /^0[bB]/, 8: /^0[oO]/, 10: /^$/, 16: /^0[xX]/ }[base as 2 | 8 | 10 | 16];
  const digits = (match?.[2] ?? '').replace(prefixed, '');
  const valid = { 2: /^[01]+$/, 8: /^[0-7]+$/, 10: /^[0-9]+$/, 16: /^[0-9a-fA-F]+$/ }[base as 2 | 8 | 10 | 16];
  if (!valid.test(digits)) throw fail(`invalid literal for int() with base ${base}: '${text}'`);
  const prefix = { 2: '0b', 8: '0o', 10: '', 16: '0x' }[base as 2 | 8 | 10 | 16];
  const value = BigInt(`${prefix}${digits}`);
  return match?.[1] === '-' ? -value : value;
}

function constructInt(raw: string, fail: (m: string) => Error): bigint {
  let value = raw.replace(/_/g, '');
  if (value === '') throw fail('string index out of range');
  const sign = value[0] === '-' ? -1n : 1n;
  if ('+-'.includes(value[0])) value = value.slice(1);
  if (value === '0') return 0n;
  if (value.startsWith('0b')) return sign * pythonInt(value.slice(2), 2, fail);
  if (value.startsWith('0x')) return sign * pythonInt(value.slice(2), 16, fail);
  if (value[0] === '0') return sign * pythonInt(value, 8, fail);
  if (value.includes(':')) {
    let total = 0n;
    let base = 1n;
    for (const part of value.split(':').reverse()) {
      total += pythonInt(part, 10, fail) * base;
      base *= 60n;
    }
    return sign * total;
  }
  return sign * pythonInt(value, 10, fail);
}

/** Python's float(text): decimal, exponent, inf/infinity/nan, surrounding whitespace. */
function pythonFloat(text: string, fail: (m: string) => Error): number {
  const t = text.trim();
  if (/^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?$/.test(t)) return Number(t);
  const special = /^([-+]?)(inf|infinity|nan)$/.exec(t);
  if (special) return special[2] === 'nan' ? Number.NaN : special[1] === '-' ? -Infinity : Infinity;
  throw fail(`could not convert string to float: '${text}'`);
}

function constructFloat(raw: string, fail: (m: string) => Error): number {
  let value = raw.replace(/_/g, '').toLowerCase();
  if (value === '') throw fail('string index out of range');
  const sign = value[0] === '-' ? -1 : 1;
  if ('+-'.includes(value[0])) value = value.slice(1);
  if (value === '.inf') return sign * Infinity;
  if (value === '.nan') return Number.NaN;
  if (value.includes(':')) {
    let total = 0;
    let base = 1;
    for (const part of value.split(':').reverse()) {
      total += pythonFloat(part, fail) * base;
      base *= 60;
    }
    return sign * total;
  }
  return sign * pythonFloat(value, fail);
}

/** base64.decodebytes: characters outside the alphabet are skipped; the padding must be right. */
function constructBinary(text: string, fail: (m: string) => Error): PyBytes {
  if (/[^\x00-\x7f]/.test(text)) throw fail('failed to convert base64 data into ascii');
  const kept = text.replace(/[^A-Za-z0-9+/=]/g, '');
  const data = kept.split('=')[0];
  const padding = kept.length - data.length;
  const rest = data.length % 4;
  if (rest === 1 || (rest === 2 && padding < 2) || (rest === 3 && padding < 1))
    throw fail('failed to decode base64 data: Incorrect padding');
  return new PyBytes(new Uint8Array(Buffer.from(data, 'base64')));
}

const TIMESTAMP_PARTS =
  /^([0-9]{4})-([0-9][0-9]?)-([0-9][0-9]?)(?:(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9][0-9]):([0-9][0-9])(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9][0-9]?)(?::([0-9][0-9]))?))?)?$/;

/** datetime.date / datetime.datetime refuse impossible dates, times and offsets. */
function constructTimestamp(text: string, fail: (m: string) => Error): PyTimestamp {
  const m = TIMESTAMP_PARTS.exec(text);
  if (!m) throw fail(`'${text}' is not a timestamp`);
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (year < 1) throw fail(`year ${year} is out of range`);
  if (days === undefined) throw fail('month must be in 1..12');
  if (day < 1 || day > days) throw fail('day is out of range for month');
  if (m[4] === undefined) return new PyTimestamp(text, 'date');
  if (Number(m[4]) > 23) throw fail('hour must be in 0..23');
  if (Number(m[5]) > 59) throw fail('minute must be in 0..59');
  if (Number(m[6]) > 59) throw fail('second must be in 0..59');
  if (m[9] !== undefined && Number(m[10]) * 60 + Number(m[11] ?? 0) >= 24 * 60)
    throw fail('offset must be a timedelta strictly between -timedelta(hours=24) and timedelta(hours=24)');
  return new PyTimestamp(text, 'datetime');
}
