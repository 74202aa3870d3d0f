/**
 * The parts of Go's fmt package that templates reach: Sprint, Sprintln,
 * Sprintf with the common verbs, flags, width and precision, and %v of
 * slices, maps (sorted keys) and structs (String() methods honoured).
 */
import { asGoMap, GoStruct, kindOf, numberOf, sortedEntries, typeName } from './values.js';

interface Spec {
  minus: boolean;
  plus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width: number | null;
  prec: number | null;
  plusV: boolean;
}

const NO_SPEC: Spec = {
  minus: false,
  plus: false,
  sharp: false,
  space: false,
  zero: false,
  width: null,
  prec: null,
  plusV: false,
};

function runeCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function pad(s: string, spec: Spec, zeroOK = true): string {
  if (spec.width === null) return s;
  const n = spec.width - runeCount(s);
  if (n <= 0) return s;
  if (spec.minus) return s + ' '.repeat(n);
  if (spec.zero && zeroOK) {
    const sign = /^[+\- ]/.test(s) ? s[0]! : '';
    return sign + '0'.repeat(n) + s.slice(sign.length);
  }
  return ' '.repeat(n) + s;
}

function isPrint(c: string): boolean {
  return c === ' ' || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(c);
}

/** strconv.Quote (or QuoteToASCII when ascii). */
export function goQuote(s: string, ascii = false, quote = '"'): string {
  let out = quote;
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    if (c === quote || c === '\\') {
      out += `\\${c}`;
      continue;
    }
    if (ascii ? cp < 0x7f && isPrint(c) : isPrint(c)) {
      out += c;
      continue;
    }
    switch (c) {
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
      default:
        break;
    }
    if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp >= 0xd800 && cp < 0xe000) out += '\\ufffd';
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return out + quote;
}

function canBackquote(s: string): boolean {
  for (const c of s) {
    if (c === '`' || c === '\ufeff') return false;
    const cp = c.codePointAt(0)!;
    if (cp < 0x20 && c !== '\t') return false;
    if (cp === 0x7f) return false;
  }
  return true;
}

function fmtInt(v: bigint, verb: string, spec: Spec): string {
  const neg = v < 0n;
  const abs = neg ? -v : v;
  let digits: string;
  let prefix = '';
  switch (verb) {
    case 'v':
    case 'd':
      digits = abs.toString(10);
      break;
    case 'b':
      digits = abs.toString(2);
      if (spec.sharp) prefix = '0b';
      break;
    case 'o':
      digits = abs.toString(8);
      if (spec.sharp && digits !== '0') prefix = '0';
      break;
    case 'O':
      digits = abs.toString(8);
      prefix = '0o';
      break;
    case 'x':
      digits = abs.toString(16);
      if (spec.sharp) prefix = '0x';
      break;
    case 'X':
      digits = abs.toString(16).toUpperCase();
      if (spec.sharp) prefix = '0X';
      break;
    default:
      digits = abs.toString(10);
  }
  if (spec.prec !== null) {
    if (spec.prec === 0 && v === 0n) digits = '';
    digits = digits.padStart(spec.prec, '0');
  }
  const sign = neg ? '-' : spec.plus ? '+' : spec.space ? ' ' : '';
  return pad(sign + prefix + digits, spec, spec.prec === null);
}

function shortestDigits(v: number): { digits: string; exp: number } {
  const [mant, e] = Math.abs(v).toExponential().split('e') as [string, string];
  return { digits: mant.replace('.', ''), exp: Number(e) };
}

function expForm(mant: string, exp: number, upper: boolean): string {
  const sign = exp < 0 ? '-' : '+';
  const e = Math.abs(exp).toString().padStart(2, '0');
  return `${mant}${upper ? 'E' : 'e'}${sign}${e}`;
}

function fixedFromDigits(digits: string, exp: number): string {
  // digits d1d2d3… with value d1.d2d3… × 10^exp
  if (exp < 0) return `0.${'0'.repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return digits + '0'.repeat(exp + 1 - digits.length);
  return `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

function fmtFloat(v: number, verb: string, spec: Spec): string {
  let body: string;
  if (Number.isNaN(v)) body = 'NaN';
  else if (!Number.isFinite(v)) body = v > 0 ? (spec.plus ? '+Inf' : '+Inf') : '-Inf';
  else {
    const a = Math.abs(v);
    switch (verb) {
      case 'e':
      case 'E': {
        const [m, e] = a.toExponential(spec.prec ?? 6).split('e') as [string, string];
        body = expForm(m, Number(e), verb === 'E');
        break;
      }
      case 'f':
      case 'F':
        body = a.toFixed(spec.prec ?? 6);
        break;
      default: {
        // 'v', 'g', 'G'
        const upper = verb === 'G';
        if (spec.prec === null || spec.prec < 0) {
          const { digits, exp } = shortestDigits(a);
          if (a === 0) body = '0';
          else if (exp < -4 || exp >= 6) {
            // strconv 'g' with the shortest precision switches to %e from 1e+06 on.
            body = expForm(digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits, exp, upper);
          } else {
            body = fixedFromDigits(digits, exp);
          }
        } else {
          const p = spec.prec === 0 ? 1 : spec.prec;
          const [m, e] = a.toExponential(p - 1).split('e') as [string, string];
          const exp = Number(e);
          const digits = m.replace('.', '').replace(/0+$/, '') || '0';
          if (exp < -4 || exp >= p) {
            body = expForm(digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits, exp, upper);
          } else {
            body = fixedFromDigits(digits, exp);
          }
        }
      }
    }
  }
  const neg = v < 0 || Object.is(v, -0);
  const sign =
    neg && body !== 'NaN' && !body.startsWith('-')
      ? '-'
      : !neg && spec.plus
        ? '+'
        : !neg && spec.space
          ? ' '
          : '';
  const s = body.startsWith('+') || body.startsWith('-') ? body : sign + body;
  return pad(s, spec, Number.isFinite(v));
}

function fmtString(s: string, verb: string, spec: Spec): string {
  switch (verb) {
    case 'v':
    case 's': {
      const t = spec.prec !== null ? [...s].slice(0, spec.prec).join('') : s;
      return pad(t, spec);
    }
    case 'q': {
      const t = spec.prec !== null ? [...s].slice(0, spec.prec).join('') : s;
      if (spec.sharp && canBackquote(t)) return pad(`\`${t}\``, spec);
      return pad(goQuote(t, spec.plus), spec);
    }
    case 'x':
    case 'X': {
      const bytes = Buffer.from(spec.prec !== null ? [...s].slice(0, spec.prec).join('') : s, 'utf8');
      let hex = [...bytes].map((b) => b.toString(16).padStart(2, '0'));
      if (verb === 'X') hex = hex.map((h) => h.toUpperCase());
      const pre = spec.sharp ? (verb === 'X' ? '0X' : '0x') : '';
      const out = spec.space ? hex.map((h) => pre + h).join(' ') : pre + hex.join('');
      return pad(out, spec);
    }
    default:
      return badVerb(verb, s);
  }
}

function badVerb(verb: string, arg: unknown): string {
  if (arg === undefined || arg === null) return `%!${verb}(<nil>)`;
  return `%!${verb}(${typeName(arg)}=${formatValue(arg, 'v', NO_SPEC, 1)})`;
}

/** Prints one operand as fmt's printArg/printValue would. */
export function formatValue(arg: unknown, verb: string, spec: Spec = NO_SPEC, depth = 0): string {
  if (verb === 'T') return pad(arg === undefined || arg === null ? '<nil>' : typeName(arg), spec);
  if (arg === undefined || arg === null) {
    return verb === 'v' ? pad(depth > 0 ? '<nil>' : '<nil>', spec) : badVerb(verb, arg);
  }
  if (arg instanceof GoStruct && arg.stringer && 'vsxXq'.includes(verb)) {
    return fmtString(arg.stringer(), verb, spec);
  }
  // Elements of slices, maps and structs are printed without the width.
  const inner = spec.width === null ? spec : { ...spec, width: null };
  switch (kindOf(arg)) {
    case 'bool':
      return verb === 'v' || verb === 't' ? pad(String(arg), spec) : badVerb(verb, arg);
    case 'int':
    case 'int64': {
      const b = BigInt(arg as number | bigint);
      switch (verb) {
        case 'v':
        case 'd':
        case 'b':
        case 'o':
        case 'O':
        case 'x':
        case 'X':
          return fmtInt(b, verb, spec);
        case 'c':
          return pad(String.fromCodePoint(Number(b)), spec);
        case 'q':
          return pad(goQuote(String.fromCodePoint(Number(b)), spec.plus, "'"), spec);
        case 'U':
          return pad(`U+${b.toString(16).toUpperCase().padStart(4, '0')}`, spec);
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G':
          return badVerb(verb, arg);
        default:
          return badVerb(verb, arg);
      }
    }
    case 'float64':
      return 'vgGeEfF'.includes(verb) ? fmtFloat(numberOf(arg), verb, spec) : badVerb(verb, arg);
    case 'string':
      return fmtString(arg as string, verb, spec);
    case 'slice': {
      const parts = (arg as unknown[]).map((e) => formatValue(e, verb, inner, depth + 1));
      return pad(`[${parts.join(' ')}]`, spec, false);
    }
    case 'map': {
      const m = asGoMap(arg)!;
      const parts = sortedEntries(m).map(
        ([k, v]) => `${formatValue(k, verb, inner, depth + 1)}:${formatValue(v, verb, inner, depth + 1)}`,
      );
      return pad(`map[${parts.join(' ')}]`, spec, false);
    }
    case 'struct': {
      if (!(arg instanceof GoStruct)) return pad(String(arg), spec);
      const parts = arg.fields.map((f) => {
        const v = formatValue(f.value, verb, inner, depth + 1);
        return spec.plusV ? `${f.name}:${v}` : v;
      });
      return pad(`{${parts.join(' ')}}`, spec, false);
    }
    case 'func':
      return pad('0x0', spec);
    case 'invalid':
      return '<nil>';
  }
}

/** fmt.Sprint: spaces between operands when neither side is a string. */
export function sprint(args: readonly unknown[]): string {
  let out = '';
  let prevString = false;
  args.forEach((a, i) => {
    const isString = typeof a === 'string';
    if (i > 0 && !isString && !prevString) out += ' ';
    out += formatValue(a, 'v');
    prevString = isString;
  });
  return out;
}

/** fmt.Sprintln: always spaces, and a newline. */
export function sprintln(args: readonly unknown[]): string {
  return `${args.map((a) => formatValue(a, 'v')).join(' ')}\n`;
}

/** fmt.Sprintf. */
export function sprintf(format: string, args: readonly unknown[]): string {
  let out = '';
  let argNum = 0;
  const chars = [...format];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i]!;
    if (c !== '%') {
      out += c;
      i++;
      continue;
    }
    i++;
    const spec: Spec = { ...NO_SPEC };
    flags: for (; i < chars.length; i++) {
      switch (chars[i]) {
        case '#':
          spec.sharp = true;
          break;
        case '0':
          spec.zero = !spec.minus;
          break;
        case '+':
          spec.plus = true;
          break;
        case '-':
          spec.minus = true;
          spec.zero = false;
          break;
        case ' ':
          spec.space = true;
          break;
        default:
          break flags;
      }
    }
    const readNum = (): number | null => {
      let s = '';
      while (i < chars.length && /[0-9]/.test(chars[i]!)) s += chars[i++];
      return s === '' ? null : Number(s);
    };
    if (chars[i] === '*') {
      i++;
      const w = args[argNum++];
      if (typeof w === 'number' && Number.isInteger(w)) {
        spec.width = Math.abs(w);
        if (w < 0) {
          spec.minus = true;
          spec.zero = false;
        }
      } else out += '%!(BADWIDTH)';
    } else {
      spec.width = readNum();
    }
    if (chars[i] === '.') {
      i++;
      if (chars[i] === '*') {
        i++;
        const p = args[argNum++];
        if (typeof p === 'number' && Number.isInteger(p) && p >= 0) spec.prec = p;
        else out += '%!(BADPREC)';
      } else {
        spec.prec = readNum() ?? 0;
      }
    }
    if (i >= chars.length) {
      out += '%!(NOVERB)';
      break;
    }
    const verb = chars[i++]!;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (argNum >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const arg = args[argNum++];
    if (verb === 'v' && spec.plus) {
      spec.plus = false;
      spec.plusV = true;
    }
    if (verb === 'w') {
      out += formatValue(arg, 'v', spec);
      continue;
    }
    out += formatValue(arg, verb, spec);
  }
  if (argNum < args.length) {
    const extra = args
      .slice(argNum)
      .map((a) => (a === undefined || a === null ? '<nil>' : `${typeName(a)}=${formatValue(a, 'v')}`));
    out += `%!(EXTRA ${extra.join(', ')})`;
  }
  return out;
}
