/**
 * A fast, deliberately narrow YAML reader for the documents that hold setter markers.
 *
 * Composing a document with the `yaml` library costs about 1 µs a byte, which dominates a
 * scan of a large repository. Nearly every marked document is plain Kubernetes YAML: block
 * maps and sequences, one-line scalars, one-line flow collections, comments. This reader
 * accepts exactly such documents and reports their value scalars (never keys) with the same
 * ranges the `yaml` Document API gives. Anything outside that subset — anchors, tags, block or
 * multi-line scalars, escapes, explicit keys, tabs, odd indentation, duplicate or non-string
 * keys — makes it give up (`false`), and the caller parses the document with the `yaml` library
 * as before. So it must never accept a document that library would reject or read differently;
 * test/write/simple.test.ts checks that against the library over generated documents.
 */

export type SimpleStyle = 'plain' | 'single' | 'double';

/** Called for each value scalar: its token's range (quotes included), style, flow context. */
export type OnValue = (start: number, end: number, style: SimpleStyle, inFlow: boolean) => void;

const SPACE = 32;
const HASH = 35;
const COLON = 58;
const COMMA = 44;
const DASH = 45;
const BACKSLASH = 92;

/** Thrown inside the reader when the document leaves the subset; never escapes this module. */
const GIVE_UP: unique symbol = Symbol('give up');

/** Characters the subset refuses anywhere: tabs, controls, C1, line/paragraph separators, BOM, a lone CR. */
const REFUSED = /[\t\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff]|\r(?!\n)/;

const MARKER_TOKEN = '"$imagepolicy"';

const MAX_DEPTH = 64;

/** Plain keys that the core schema would not read as strings. */
const NON_STRING_KEYS: ReadonlySet<string> = new Set([
  'true',
  'True',
  'TRUE',
  'false',
  'False',
  'FALSE',
  'null',
  'Null',
  'NULL',
]);

function isKeyStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
}

/** YAML indicators that may not start a plain scalar (`-` is allowed before an alphanumeric). */
function isIndicator(c: number): boolean {
  switch (c) {
    case DASH:
    case 63: // ?
    case COLON:
    case COMMA:
    case LBRACKET:
    case RBRACKET:
    case LBRACE:
    case RBRACE:
    case HASH:
    case 38: // &
    case 42: // *
    case 33: // !
    case 124: // |
    case 62: // >
    case SQ:
    case DQ:
    case 37: // %
    case 64: // @
    case 96: // `
    case SPACE:
      return true;
    default:
      return false;
  }
}

/** A `-` may start a plain scalar when a character that could continue it follows (`-1`, `--port`). */
function dashStarts(t: string, s: number): boolean {
  if (t.charCodeAt(s) !== DASH) return false;
  const c = t.charCodeAt(s + 1);
  return !(
    isNaN(c) ||
    c === 10 ||
    c === 13 ||
    c === COMMA ||
    c === HASH ||
    isFlowIndicator(c) ||
    c === SPACE
  );
}

const LBRACKET = 91;
const RBRACKET = 93;
const LBRACE = 123;
const RBRACE = 125;

function isFlowIndicator(c: number): boolean {
  return c === LBRACKET || c === RBRACKET || c === LBRACE || c === RBRACE;
}

const DQ = 34;
const SQ = 39;

/**
 * Sticky expressions for the runs the reader steps over. Each stops at a line break, so no
 * search runs past its line (a search to the end of the file for each scalar made the reader
 * quadratic in the file's size), and each is a `test` that leaves its end in `lastIndex`: no
 * match array is made. The reader runs in one-shot commands without V8's optimizing compiler,
 * where a loop over characters costs tens of nanoseconds a character and a compiled expression
 * about one.
 */
const SPACES = / */y;
const PLAIN_KEY = /[A-Za-z_][A-Za-z0-9_./-]*/y;
/** A double-quoted scalar's body: stops at its closing quote, an escape, or the line's end. */
const DQ_BODY = /[^"\\\n\r]*/y;
/** A single-quoted scalar's body, `''` included: stops at its closing quote or the line's end. */
const SQ_BODY = /(?:[^'\n\r]|'')*/y;
/** A plain scalar's text up to a `:` or `#` that may end it, or the line's end. */
const PLAIN_RUN = /[^:#\n\r]*/y;

/** A plain scalar in a flow collection, up to the first character that ends it or is refused there. */
const FLOW_PLAIN_RUN = /[^ ,[\]{}:#"'\\\n\r]*/y;

/** The end of the run `re` matches from `at`. */
function runEnd(re: RegExp, t: string, at: number): number {
  re.lastIndex = at;
  re.test(t);
  return re.lastIndex;
}

/**
 * End of a one-line quoted scalar starting at `s` (after the closing quote), or -1 when it does
 * not close on its line.
 */
function quotedEnd(t: string, s: number, eol: number): number {
  if (t.charCodeAt(s) === DQ) {
    const i = runEnd(DQ_BODY, t, s + 1);
    if (i >= eol) return -1;
    if (t.charCodeAt(i) === BACKSLASH) throw GIVE_UP; // escapes: left to the library
    return i + 1;
  }
  const i = runEnd(SQ_BODY, t, s + 1);
  return i < eol ? i + 1 : -1;
}

/** A map key's text as the library compares keys (all keys here are strings). */
function keyText(t: string, s: number, e: number): string {
  const c = t.charCodeAt(s);
  if (c === DQ) return t.slice(s + 1, e - 1);
  if (c === SQ) return t.slice(s + 1, e - 1).replace(/''/g, "'");
  const k = t.slice(s, e);
  if (NON_STRING_KEYS.has(k)) throw GIVE_UP;
  return k;
}

class Reader {
  /** Start of the current line, first non-space of its content, its end (before any CR), next line. */
  private ls = 0;
  private p = 0;
  private eol = 0;
  private nx = 0;
  private eof = false;
  /** Nesting depth, bounded so a pathological document cannot exhaust the stack. */
  private depth = 0;

  constructor(
    private readonly t: string,
    private readonly onValue: OnValue,
  ) {}

  read(): void {
    this.load(0);
    this.settle();
    if (this.eof) return;
    const t = this.t;
    if (this.p === 0 && t.startsWith('---', 0)) {
      let i = 3;
      if (i < this.eol && t.charCodeAt(i) !== SPACE) throw GIVE_UP;
      while (i < this.eol && t.charCodeAt(i) === SPACE) i++;
      if (i < this.eol && t.charCodeAt(i) !== HASH) throw GIVE_UP;
      this.advance();
      if (this.eof) return;
    }
    this.block();
    if (!this.eof) throw GIVE_UP;
  }

  private load(at: number): void {
    const t = this.t;
    this.ls = at;
    const nl = t.indexOf('\n', at);
    this.nx = nl < 0 ? t.length : nl + 1;
    let eol = nl < 0 ? t.length : nl;
    if (eol > at && t.charCodeAt(eol - 1) === 13) eol--;
    this.eol = eol;
    this.p = runEnd(SPACES, t, at);
  }

  /** Skips blank and comment-only lines, starting with the current one. */
  private settle(): void {
    while (this.p === this.eol || this.t.charCodeAt(this.p) === HASH) {
      if (this.nx >= this.t.length) {
        this.eof = true;
        return;
      }
      this.load(this.nx);
    }
  }

  private advance(): void {
    if (this.nx >= this.t.length) {
      this.eof = true;
      return;
    }
    this.load(this.nx);
    this.settle();
  }

  private col(): number {
    return this.p - this.ls;
  }

  private isSeqEntry(): boolean {
    return (
      this.t.charCodeAt(this.p) === DASH &&
      (this.p + 1 === this.eol || this.t.charCodeAt(this.p + 1) === SPACE)
    );
  }

  private skipSpaces(): void {
    if (this.t.charCodeAt(this.p) === SPACE) this.p = runEnd(SPACES, this.t, this.p);
  }

  /** Nothing but blanks and a comment may follow a value on its line. */
  private endOfLine(): void {
    const before = this.p;
    this.skipSpaces();
    if (this.p !== this.eol && (this.t.charCodeAt(this.p) !== HASH || this.p === before)) throw GIVE_UP;
    this.advance();
  }

  /**
   * An empty value (`key:` or `-` with only a comment after). The library reads it as an empty
   * scalar; rather than mirror what it makes of a marker there, such a line is left to it.
   */
  private emptyValue(): void {
    if (this.p < this.eol && this.t.slice(this.p, this.eol).includes(MARKER_TOKEN)) throw GIVE_UP;
    this.advance();
  }

  /** End of a key at `s` (before its `:`), or -1 when `s` does not start a `key:` in the subset. */
  private keyEnd(s: number): number {
    const t = this.t;
    const c = t.charCodeAt(s);
    let i: number;
    if (c === DQ || c === SQ) {
      i = quotedEnd(this.t, s, this.eol);
      if (i < 0) return -1;
    } else {
      if (!isKeyStart(c)) return -1;
      i = runEnd(PLAIN_KEY, t, s);
    }
    if (i >= this.eol || t.charCodeAt(i) !== COLON) return -1;
    if (i + 1 < this.eol && t.charCodeAt(i + 1) !== SPACE) return -1;
    if (i - s > 1000) throw GIVE_UP;
    return i;
  }

  /** A block collection whose first entry is at the current position. */
  private block(): void {
    if (++this.depth > MAX_DEPTH) throw GIVE_UP;
    if (this.isSeqEntry()) this.seq(this.col(), false);
    else if (this.keyEnd(this.p) >= 0) this.map(this.col());
    else throw GIVE_UP;
    this.depth--;
  }

  private map(c: number): void {
    const keys = new Set<string>();
    for (;;) {
      const ke = this.keyEnd(this.p);
      if (ke < 0) throw GIVE_UP;
      const key = keyText(this.t, this.p, ke);
      if (keys.has(key)) throw GIVE_UP;
      keys.add(key);
      this.p = ke + 1;
      this.skipSpaces();
      if (this.p === this.eol || this.t.charCodeAt(this.p) === HASH) {
        this.emptyValue();
        if (!this.eof) {
          const i = this.col();
          if (i > c) this.block();
          else if (i === c && this.isSeqEntry()) this.seq(c, true);
        }
      } else {
        this.inlineValue();
      }
      if (this.eof) return;
      const i = this.col();
      if (i < c) return;
      if (i > c || this.isSeqEntry()) throw GIVE_UP;
    }
  }

  /** `indentless`: the value of a map key at the same column, ended by the map's next key. */
  private seq(c: number, indentless: boolean): void {
    for (;;) {
      this.p++;
      this.skipSpaces();
      if (this.p === this.eol || this.t.charCodeAt(this.p) === HASH) {
        this.emptyValue();
        if (!this.eof && this.col() > c) this.block();
      } else if (this.isSeqEntry()) {
        throw GIVE_UP;
      } else if (this.keyEnd(this.p) >= 0) {
        this.map(this.col());
      } else {
        this.inlineValue();
      }
      if (this.eof) return;
      const i = this.col();
      if (i < c) return;
      if (i > c) throw GIVE_UP;
      if (!this.isSeqEntry()) {
        if (indentless) return;
        throw GIVE_UP;
      }
    }
  }

  /** A one-line quoted scalar at `s`, reported; returns the offset after its closing quote. */
  private quoted(s: number, inFlow: boolean): number {
    const e = quotedEnd(this.t, s, this.eol);
    if (e < 0) throw GIVE_UP;
    this.onValue(s, e, this.t.charCodeAt(s) === DQ ? 'double' : 'single', inFlow);
    return e;
  }

  /** A value on the line of its key or `-`: quoted, one-line flow, or one-line plain. */
  private inlineValue(): void {
    const t = this.t;
    const s = this.p;
    const c = t.charCodeAt(s);
    if (c === DQ || c === SQ) {
      this.p = this.quoted(s, false);
    } else if (c === LBRACKET || c === LBRACE) {
      this.p = this.flow(s);
    } else {
      if (isIndicator(c) && !dashStarts(t, s)) throw GIVE_UP;
      // One line up to ` #`; a `: ` inside or a `:` at the end would make it a nested key.
      let end = this.eol;
      for (let i = runEnd(PLAIN_RUN, t, s + 1); i < this.eol; i = runEnd(PLAIN_RUN, t, i + 1)) {
        if (t.charCodeAt(i) === HASH) {
          if (t.charCodeAt(i - 1) !== SPACE) continue;
          end = i;
          break;
        }
        if (i + 1 === this.eol || t.charCodeAt(i + 1) === SPACE) throw GIVE_UP;
      }
      while (t.charCodeAt(end - 1) === SPACE) end--;
      this.onValue(s, end, 'plain', false);
      this.p = end;
    }
    this.endOfLine();
  }

  private flowSpaces(i: number): number {
    while (i < this.eol && this.t.charCodeAt(i) === SPACE) i++;
    if (i >= this.eol) throw GIVE_UP; // a flow collection over several lines
    return i;
  }

  /** A flow collection closed on its own line; returns the offset after its closing bracket. */
  private flow(s: number): number {
    if (++this.depth > MAX_DEPTH) throw GIVE_UP;
    const t = this.t;
    const isMap = t.charCodeAt(s) === LBRACE;
    const close = isMap ? RBRACE : RBRACKET;
    const keys = isMap ? new Set<string>() : null;
    let i = this.flowSpaces(s + 1);
    if (t.charCodeAt(i) === close) {
      this.depth--;
      return i + 1;
    }
    for (;;) {
      if (keys) {
        const ke = this.keyEnd(i);
        if (ke < 0 || t.charCodeAt(ke + 1) !== SPACE) throw GIVE_UP;
        const key = keyText(this.t, i, ke);
        if (keys.has(key)) throw GIVE_UP;
        keys.add(key);
        i = this.flowSpaces(ke + 1);
      }
      i = this.flowSpaces(this.flowItem(i));
      const c = t.charCodeAt(i);
      if (c === close) {
        this.depth--;
        return i + 1;
      }
      if (c !== COMMA) throw GIVE_UP;
      i = this.flowSpaces(i + 1);
      if (t.charCodeAt(i) === RBRACKET || t.charCodeAt(i) === RBRACE) throw GIVE_UP;
    }
  }

  private flowItem(s: number): number {
    const t = this.t;
    const c = t.charCodeAt(s);
    if (c === DQ || c === SQ) return this.quoted(s, true);
    if (c === LBRACKET || c === LBRACE) return this.flow(s);
    if (isIndicator(c) && !dashStarts(t, s)) throw GIVE_UP;
    const e = runEnd(FLOW_PLAIN_RUN, t, s + 1);
    if (e < this.eol) {
      const ch = t.charCodeAt(e);
      if (!(ch === SPACE || ch === COMMA || ch === RBRACKET || ch === RBRACE)) throw GIVE_UP;
    }
    this.onValue(s, e, 'plain', true);
    return e;
  }
}

/**
 * Reads one document (a `---` chunk) if it lies in the subset, calling `onValue` for each value
 * scalar in document order; returns false as soon as it does not (callbacks made so far must
 * then be discarded).
 */
export function readSimple(text: string, onValue: OnValue): boolean {
  if (REFUSED.test(text)) return false;
  try {
    new Reader(text, onValue).read();
    return true;
  } catch (err) {
    if (err === GIVE_UP) return false;
    throw err;
  }
}
