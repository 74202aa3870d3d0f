/**
 * The scanner of Go's text/template (text/template/parse/lex.go, Go 1.22),
 * rewritten as a loop over the whole input: the parser reads items from an
 * array. Trimming (`{{- ` and ` -}}`) happens here, as in Go; the parser never
 * sees it.
 */

export type ItemType =
  | 'error'
  | 'bool'
  | 'char'
  | 'charConstant'
  | 'complex'
  | 'assign'
  | 'declare'
  | 'eof'
  | 'field'
  | 'identifier'
  | 'leftDelim'
  | 'leftParen'
  | 'number'
  | 'pipe'
  | 'rawString'
  | 'rightDelim'
  | 'rightParen'
  | 'space'
  | 'string'
  | 'text'
  | 'variable'
  // keywords
  | 'block'
  | 'break'
  | 'continue'
  | 'dot'
  | 'define'
  | 'else'
  | 'end'
  | 'if'
  | 'nil'
  | 'range'
  | 'template'
  | 'with';

const KEYWORDS: ReadonlyMap<string, ItemType> = new Map<string, ItemType>([
  ['.', 'dot'],
  ['block', 'block'],
  ['break', 'break'],
  ['continue', 'continue'],
  ['define', 'define'],
  ['else', 'else'],
  ['end', 'end'],
  ['if', 'if'],
  ['range', 'range'],
  ['nil', 'nil'],
  ['template', 'template'],
  ['with', 'with'],
]);

export function isKeyword(t: ItemType): boolean {
  return (
    t === 'block' ||
    t === 'break' ||
    t === 'continue' ||
    t === 'dot' ||
    t === 'define' ||
    t === 'else' ||
    t === 'end' ||
    t === 'if' ||
    t === 'nil' ||
    t === 'range' ||
    t === 'template' ||
    t === 'with'
  );
}

export interface Item {
  type: ItemType;
  /** Offset (UTF-16 index) of the item in the input. */
  pos: number;
  val: string;
  /** 1-based line at the start of the item. */
  line: number;
}

/** Go's item.String(), used in "unexpected …" messages. */
export function itemString(i: Item): string {
  if (i.type === 'eof') return 'EOF';
  if (i.type === 'error') return i.val;
  if (isKeyword(i.type)) return `<${i.val}>`;
  if ([...i.val].length > 10) return `${goQuoteTrunc(i.val, 10)}...`;
  return goQuoteSimple(i.val);
}

function goQuoteSimple(s: string): string {
  return JSON.stringify(s);
}

function goQuoteTrunc(s: string, n: number): string {
  return JSON.stringify([...s].slice(0, n).join(''));
}

const LEFT_DELIM = '{{';
const RIGHT_DELIM = '}}';
const LEFT_COMMENT = '/*';
const RIGHT_COMMENT = '*/';
const TRIM_MARKER_LEN = 2;

function isSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function isAlphaNumeric(c: string | undefined): boolean {
  if (c === undefined) return false;
  return c === '_' || /^[\p{L}\p{Nd}]$/u.test(c);
}

function hasLeftTrimMarker(s: string, at: number): boolean {
  return s.length - at >= 2 && s[at] === '-' && isSpace(s[at + 1]);
}

function hasRightTrimMarker(s: string, at: number): boolean {
  return s.length - at >= 2 && isSpace(s[at]) && s[at + 1] === '-';
}

function leftTrimLength(s: string, at: number): number {
  let i = at;
  while (i < s.length && isSpace(s[i])) i++;
  return i - at;
}

/** Go's %#U: `U+0041 'A'`. */
export function hashU(c: string): string {
  const cp = c.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase().padStart(4, '0');
  const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(c);
  return printable ? `U+${hex} '${c}'` : `U+${hex}`;
}

export function lex(input: string): Item[] {
  const items: Item[] = [];
  const newlines: number[] = [];
  for (let i = 0; i < input.length; i++) if (input.charCodeAt(i) === 10) newlines.push(i);
  const lineAt = (pos: number): number => {
    let lo = 0;
    let hi = newlines.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (newlines[mid]! < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  };

  let pos = 0;
  let start = 0;
  let parenDepth = 0;
  let failed = false;

  const emit = (type: ItemType): void => {
    items.push({ type, pos: start, val: input.slice(start, pos), line: lineAt(start) });
    start = pos;
  };
  const errorf = (msg: string): void => {
    items.push({ type: 'error', pos: start, val: msg, line: lineAt(start) });
    failed = true;
  };
  const peekChar = (): string | undefined => {
    if (pos >= input.length) return undefined;
    const cp = input.codePointAt(pos)!;
    return String.fromCodePoint(cp);
  };
  const nextChar = (): string | undefined => {
    const c = peekChar();
    if (c !== undefined) pos += c.length;
    return c;
  };
  const atRightDelim = (): { delim: boolean; trim: boolean } => {
    if (hasRightTrimMarker(input, pos) && input.startsWith(RIGHT_DELIM, pos + TRIM_MARKER_LEN)) {
      return { delim: true, trim: true };
    }
    if (input.startsWith(RIGHT_DELIM, pos)) return { delim: true, trim: false };
    return { delim: false, trim: false };
  };
  const atTerminator = (): boolean => {
    const r = peekChar();
    if (r === undefined || isSpace(r)) return true;
    if ('.,|:)('.includes(r)) return true;
    return r === RIGHT_DELIM[0];
  };

  type State = 'text' | 'inside' | 'done';
  let state: State = 'text';

  const lexText = (): State => {
    const x = input.indexOf(LEFT_DELIM, pos);
    if (x >= 0) {
      pos = x;
      let trimLength = 0;
      const delimEnd = pos + LEFT_DELIM.length;
      if (hasLeftTrimMarker(input, delimEnd)) {
        const text = input.slice(start, pos);
        trimLength = text.length - text.replace(/[ \t\r\n]+$/, '').length;
      }
      pos -= trimLength;
      if (pos > start) emit('text');
      pos += trimLength;
      start = pos;
      return lexLeftDelim();
    }
    pos = input.length;
    if (pos > start) emit('text');
    emit('eof');
    return 'done';
  };

  const lexLeftDelim = (): State => {
    pos += LEFT_DELIM.length;
    const trimSpace = hasLeftTrimMarker(input, pos);
    const afterMarker = trimSpace ? TRIM_MARKER_LEN : 0;
    if (input.startsWith(LEFT_COMMENT, pos + afterMarker)) {
      pos += afterMarker;
      start = pos;
      return lexComment();
    }
    emit('leftDelim');
    pos += afterMarker;
    start = pos;
    parenDepth = 0;
    return 'inside';
  };

  const lexComment = (): State => {
    pos += LEFT_COMMENT.length;
    const i = input.indexOf(RIGHT_COMMENT, pos);
    if (i < 0) {
      errorf('unclosed comment');
      return 'done';
    }
    pos = i + RIGHT_COMMENT.length;
    const { delim, trim } = atRightDelim();
    if (!delim) {
      errorf('comment ends before closing delimiter');
      return 'done';
    }
    if (trim) pos += TRIM_MARKER_LEN;
    pos += RIGHT_DELIM.length;
    if (trim) pos += leftTrimLength(input, pos);
    start = pos;
    return 'text';
  };

  const lexRightDelim = (): State => {
    const { trim } = atRightDelim();
    if (trim) {
      pos += TRIM_MARKER_LEN;
      start = pos;
    }
    pos += RIGHT_DELIM.length;
    emit('rightDelim');
    if (trim) {
      pos += leftTrimLength(input, pos);
      start = pos;
    }
    return 'text';
  };

  const lexSpace = (): State => {
    let numSpaces = 0;
    while (isSpace(peekChar())) {
      pos++;
      numSpaces++;
    }
    // A trim-marked right delimiter starts with a space: leave that space to it.
    if (hasRightTrimMarker(input, pos - 1) && input.startsWith(RIGHT_DELIM, pos - 1 + TRIM_MARKER_LEN)) {
      pos--;
      if (numSpaces === 1) return lexRightDelim();
    }
    emit('space');
    return 'inside';
  };

  const lexFieldOrVariable = (type: 'field' | 'variable'): State => {
    if (atTerminator()) {
      emit(type === 'variable' ? 'variable' : 'dot');
      return 'inside';
    }
    let r: string | undefined;
    for (;;) {
      const save = pos;
      r = nextChar();
      if (!isAlphaNumeric(r)) {
        pos = save;
        break;
      }
    }
    if (!atTerminator()) {
      errorf(`bad character ${hashU(peekChar() ?? '')}`);
      return 'done';
    }
    emit(type);
    return 'inside';
  };

  const lexIdentifier = (): State => {
    for (;;) {
      const save = pos;
      const r = nextChar();
      if (isAlphaNumeric(r)) continue;
      pos = save;
      const word = input.slice(start, pos);
      if (!atTerminator()) {
        errorf(`bad character ${hashU(r ?? '')}`);
        return 'done';
      }
      const kw = KEYWORDS.get(word);
      if (kw !== undefined && kw !== 'dot') emit(kw);
      else if (word[0] === '.') emit('field');
      else if (word === 'true' || word === 'false') emit('bool');
      else emit('identifier');
      return 'inside';
    }
  };

  const accept = (valid: string): boolean => {
    const c = peekChar();
    if (c !== undefined && valid.includes(c)) {
      pos += c.length;
      return true;
    }
    return false;
  };
  const acceptRun = (valid: string): void => {
    while (accept(valid));
  };
  const scanNumber = (): boolean => {
    accept('+-');
    let digits = '0123456789_';
    if (accept('0')) {
      if (accept('xX')) digits = '0123456789abcdefABCDEF_';
      else if (accept('oO')) digits = '01234567_';
      else if (accept('bB')) digits = '01_';
    }
    acceptRun(digits);
    if (accept('.')) acceptRun(digits);
    if (digits.length === 11 && accept('eE')) {
      accept('+-');
      acceptRun('0123456789_');
    }
    if (digits.length === 23 && accept('pP')) {
      accept('+-');
      acceptRun('0123456789_');
    }
    accept('i');
    if (isAlphaNumeric(peekChar())) {
      nextChar();
      return false;
    }
    return true;
  };
  const lexNumber = (): State => {
    if (!scanNumber()) {
      errorf(`bad number syntax: ${JSON.stringify(input.slice(start, pos))}`);
      return 'done';
    }
    const sign = peekChar();
    if (sign === '+' || sign === '-') {
      if (!scanNumber() || input[pos - 1] !== 'i') {
        errorf(`bad number syntax: ${JSON.stringify(input.slice(start, pos))}`);
        return 'done';
      }
      emit('complex');
    } else {
      emit('number');
    }
    return 'inside';
  };

  /** A "…" string or a '…' character constant: backslash escapes, no newline (Go's lexQuote/lexChar). */
  const lexQuoted = (close: string, kind: 'string' | 'charConstant', what: string): State => {
    for (;;) {
      const c = nextChar();
      if (c === '\\') {
        const r = nextChar();
        if (r !== undefined && r !== '\n') continue;
      }
      if (c === '\\' || c === undefined || c === '\n') {
        errorf(`unterminated ${what}`);
        return 'done';
      }
      if (c === close) break;
    }
    emit(kind);
    return 'inside';
  };
  const lexQuote = (): State => lexQuoted('"', 'string', 'quoted string');
  const lexChar = (): State => lexQuoted("'", 'charConstant', 'character constant');

  const lexRawQuote = (): State => {
    const end = input.indexOf('`', pos);
    if (end < 0) {
      errorf('unterminated raw quoted string');
      return 'done';
    }
    pos = end + 1;
    emit('rawString');
    return 'inside';
  };

  const lexInsideAction = (): State => {
    const { delim } = atRightDelim();
    if (delim) {
      if (parenDepth === 0) return lexRightDelim();
      errorf('unclosed left paren');
      return 'done';
    }
    const r = nextChar();
    if (r === undefined) {
      errorf('unclosed action');
      return 'done';
    }
    if (isSpace(r)) {
      pos -= r.length;
      return lexSpace();
    }
    switch (r) {
      case '=':
        emit('assign');
        return 'inside';
      case ':':
        if (nextChar() !== '=') {
          errorf('expected :=');
          return 'done';
        }
        emit('declare');
        return 'inside';
      case '|':
        emit('pipe');
        return 'inside';
      case '"':
        return lexQuote();
      case '`':
        return lexRawQuote();
      case '$':
        if (atTerminator()) {
          emit('variable');
          return 'inside';
        }
        return lexFieldOrVariable('variable');
      case "'":
        return lexChar();
      case '(':
        emit('leftParen');
        parenDepth++;
        return 'inside';
      case ')':
        emit('rightParen');
        parenDepth--;
        if (parenDepth < 0) {
          errorf(`unexpected right paren`);
          return 'done';
        }
        return 'inside';
      default:
        break;
    }
    if (r === '.') {
      const n = input[pos];
      if (n === undefined || n < '0' || n > '9') return lexFieldOrVariable('field');
    }
    if (r === '.' || r === '+' || r === '-' || (r >= '0' && r <= '9')) {
      pos -= r.length;
      return lexNumber();
    }
    if (isAlphaNumeric(r)) {
      pos -= r.length;
      return lexIdentifier();
    }
    const cp = r.codePointAt(0)!;
    if (cp <= 0x7f && cp >= 0x20 && cp !== 0x7f) {
      emit('char');
      return 'inside';
    }
    errorf(`unrecognized character in action: ${hashU(r)}`);
    return 'done';
  };

  while (!failed && state !== 'done') {
    state = state === 'text' ? lexText() : lexInsideAction();
  }
  return items;
}
