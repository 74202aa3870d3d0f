/**
 * A fast reader for the plain YAML that Flux objects are written in: block mappings and
 * sequences, single-line plain and quoted scalars, single-line flow collections (`sourceRef:
 * {kind: GitRepository, name: fleet}`), comments, `---` between documents. It reads values only
 * (no nodes, no positions) and gives up — returns null — on anything else (anchors, tags, flow
 * collections over more than a line, block scalars, multi-line scalars, tabs, CR, a
 * BOM, duplicate keys, odd keys), so the caller parses that file with the yaml library as before.
 * Where it does answer, the answer is the yaml library's (YAML 1.2 core schema, `toJS`): the
 * tests compare the two over every fixture. The yaml Document API costs ~0.3 s of CPU for 1,000
 * objects in a fresh process; this costs a tenth of it, and positions are read (by the library)
 * only when a problem needs a line.
 */

export interface FastDoc {
  /** 1-based line of the document's first content line. */
  line: number;
  value: Record<string, unknown>;
}

type Frame =
  | { kind: 'map'; indent: number; node: Record<string, unknown> }
  | { kind: 'seq'; indent: number; node: unknown[] };

/** A plain key: no quoting, no indicator, nothing the core schema reads as a non-string. */
const KEY = /^[A-Za-z_./][A-Za-z0-9_./-]*$/;
const NULL = /^(?:~|null|Null|NULL)$/;
const BOOL = /^(?:true|True|TRUE|false|False|FALSE)$/;
const INT = /^[-+]?[0-9]+$/;
const FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
/** Forms the core schema reads specially that this reader leaves to the library. */
const EXOTIC = /^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|0o|0x)/;
/** First characters of a value that are YAML indicators (flow, anchors, tags, block scalars, …). */
const INDICATOR = /^[[\]{}&*!|>%@`?:,#-]/;
/** CR, tab, BOM, control characters, surrogates (lone or paired): the library knows what to make of them. */
const UNUSUAL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]/;
const SEPARATOR = /^---[ ]*(?:#.*)?$/;
const GIVE_UP = Symbol('give up');

class GiveUp extends Error {}

/** A plain scalar's value under the core schema, or GIVE_UP for the forms left to the library. */
function plainValue(plain: string): unknown {
  if (NULL.test(plain)) return null;
  if (BOOL.test(plain)) return plain[0] === 't' || plain[0] === 'T';
  if (EXOTIC.test(plain)) return GIVE_UP;
  if (INT.test(plain)) return Number(plain);
  if (FLOAT.test(plain)) return parseFloat(plain);
  return plain;
}

const FLOW_DEPTH = 8;

/**
 * A flow collection that opens at `text[at]` and closes on the same line (`{kind: GitRepository,
 * name: fleet}`, `[a, b]`, nested), as `[value, index after it]`, or GIVE_UP. Entries are plain
 * keys, and plain scalars without `#`, quotes or a `:` the library could read as a separator,
 * simple quoted scalars, or nested collections; anything else (empty entries, a trailing comma,
 * `? `, a pair in a sequence, a key with no value, a line break) goes to the library.
 */
function flow(text: string, at: number, depth: number): [unknown, number] | typeof GIVE_UP {
  if (depth > FLOW_DEPTH) return GIVE_UP;
  const map = text[at] === '{';
  const close = map ? '}' : ']';
  const out: unknown = map ? {} : [];
  let i = at + 1;
  const spaces = (): void => {
    while (text[i] === ' ') i++;
  };
  spaces();
  if (text[i] === close) return [out, i + 1];
  for (;;) {
    if (map) {
      const colon = text.indexOf(': ', i);
      if (colon < 0) return GIVE_UP;
      const key = text.slice(i, colon);
      if (!KEY.test(key) || plainValue(key) !== key || key === '__proto__') return GIVE_UP;
      if (Object.hasOwn(out as object, key)) return GIVE_UP;
      i = colon + 2;
      spaces();
      const v = flowValue(text, i, close, depth);
      if (v === GIVE_UP) return GIVE_UP;
      (out as Record<string, unknown>)[key] = v[0];
      i = v[1];
    } else {
      const v = flowValue(text, i, close, depth);
      if (v === GIVE_UP) return GIVE_UP;
      (out as unknown[]).push(v[0]);
      i = v[1];
    }
    spaces();
    if (text[i] === close) return [out, i + 1];
    if (text[i] !== ',') return GIVE_UP;
    i++;
    spaces();
    // A trailing comma, or an empty entry: the library's to judge.
    if (text[i] === close || text[i] === ',') return GIVE_UP;
  }
}

/** What a double-quoted scalar's one-character escapes stand for (YAML 1.2, 5.7). */
const ESCAPES: Readonly<Record<string, string>> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  t: '\t',
  n: '\n',
  v: '\v',
  f: '\f',
  r: '\r',
  e: '\x1b',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
  N: '\x85',
  _: '\xa0',
  L: '\u2028',
  P: '\u2029',
};
const HEX_DIGITS: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };
const HEX = /^[0-9A-Fa-f]+$/;

/**
 * A quoted scalar that opens at `text[at]` and closes on the same line, as `[value, index after
 * the closing quote]`, or GIVE_UP. Double quotes take YAML's escapes (`"^.*\\.sig$"`, Flux's
 * own example of an exclusion list); single quotes their doubled quote (`'it''s'`).
 */
function quoted(text: string, at: number): [string, number] | typeof GIVE_UP {
  const q = text[at];
  let out = '';
  let from = at + 1;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === "'" && q === "'") {
      if (text[i + 1] !== "'") return [out + text.slice(from, i), i + 1];
      out += text.slice(from, i + 1);
      from = ++i + 1;
    } else if (c === '"' && q === '"') {
      return [out + text.slice(from, i), i + 1];
    } else if (c === '\\' && q === '"') {
      out += text.slice(from, i);
      const e = text[i + 1];
      if (e === undefined) return GIVE_UP;
      const digits = HEX_DIGITS[e];
      if (digits !== undefined) {
        const hex = text.slice(i + 2, i + 2 + digits);
        if (hex.length !== digits || !HEX.test(hex)) return GIVE_UP;
        const code = parseInt(hex, 16);
        // Surrogates and what is past Unicode: the library's to judge.
        if ((code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return GIVE_UP;
        out += String.fromCodePoint(code);
        i += 1 + digits;
      } else {
        const v = ESCAPES[e];
        if (v === undefined) return GIVE_UP;
        out += v;
        i += 1;
      }
      from = i + 1;
    }
  }
  return GIVE_UP;
}

/** One value inside a flow collection starting at `text[at]`, up to (not past) what ends it. */
function flowValue(
  text: string,
  at: number,
  close: string,
  depth: number,
): [unknown, number] | typeof GIVE_UP {
  const c = text[at];
  if (c === '{' || c === '[') return flow(text, at, depth + 1);
  if (c === '"' || c === "'") {
    const q = quoted(text, at);
    if (q === GIVE_UP) return GIVE_UP;
    const next = text[q[1]];
    if (next !== ' ' && next !== ',' && next !== close) return GIVE_UP;
    return q;
  }
  let end = at;
  while (end < text.length && !',[]{}'.includes(text[end]!)) end++;
  const plain = text.slice(at, end).trimEnd();
  if (plain === '' || INDICATOR.test(plain) || /[#"']/.test(plain)) return GIVE_UP;
  // `a: b` inside a value, or a `:` right before what ends it, is a pair or a key to the library.
  if (/:(?: |$)/.test(plain) || (text[end] !== undefined && text[at + plain.length - 1] === ':'))
    return GIVE_UP;
  const v = plainValue(plain);
  return v === GIVE_UP ? GIVE_UP : [v, at + plain.length];
}

/** The value of one single-line scalar (after `key: ` or `- `), or GIVE_UP. */
function scalar(text: string): unknown {
  const c = text[0];
  if (c === '{' || c === '[') {
    const v = flow(text, 0, 0);
    if (v === GIVE_UP) return GIVE_UP;
    const after = text.slice(v[1]);
    return after.trim() === '' || /^[ ]+#/.test(after) ? v[0] : GIVE_UP;
  }
  if (c === '"' || c === "'") {
    const q = quoted(text, 0);
    if (q === GIVE_UP) return GIVE_UP;
    const after = text.slice(q[1]);
    if (after.trim() !== '' && !/^[ ]+#/.test(after)) return GIVE_UP;
    return q[0];
  }
  if (INDICATOR.test(text)) return GIVE_UP;
  const hash = text.indexOf(' #');
  const plain = (hash < 0 ? text : text.slice(0, hash)).trimEnd();
  if (plain.includes(': ') || plain.endsWith(':') || plain.includes('"') || plain.includes("'"))
    return GIVE_UP;
  return plainValue(plain);
}

/** Reads every document of `text`, or returns null when any of it is beyond this reader. */
export function readFastYaml(text: string): FastDoc[] | null {
  if (UNUSUAL.test(text)) return null;
  try {
    return read(text);
  } catch (err) {
    if (err instanceof GiveUp) return null;
    throw err;
  }
}

function read(text: string): FastDoc[] {
  const docs: FastDoc[] = [];
  let stack: Frame[] = [];
  let doc: FastDoc | null = null;
  /** `key:` with nothing after it: its value is decided by the next content line. */
  let pending: { map: Record<string, unknown>; key: string; indent: number } | null = null;
  /** Indent of the last line that held an inline scalar: a deeper next line would continue it. */
  let scalarIndent = -1;
  const giveUp = (): never => {
    throw new GiveUp();
  };
  const closeDoc = (): void => {
    if (pending) pending.map[pending.key] = null;
    pending = null;
    stack = [];
    doc = null;
    scalarIndent = -1;
  };
  const setKey = (map: Record<string, unknown>, key: string, value: unknown): void => {
    if (!KEY.test(key) || Object.hasOwn(map, key) || key === '__proto__' || scalar(key) !== key) giveUp();
    map[key] = value;
  };
  /** A `key: value` or `key:` entry whose key starts at column `indent` of `rest`. */
  const entry = (map: Record<string, unknown>, rest: string, indent: number): void => {
    const colon = rest.indexOf(':');
    if (colon <= 0 || (colon + 1 < rest.length && rest[colon + 1] !== ' ')) giveUp();
    const key = rest.slice(0, colon);
    const after = rest.slice(colon + 1).trimStart();
    if (after === '' || after[0] === '#') {
      setKey(map, key, undefined);
      pending = { map, key, indent };
      return;
    }
    const v = scalar(after);
    if (v === GIVE_UP) giveUp();
    setKey(map, key, v);
    scalarIndent = indent;
  };

  let lineNo = 0;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    lineNo++;
    if (line.length > 1000) giveUp();
    const rest = line.trimStart();
    if (rest === '' || rest[0] === '#') {
      if (end === text.length) break;
      continue;
    }
    const indent = line.length - rest.length;
    if (indent === 0 && (SEPARATOR.test(line) || line.startsWith('...') || line.startsWith('%'))) {
      if (!SEPARATOR.test(line)) giveUp();
      closeDoc();
      if (end === text.length) break;
      continue;
    }
    if (indent <= scalarIndent) scalarIndent = -1;
    else if (scalarIndent >= 0) giveUp();
    const isItem = rest === '-' || rest.startsWith('- ');

    if (doc === null) {
      if (isItem || indent !== 0) giveUp();
      doc = { line: lineNo, value: {} };
      docs.push(doc);
      stack.push({ kind: 'map', indent, node: doc.value });
    } else if (pending !== null) {
      const p: { map: Record<string, unknown>; key: string; indent: number } = pending;
      pending = null;
      if (isItem && indent >= p.indent) {
        const seq: unknown[] = [];
        p.map[p.key] = seq;
        stack.push({ kind: 'seq', indent, node: seq });
      } else if (!isItem && indent > p.indent) {
        const map: Record<string, unknown> = {};
        p.map[p.key] = map;
        stack.push({ kind: 'map', indent, node: map });
      } else {
        p.map[p.key] = null;
      }
    }
    while (stack.length > 0 && stack[stack.length - 1]!.indent > indent) stack.pop();
    let top = stack[stack.length - 1];
    if (!isItem && top?.kind === 'seq' && top.indent === indent) {
      stack.pop();
      top = stack[stack.length - 1];
    }
    if (top === undefined || top.indent !== indent) giveUp();

    if (!isItem) {
      if (top!.kind !== 'map') giveUp();
      entry(top!.node as Record<string, unknown>, rest, indent);
    } else {
      if (top!.kind !== 'seq' || rest === '-') giveUp();
      const item = rest.slice(2).trimStart();
      const col = indent + (rest.length - item.length);
      if (item === '' || item[0] === '#' || item.startsWith('- ') || item === '-') giveUp();
      const colon = item.indexOf(':');
      if (
        colon > 0 &&
        (colon + 1 === item.length || item[colon + 1] === ' ') &&
        KEY.test(item.slice(0, colon))
      ) {
        const map: Record<string, unknown> = {};
        (top!.node as unknown[]).push(map);
        stack.push({ kind: 'map', indent: col, node: map });
        entry(map, item, col);
      } else {
        const v = scalar(item);
        if (v === GIVE_UP) giveUp();
        (top!.node as unknown[]).push(v);
        scalarIndent = indent;
      }
    }
    if (end === text.length) break;
  }
  closeDoc();
  return docs;
}
