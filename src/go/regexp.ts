/**
 * Go/RE2 regular expressions for `filterTags.pattern` and `exclusionList`.
 *
 * re2js is a port of Go's regexp/syntax (by way of RE2/J), so it accepts the same syntax
 * (`(?P<name>…)`, `(?i)`, `\d`, `\pL`, `\Q…\E`, repeat counts up to 1000) and rejects what
 * Go rejects (look-around, back-references). It matches in time linear in the input, so a
 * pattern such as `^(a+)+$` cannot stall a scan the way a backtracking engine would.
 */
import { RE2JS } from 're2js';

export interface Re2 {
  /** The pattern as written. */
  readonly source: string;
  /** Unanchored search, like Go's `Regexp.MatchString`. */
  test(s: string): boolean;
  /**
   * Go's `FindStringSubmatchIndex` followed by `Regexp.ExpandString(template)`: `$name`,
   * `${name}`, `$1`, `$$`. Returns null when the pattern does not match `s`.
   */
  expand(template: string, s: string): string | null;
  /** Submatch start/end pairs of the leftmost-first match (-1 for groups that did not take part), or null. */
  submatchIndex(s: string): number[] | null;
}

interface SyntaxErrorLike {
  getDescription(): string;
}

function isSyntaxError(err: unknown): err is SyntaxErrorLike {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { getDescription?: unknown }).getDescription === 'function'
  );
}

// Punctuation that stands for itself when escaped, and ASCII that stands for itself unescaped.
const ESCAPED_LITERAL = new Set('.-+*?()[]{}|^$\\/:=!<>,_#&~@%\'"`;'.split(''));
const PLAIN_LITERAL = /^[A-Za-z0-9\-_:=!<>,#&~@%'"`;/ ]$/;

/**
 * Literal text every match must start with (pattern `^lit…`) or end with (`…lit$`), found
 * conservatively so that checking it can only skip inputs RE2 would reject anyway: no `|`
 * anywhere (no top-level alternation), no flag groups (`(?i)`, `(?m)`, `(?s)`, `(?U)`), and a
 * literal directly before a quantifier is not counted.
 */
export function literalAffixes(pattern: string): { prefix: string; suffix: string } {
  const none = { prefix: '', suffix: '' };
  if (pattern.includes('|') || /\(\?(?!P<|<|:)/.test(pattern) || pattern.includes('\\Q')) return none;
  let prefix = '';
  if (pattern.startsWith('^')) {
    let i = 1;
    for (;;) {
      const c = pattern[i];
      let lit: string | null = null;
      let width = 1;
      if (c === undefined) break;
      if (c === '\\') {
        const e = pattern[i + 1];
        if (e !== undefined && ESCAPED_LITERAL.has(e)) {
          lit = e;
          width = 2;
        }
      } else if (PLAIN_LITERAL.test(c)) {
        lit = c;
      }
      if (lit === null) break;
      const next = pattern[i + width];
      if (next === '*' || next === '+' || next === '?' || next === '{') break;
      prefix += lit;
      i += width;
    }
  }
  let suffix = '';
  if (pattern.endsWith('$') && !escapedAt(pattern, pattern.length - 1)) {
    let i = pattern.length - 2;
    while (i >= 0) {
      const c = pattern[i]!;
      if (escapedAt(pattern, i)) {
        if (!ESCAPED_LITERAL.has(c)) break;
        suffix = c + suffix;
        i -= 2;
      } else if (PLAIN_LITERAL.test(c) && pattern[i - 1] !== '{' && pattern[i - 1] !== ',') {
        suffix = c + suffix;
        i -= 1;
      } else {
        break;
      }
    }
  }
  return { prefix, suffix };
}

/** Whether the character at `i` is escaped (preceded by an odd number of backslashes). */
function escapedAt(s: string, i: number): boolean {
  let n = 0;
  for (let j = i - 1; j >= 0 && s[j] === '\\'; j--) n++;
  return n % 2 === 1;
}

class GoRegexp implements Re2 {
  readonly #re: RE2JS;
  readonly #prefix: string;
  readonly #suffix: string;
  /** Templates already split into text and group numbers. */
  readonly #templates = new Map<string, (string | number)[]>();
  /** Index i holds the name of group i ("" for unnamed and for group 0), as Go's SubexpNames. */
  readonly #names: string[];

  constructor(
    readonly source: string,
    re: RE2JS,
  ) {
    this.#re = re;
    this.#names = new Array<string>(re.groupCount() + 1).fill('');
    for (const [name, index] of Object.entries(re.namedGroups())) this.#names[index] = name;
    ({ prefix: this.#prefix, suffix: this.#suffix } = literalAffixes(source));
  }

  /** A necessary condition for a match, far cheaper than running the automaton. */
  #mayMatch(s: string): boolean {
    return (
      (this.#prefix === '' || s.startsWith(this.#prefix)) && (this.#suffix === '' || s.endsWith(this.#suffix))
    );
  }

  test(s: string): boolean {
    return this.#mayMatch(s) && this.#re.test(s);
  }

  submatchIndex(s: string): number[] | null {
    if (!this.#mayMatch(s)) return null;
    const m: unknown = this.#re.re2().findSubmatchIndex(s);
    return Array.isArray(m) ? (m as number[]) : null;
  }

  expand(template: string, s: string): string | null {
    const match = this.submatchIndex(s);
    if (match === null) return null;
    let parts = this.#templates.get(template);
    if (parts === undefined) {
      parts = compileTemplate(template, this.#names);
      this.#templates.set(template, parts);
    }
    let out = '';
    for (const part of parts) {
      if (typeof part === 'string') {
        out += part;
      } else {
        const start = match[2 * part]!;
        if (start >= 0) out += s.slice(start, match[2 * part + 1]!);
      }
    }
    return out;
  }
}

// Go allows `$name` to run over Unicode letters and digits (unicode.IsLetter/IsDigit) and `_`.
const NAME_CHAR = /[\p{L}\p{Nd}_]/u;

/**
 * Go's `Regexp.expand`. Two Go rules matter in practice: `$name` takes the longest run of
 * letters, digits and `_` (so `$1x` names a group called "1x", which expands to nothing), and
 * a name with a leading zero (`$01`) is a name, not a number.
 */
export function expandTemplate(
  template: string,
  src: string,
  match: readonly number[],
  names: readonly string[],
): string {
  let out = '';
  for (const piece of templatePieces(template)) {
    if (typeof piece === 'string') {
      out += piece;
    } else if (piece.num >= 0) {
      const start = match[2 * piece.num];
      const end = match[2 * piece.num + 1];
      if (start !== undefined && end !== undefined && start >= 0) out += src.slice(start, end);
    } else {
      for (let i = 0; i < names.length; i++) {
        const start = match[2 * i];
        const end = match[2 * i + 1];
        if (names[i] === piece.name && start !== undefined && end !== undefined && start >= 0) {
          out += src.slice(start, end);
          break;
        }
      }
    }
  }
  return out;
}

/**
 * What `expandTemplate` does, worked out once per template: text stays text, each reference
 * becomes the number of the group it names (references to no group are dropped).
 */
export function compileTemplate(template: string, names: readonly string[]): (string | number)[] {
  const parts: (string | number)[] = [];
  let text = '';
  for (const piece of templatePieces(template)) {
    if (typeof piece === 'string') {
      text += piece;
      continue;
    }
    const num = piece.num;
    const group = num >= 0 ? (num < names.length ? num : -1) : names.indexOf(piece.name, 1);
    if (group >= 0) {
      if (text !== '') parts.push(text);
      text = '';
      parts.push(group);
    }
  }
  if (text !== '') parts.push(text);
  return parts;
}

interface Ref {
  name: string;
  /** The group number the name spells, or -1 when it is a name. */
  num: number;
}

/** Go's walk over a template: its text (`$$` is a `$`; a malformed reference stays text) and its references, in order. */
function templatePieces(template: string): (string | Ref)[] {
  const pieces: (string | Ref)[] = [];
  let text = '';
  let rest = template;
  for (;;) {
    const dollar = rest.indexOf('$');
    if (dollar < 0) break;
    text += rest.slice(0, dollar);
    rest = rest.slice(dollar + 1);
    if (rest.startsWith('$')) {
      text += '$';
      rest = rest.slice(1);
      continue;
    }
    const ref = extractRef(rest);
    if (ref === null) {
      // Malformed reference: Go keeps the `$` as text and carries on after it.
      text += '$';
      continue;
    }
    rest = ref.rest;
    if (text !== '') pieces.push(text);
    text = '';
    pieces.push({ name: ref.name, num: ref.num });
  }
  text += rest;
  if (text !== '') pieces.push(text);
  return pieces;
}

function extractRef(str: string): { name: string; num: number; rest: string } | null {
  if (str === '') return null;
  let s = str;
  let brace = false;
  if (s[0] === '{') {
    brace = true;
    s = s.slice(1);
  }
  let i = 0;
  for (const ch of s) {
    if (!NAME_CHAR.test(ch)) break;
    i += ch.length;
  }
  if (i === 0) return null;
  const name = s.slice(0, i);
  if (brace) {
    if (i >= s.length || s[i] !== '}') return null;
    i++;
  }
  let num = 0;
  for (let k = 0; k < name.length; k++) {
    const c = name.charCodeAt(k);
    if (c < 48 || c > 57 || num >= 1e8) {
      num = -1;
      break;
    }
    num = num * 10 + (c - 48);
  }
  if (name[0] === '0' && name.length > 1) num = -1;
  return { name, num, rest: s.slice(i) };
}

// Policies are recompiled on every scan; patterns are few and immutable, so keep them.
const cache = new Map<string, GoRegexp>();
const CACHE_LIMIT = 1024;

/**
 * Compiles `pattern` with Go's syntax. Throws `Error('invalid regular expression "(": missing closing )')`
 * on bad syntax.
 */
export function compileRegex(pattern: string): Re2 {
  const hit = cache.get(pattern);
  if (hit) return hit;
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (err) {
    const why = isSyntaxError(err)
      ? describe(err, pattern)
      : err instanceof Error
        ? err.message
        : String(err);
    throw new Error(`invalid regular expression ${JSON.stringify(pattern)}: ${why}`, { cause: err });
  }
  const compiled = new GoRegexp(pattern, re);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pattern, compiled);
  return compiled;
}

function describe(err: SyntaxErrorLike, pattern: string): string {
  const desc = err.getDescription();
  // re2js, like Go, appends the offending fragment (`missing closing ]: \`[=\``); it only adds
  // something when the fragment is not the whole pattern, which the message already quotes.
  const message = err instanceof Error ? err.message : '';
  const fragment = /: `([\s\S]*)`$/.exec(message)?.[1];
  return fragment !== undefined && fragment !== pattern ? `${desc}: \`${fragment}\`` : desc;
}
