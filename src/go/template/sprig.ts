/**
 * The sprig v3 functions (github.com/Masterminds/sprig) that Flux's
 * HermeticTxtFuncMap offers, with sprig's signatures (which decide how the
 * template converts arguments) and sprig's behaviour, including its quirks
 * (`uniq` of a string fails, `default` treats 0 and "" as empty, `keys` takes
 * only map[string]interface {}).
 */
import { createHash } from 'node:crypto';
import { RE2JS } from 're2js';
import { newVersion, parseSemverRange, type SemverVersion } from '../semver.js';
import { FuncError } from './errors.js';
import type { GoFunc } from './eval.js';
import { TEMPLATE_LIMITS } from './state.js';
import { formatValue, goQuote } from './fmt.js';
import {
  asGoMap,
  deepEqual,
  goFloat,
  GoFloat,
  GoMap,
  GoStruct,
  isTrue,
  kindOf,
  numberOf,
  sortedEntries,
  typedSlice,
  typeName,
} from './values.js';
import type { ParamKind } from './values.js';

/** sprig's strval: strings as they are, String() when there is one, else %v. */
export function strval(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v instanceof GoStruct && v.stringer) return v.stringer();
  return formatValue(v, 'v');
}

function strslice(v: unknown): string[] {
  if (Array.isArray(v))
    return typedSlice(v.filter((e) => e !== undefined && e !== null).map(strval), '[]string');
  if (v === undefined || v === null) return typedSlice([], '[]string');
  return typedSlice([strval(v)], '[]string');
}

function list(items: unknown[]): unknown[] {
  return typedSlice([...items], '[]interface {}');
}

/** sprig's empty (an adaptation of text/template's isTrue). */
function empty(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (kindOf(v) === 'struct') return false;
  return !(isTrue(v) ?? false);
}

function mustList(v: unknown, what: string): unknown[] {
  if (Array.isArray(v)) return v;
  throw new FuncError(`Cannot ${what} on type ${goKindName(v)}`);
}

function goKindName(v: unknown): string {
  const k = kindOf(v);
  switch (k) {
    case 'invalid':
      return 'invalid';
    case 'int64':
      return 'int64';
    case 'float64':
      return 'float64';
    default:
      return k;
  }
}

function toInt64(v: unknown): bigint {
  switch (kindOf(v)) {
    case 'int':
      return BigInt(v as number);
    case 'int64':
      return v as bigint;
    case 'float64':
      return BigInt(Math.trunc(numberOf(v)));
    case 'bool':
      return v ? 1n : 0n;
    case 'string': {
      const s = (v as string).replace(/\.0*$/, '');
      try {
        if (/^[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$/.test(s)) {
          const neg = s.startsWith('-');
          const body = s.replace(/^[+-]/, '');
          const n =
            body.length > 1 && body.startsWith('0') && !/^0[xX]/.test(body)
              ? BigInt(`0o${body.slice(1)}`)
              : BigInt(body);
          return neg ? -n : n;
        }
      } catch {
        return 0n;
      }
      return 0n;
    }
    default:
      return 0n;
  }
}

function toFloat64(v: unknown): number {
  switch (kindOf(v)) {
    case 'int':
    case 'float64':
    case 'int64':
      return numberOf(v);
    case 'bool':
      return v ? 1 : 0;
    case 'string': {
      const n = Number(v as string);
      return (v as string).trim() === '' || Number.isNaN(n) ? 0 : n;
    }
    default:
      return 0;
  }
}

function int64Result(v: bigint): bigint {
  return BigInt.asIntN(64, v);
}

function bytesOf(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

function goTitle(s: string): string {
  let prev = ' ';
  let out = '';
  const isSeparator = (r: string): boolean => {
    if (r.codePointAt(0)! <= 0x7f) return !/[0-9a-zA-Z_]/.test(r);
    if (/[\p{L}\p{Nd}]/u.test(r)) return false;
    return /\s/u.test(r);
  };
  for (const r of s) {
    out += isSeparator(prev) ? r.toUpperCase() : r;
    prev = r;
  }
  return out;
}

function goSplit(s: string, sep: string, n = -1): string[] {
  if (n === 0) return [];
  if (sep === '') {
    const runes = [...s];
    if (n < 0 || n >= runes.length) return runes;
    return [...runes.slice(0, n - 1), runes.slice(n - 1).join('')];
  }
  const parts = s.split(sep);
  if (n < 0 || parts.length <= n) return parts;
  return [...parts.slice(0, n - 1), parts.slice(n - 1).join(sep)];
}

function goReplace(src: string, old: string, repl: string): string {
  if (old === '') {
    const runes = [...src];
    return repl + runes.map((r) => r + repl).join('');
  }
  return src.split(old).join(repl);
}

function goTrimCutset(s: string, cutset: string): string {
  const set = new Set([...cutset]);
  const runes = [...s];
  let a = 0;
  let b = runes.length;
  while (a < b && set.has(runes[a]!)) a++;
  while (b > a && set.has(runes[b - 1]!)) b--;
  return runes.slice(a, b).join('');
}

// --- path (Go's path package) ---------------------------------------------

function pathClean(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const s = (rooted ? '/' : '') + out.join('/');
  return s === '' ? '.' : s;
}

function pathBase(p: string): string {
  if (p === '') return '.';
  const t = p.replace(/\/+$/, '');
  if (t === '') return '/';
  return t.slice(t.lastIndexOf('/') + 1);
}

function pathDir(p: string): string {
  const i = p.lastIndexOf('/');
  return pathClean(p.slice(0, i + 1));
}

function pathExt(p: string): string {
  for (let i = p.length - 1; i >= 0 && p[i] !== '/'; i--) if (p[i] === '.') return p.slice(i);
  return '';
}

// --- base32/64 ------------------------------------------------------------

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32Encode(s: string): string {
  const bytes = bytesOf(s);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

function base32Decode(s: string): string {
  const t = s.replace(/=+$/, '');
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (let i = 0; i < t.length; i++) {
    const idx = B32.indexOf(t[i]!);
    if (idx < 0) return `illegal base32 data at input byte ${i}`;
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out).toString('utf8');
}

function base64Decode(s: string): string {
  const m = /[^A-Za-z0-9+/=]/.exec(s);
  if (m) return `illegal base64 data at input byte ${m.index}`;
  if (s.length % 4 !== 0) return `illegal base64 data at input byte ${s.length - (s.length % 4)}`;
  const pad = s.indexOf('=');
  if (pad >= 0 && pad < s.length - 2) return `illegal base64 data at input byte ${pad}`;
  return Buffer.from(s, 'base64').toString('utf8');
}

// --- JSON (encoding/json) -------------------------------------------------

function jsonString(s: string, html: boolean): string {
  let out = '"';
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (c === '\b') out += '\\b';
    else if (c === '\f') out += '\\f';
    else if (cp < 0x20 || (html && (c === '<' || c === '>' || c === '&')) || cp === 0x2028 || cp === 0x2029) {
      out += `\\u${cp.toString(16).padStart(4, '0')}`;
    } else out += c;
  }
  return `${out}"`;
}

function jsonFloat(f: number): string {
  if (!Number.isFinite(f)) throw new FuncError(`json: unsupported value: ${formatValue(f, 'v')}`);
  const a = Math.abs(f);
  if (a !== 0 && (a < 1e-6 || a >= 1e21)) {
    return f.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  }
  return String(f);
}

function toJson(v: unknown, html: boolean, indent: string, depth = 0): string {
  const nl = indent ? `\n${indent.repeat(depth + 1)}` : '';
  const end = indent ? `\n${indent.repeat(depth)}` : '';
  const colon = indent ? ': ' : ':';
  switch (kindOf(v)) {
    case 'invalid':
      return 'null';
    case 'string':
      return jsonString(v as string, html);
    case 'bool':
      return String(v);
    case 'int':
    case 'int64':
      return String(v);
    case 'float64':
      return jsonFloat(numberOf(v));
    case 'slice': {
      const arr = v as unknown[];
      if (arr.length === 0) return '[]';
      return `[${arr.map((e) => nl + toJson(e, html, indent, depth + 1)).join(',')}${end}]`;
    }
    case 'map': {
      const m = asGoMap(v)!;
      if (!m.stringKeys) throw new FuncError(`json: unsupported type: ${m.typeName}`);
      const entries = sortedEntries(m);
      if (entries.length === 0) return '{}';
      return `{${entries
        .map(
          ([k, val]) => `${nl}${jsonString(String(k), html)}${colon}${toJson(val, html, indent, depth + 1)}`,
        )
        .join(',')}${end}}`;
    }
    case 'struct': {
      if (!(v instanceof GoStruct)) return 'null';
      const fields = jsonFields(v);
      if (fields.length === 0) return '{}';
      return `{${fields
        .map(([k, val]) => `${nl}${jsonString(k, html)}${colon}${toJson(val, html, indent, depth + 1)}`)
        .join(',')}${end}}`;
    }
    default:
      throw new FuncError(`json: unsupported type: ${typeName(v)}`);
  }
}

function jsonFields(s: GoStruct): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const f of s.fields) {
    if (f.embedded && f.value instanceof GoStruct) {
      out.push(...jsonFields(f.value));
      continue;
    }
    const tag = f.json;
    if (tag?.omitEmpty && empty(f.value)) continue;
    out.push([tag?.name ?? f.name, f.value]);
  }
  return out;
}

function fromJson(s: string): unknown {
  const convert = (x: unknown): unknown => {
    if (x === null) return undefined;
    if (Array.isArray(x)) return list(x.map(convert));
    if (typeof x === 'object') {
      return new GoMap(
        'map[string]interface {}',
        new Map(Object.entries(x as Record<string, unknown>).map(([k, val]) => [k, convert(val)])),
      );
    }
    if (typeof x === 'number') return goFloat(x);
    return x;
  };
  return convert(JSON.parse(s));
}

// --- regexp ---------------------------------------------------------------

function compileRegex(re: string): RE2JS {
  try {
    return RE2JS.compile(re);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new FuncError(`error parsing regexp: ${msg}`);
  }
}

interface Match {
  start: number;
  end: number;
  groups: (string | null)[];
}

function allMatches(re: RE2JS, s: string, n: number): Match[] {
  const out: Match[] = [];
  const m = re.matcher(s);
  let from = 0;
  let prevEnd = -1;
  while ((n < 0 || out.length < n) && from <= s.length && m.find(from)) {
    const start = m.start();
    const end = m.end();
    if (end === start && start === prevEnd) {
      // Go skips an empty match right after the previous match.
      from = start + 1;
      continue;
    }
    const groups: (string | null)[] = [];
    for (let g = 0; g <= m.groupCount(); g++) groups.push(m.group(g));
    out.push({ start, end, groups });
    prevEnd = end;
    from = end > start ? end : end + 1;
  }
  return out;
}

/** regexp.Expand: $1, ${1}, $name, ${name}; $$ is a dollar. */
function expand(template: string, re: RE2JS, match: Match): string {
  const names = re.namedGroups();
  let out = '';
  for (let i = 0; i < template.length;) {
    const c = template[i]!;
    if (c !== '$') {
      out += c;
      i++;
      continue;
    }
    if (template[i + 1] === '$') {
      out += '$';
      i += 2;
      continue;
    }
    let name: string | null = null;
    let next = i + 1;
    if (template[i + 1] === '{') {
      const close = template.indexOf('}', i + 2);
      if (close > 0 && /^[\p{L}\p{Nd}_]+$/u.test(template.slice(i + 2, close))) {
        name = template.slice(i + 2, close);
        next = close + 1;
      }
    } else {
      const m = /^[\p{L}\p{Nd}_]+/u.exec(template.slice(i + 1));
      if (m) {
        name = m[0];
        next = i + 1 + name.length;
      }
    }
    if (name === null) {
      out += '$';
      i++;
      continue;
    }
    const idx = /^\d+$/.test(name) ? Number(name) : names[name];
    if (idx !== undefined && idx < match.groups.length) out += match.groups[idx] ?? '';
    i = next;
  }
  return out;
}

function regexReplace(re: RE2JS, s: string, repl: (m: Match) => string): string {
  let out = '';
  let last = 0;
  for (const m of allMatches(re, s, -1)) {
    out += s.slice(last, m.start) + repl(m);
    last = m.end;
  }
  return out + s.slice(last);
}

function regexSplit(re: RE2JS, s: string, n: number): string[] {
  if (n === 0) return [];
  if (re.pattern().length > 0 && s.length === 0) return [''];
  const matches = allMatches(re, s, n);
  const out: string[] = [];
  let beg = 0;
  for (const m of matches) {
    if (n > 0 && out.length === n - 1) break;
    const end = m.start;
    if (m.end === 0) continue;
    out.push(s.slice(beg, end));
    beg = m.end;
  }
  if (beg <= s.length) out.push(s.slice(beg));
  return out;
}

// --- decimal arithmetic (sprig's addf & co. go through shopspring/decimal) ---

/** A float64 as the exact decimal of its shortest representation: digits × 10^-scale. */
function toDecimal(v: unknown): { digits: bigint; scale: number } {
  const f = toFloat64(v);
  const [mant, exp] = f.toExponential().split('e') as [string, string];
  const neg = mant.startsWith('-');
  const [int, frac = ''] = mant.replace('-', '').split('.') as [string, string?];
  let digits = BigInt(int + frac);
  let scale = frac.length - Number(exp);
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits: neg ? -digits : digits, scale };
}

function decimalToFloat(d: { digits: bigint; scale: number }): number | GoFloat {
  return goFloat(Number(`${d.digits}e-${d.scale}`));
}

function decimalOp(op: 'add' | 'sub' | 'mul' | 'div', first: unknown, rest: unknown[]): number | GoFloat {
  let acc = toDecimal(first);
  for (const r of rest) {
    const b = toDecimal(r);
    const scale = Math.max(acc.scale, b.scale);
    const x = acc.digits * 10n ** BigInt(scale - acc.scale);
    const y = b.digits * 10n ** BigInt(scale - b.scale);
    switch (op) {
      case 'add':
        acc = { digits: x + y, scale };
        break;
      case 'sub':
        acc = { digits: x - y, scale };
        break;
      case 'mul':
        acc = { digits: acc.digits * b.digits, scale: acc.scale + b.scale };
        break;
      case 'div': {
        if (y === 0n) throw new FuncError('decimal division by 0');
        // decimal.Div rounds to DivisionPrecision (16) places.
        const q = (x * 10n ** 17n) / y;
        const rounded = q >= 0n ? (q + 5n) / 10n : (q - 5n) / 10n;
        acc = { digits: rounded, scale: 16 };
        break;
      }
    }
  }
  return decimalToFloat(acc);
}

function seq(params: number[]): string {
  const join = (xs: unknown[]): string => xs.map(String).join(' ');
  switch (params.length) {
    case 1: {
      const end = params[0]!;
      const inc = end < 1 ? -1 : 1;
      return join(untilStep(1, end + inc, inc));
    }
    case 2: {
      const [start, end] = params as [number, number];
      const step = end < start ? -1 : 1;
      return join(untilStep(start, end + step, step));
    }
    case 3: {
      const [start, step, end] = params as [number, number, number];
      let inc = 1;
      if (end < start) {
        inc = -1;
        if (step > 0) return '';
      }
      return join(untilStep(start, end + inc, step));
    }
    default:
      return '';
  }
}

function sprigRound(a: unknown, p: number, roundOn = 0.5): number | GoFloat {
  const pow = 10 ** p;
  const digit = pow * toFloat64(a);
  const frac = digit - Math.trunc(digit);
  return goFloat((frac >= roundOn ? Math.ceil(digit) : Math.floor(digit)) / pow);
}

function deepCopy(v: unknown): unknown {
  if (Array.isArray(v)) return typedSlice(v.map(deepCopy), typeName(v));
  const m = asGoMap(v);
  if (m)
    return new GoMap(
      m.typeName,
      new Map([...m.entries].map(([k, x]) => [k, deepCopy(x)])),
      m.elemZero,
      m.stringKeys,
    );
  return v;
}

/** mergo.Merge (without / with override), as sprig's merge and mergeOverwrite use it. */
function mergeInto(dst: GoMap, src: GoMap, override: boolean): void {
  for (const [k, sv] of src.entries) {
    const dv = dst.entries.get(k);
    const dm = asGoMap(dv);
    const sm = asGoMap(sv);
    if (dm && sm) {
      mergeInto(dm, sm, override);
    } else if (!dst.entries.has(k) || empty(dv) || (override && !empty(sv))) {
      dst.entries.set(k, sv);
    }
  }
}

// --- semver (Masterminds/semver v3, as sprig uses it) ------------------------

function mustVersion(v: string): SemverVersion {
  const parsed = newVersion(v);
  if (!parsed) throw new FuncError('Invalid Semantic Version');
  return parsed;
}

function uint64Value(digits: string): number | bigint {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : BigInt(digits);
}

/** sprig's semver: a *semver.Version, printed by its String() and read through its methods. */
function semverValue(v: SemverVersion): GoStruct {
  const text = `${v.major}.${v.minor}.${v.patch}${v.pre ? `-${v.pre}` : ''}${v.metadata ? `+${v.metadata}` : ''}`;
  const method = (fn: () => unknown) => ({ params: [] as ParamKind[], call: fn });
  return new GoStruct(
    '*semver.Version',
    [],
    {
      Major: method(() => uint64Value(v.major)),
      Minor: method(() => uint64Value(v.minor)),
      Patch: method(() => uint64Value(v.patch)),
      Prerelease: method(() => v.pre),
      Metadata: method(() => v.metadata),
      Original: method(() => v.original),
      String: method(() => text),
    },
    () => text,
  );
}

function semverCompare(constraint: string, version: string): boolean {
  let range;
  try {
    range = parseSemverRange(constraint);
  } catch (e) {
    throw new FuncError(e instanceof Error ? e.message : String(e));
  }
  return range.check(mustVersion(version));
}

// --- registry -------------------------------------------------------------

function f(params: ParamKind[], call: (args: unknown[]) => unknown, variadic?: ParamKind): GoFunc {
  return variadic === undefined ? { params, call } : { params, variadic, call };
}

const s = (v: unknown): string => v as string;
const n = (v: unknown): number => v as number;

function dictOf(v: unknown): GoMap {
  return asGoMap(v) ?? new GoMap('map[string]interface {}', new Map());
}

function newDict(entries: [string, unknown][]): GoMap {
  return new GoMap('map[string]interface {}', new Map(entries));
}

/** The form of a function without `must`: where the `must` form fails, it returns `fallback`. */
function orElse(fallback: unknown, call: (args: unknown[]) => unknown): (args: unknown[]) => unknown {
  return (args) => {
    try {
      return call(args);
    } catch {
      return fallback;
    }
  };
}

const mustName = (name: string): string => `must${name[0]!.toUpperCase()}${name.slice(1)}`;

/** A function whose `must` form (sprig's mustFirst for first, …) is the same: both fail alike here. */
function withMust(name: string, fn: GoFunc): [string, GoFunc][] {
  return [
    [name, fn],
    [mustName(name), fn],
  ];
}

/** A sprig JSON encoder and its `must` form: where the `must` form fails, the other returns "". */
function jsonEncoder(name: string, html: boolean, indent: string): [string, GoFunc][] {
  const call = ([v]: unknown[]): unknown => toJson(v, html, indent);
  return [
    [name, f(['any'], orElse('', call))],
    [mustName(name), f(['any'], call)],
  ];
}

function listOp(name: string, op: (l: unknown[]) => unknown): (args: unknown[]) => unknown {
  return ([l]) => op(mustList(l, name));
}

const firstOf = (l: unknown[]): unknown => l[0];
const lastOf = (l: unknown[]): unknown => l[l.length - 1];
const restOf = (l: unknown[]): unknown => (l.length === 0 ? undefined : list(l.slice(1)));
const initialOf = (l: unknown[]): unknown => (l.length === 0 ? undefined : list(l.slice(0, -1)));
const reverseOf = (l: unknown[]): unknown => list([...l].reverse());
const uniqOf = (l: unknown[]): unknown => {
  const out: unknown[] = [];
  for (const e of l) if (!out.some((o) => deepEqual(o, e))) out.push(e);
  return list(out);
};
const compactOf = (l: unknown[]): unknown => list(l.filter((e) => !empty(e)));

function sliceOf(l: unknown, indices: unknown[]): unknown {
  if (!Array.isArray(l)) throw new FuncError(`list should be type of slice or array but ${goKindName(l)}`);
  const arr = l;
  if (arr.length === 0) return undefined;
  const start = indices.length > 0 ? Number(toInt64(indices[0])) : 0;
  const end = indices.length < 2 ? arr.length : Number(toInt64(indices[1]));
  if (start < 0 || end > arr.length || start > end) {
    throw new FuncError(`runtime error: slice bounds out of range [${start}:${end}]`);
  }
  return list(arr.slice(start, end));
}

function chunkOf(size: number, l: unknown): unknown {
  const arr = mustList(l, 'chunk');
  const out: unknown[] = [];
  for (let i = 0; i < arr.length; i += size) out.push(list(arr.slice(i, i + size)));
  return list(out);
}

function hasOf(needle: unknown, haystack: unknown): boolean {
  if (haystack === undefined || haystack === null) return false;
  return mustList(haystack, 'find has').some((e) => deepEqual(e, needle));
}

function abbrev(width: number, str: string): string {
  if (width < 4) return str;
  if (bytesOf(str).length <= width) return str;
  return `${bytesOf(str)
    .subarray(0, width - 3)
    .toString('utf8')}...`;
}

function trunc(c: number, str: string): string {
  const b = bytesOf(str);
  if (c < 0 && b.length + c > 0) return b.subarray(b.length + c).toString('utf8');
  if (c >= 0 && b.length > c) return b.subarray(0, c).toString('utf8');
  return str;
}

function substr(start: number, end: number, str: string): string {
  const b = bytesOf(str);
  const slice = (a: number, z: number): string => {
    if (a < 0 || z > b.length || a > z)
      throw new FuncError(`runtime error: slice bounds out of range [${a}:${z}]`);
    return b.subarray(a, z).toString('utf8');
  };
  if (start < 0) return slice(0, end);
  if (end < 0 || end > b.length) return slice(start, b.length);
  return slice(start, end);
}

function adler32(str: string): number {
  let a = 1;
  let b = 0;
  for (const byte of bytesOf(str)) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

function until(count: number): unknown[] {
  return untilStep(0, count, count < 0 ? -1 : 1);
}

/** Refuses before allocating: `until 200000000` would build the list first and fail after. */
function checkListSize(count: number): void {
  if (count > TEMPLATE_LIMITS.listItems)
    throw new FuncError(`${count} items is more than the ${TEMPLATE_LIMITS.listItems} a template may make`);
}

function checkStringSize(chars: number): void {
  if (chars > TEMPLATE_LIMITS.valueChars)
    throw new FuncError(
      `${chars} characters is more than the ${TEMPLATE_LIMITS.valueChars} a template value may have`,
    );
}

function checkIndentSize(width: number, str: string): void {
  let lines = 1;
  for (let i = str.indexOf('\n'); i >= 0; i = str.indexOf('\n', i + 1)) lines++;
  checkStringSize(Math.max(0, width) * lines + str.length + 1);
}

function untilStep(start: number, stop: number, step: number): unknown[] {
  if (step !== 0 && (stop - start) / step > 0) checkListSize(Math.ceil((stop - start) / step));
  const out: number[] = [];
  if (step === 0) return typedSlice(out, '[]int');
  if (stop < start) {
    if (step >= 0) return typedSlice(out, '[]int');
    for (let i = start; i > stop; i += step) out.push(i);
    return typedSlice(out, '[]int');
  }
  if (step <= 0) return typedSlice(out, '[]int');
  for (let i = start; i < stop; i += step) out.push(i);
  return typedSlice(out, '[]int');
}

function maxMin(which: 'max' | 'min', a: unknown, rest: unknown[]): bigint {
  let acc = toInt64(a);
  for (const v of rest) {
    const x = toInt64(v);
    if (which === 'max' ? x > acc : x < acc) acc = x;
  }
  return acc;
}

function kindIsName(v: unknown): string {
  switch (kindOf(v)) {
    case 'invalid':
      return 'invalid';
    case 'slice':
      return 'slice';
    case 'map':
      return 'map';
    case 'struct':
      return 'struct';
    default:
      return kindOf(v);
  }
}

function dig(args: unknown[]): unknown {
  if (args.length < 3) throw new FuncError('dig needs at least three arguments');
  const dict = dictOf(args[args.length - 1]);
  const def = args[args.length - 2];
  const keys = args.slice(0, -2).map((k) => s(k));
  let cur: GoMap | undefined = dict;
  for (let i = 0; i < keys.length; i++) {
    const v: unknown = cur?.entries.get(keys[i]!);
    if (v === undefined) return def;
    if (i === keys.length - 1) return v;
    cur = asGoMap(v) ?? undefined;
    if (!cur)
      throw new FuncError(
        `interface conversion: interface {} is ${typeName(v)}, not map[string]interface {}`,
      );
  }
  return def;
}

const regexFns = {
  match: ([re, str]: unknown[]) => {
    // sprig's regexMatch ignores a bad pattern (false); mustRegexMatch reports it.
    try {
      return compileRegex(s(re)).test(s(str));
    } catch {
      return false;
    }
  },
  mustMatch: ([re, str]: unknown[]) => compileRegex(s(re)).test(s(str)),
  findAll: ([re, str, count]: unknown[]) =>
    typedSlice(
      allMatches(compileRegex(s(re)), s(str), n(count)).map((m) => m.groups[0] ?? ''),
      '[]string',
    ),
  find: ([re, str]: unknown[]) => allMatches(compileRegex(s(re)), s(str), 1)[0]?.groups[0] ?? '',
  replaceAll: ([re, str, repl]: unknown[]) => {
    const r = compileRegex(s(re));
    return regexReplace(r, s(str), (m) => expand(s(repl), r, m));
  },
  replaceAllLiteral: ([re, str, repl]: unknown[]) => regexReplace(compileRegex(s(re)), s(str), () => s(repl)),
  split: ([re, str, count]: unknown[]) =>
    typedSlice(regexSplit(compileRegex(s(re)), s(str), n(count)), '[]string'),
};

/** Non-"must" regexp functions panic on a bad pattern in sprig; both end as "error calling …" here. */
const SPRIG: [string, GoFunc][] = [
  ['hello', f([], () => 'Hello!')],
  // strings
  ['abbrev', f(['int', 'string'], ([w, str]) => abbrev(n(w), s(str)))],
  ['trunc', f(['int', 'string'], ([c, str]) => trunc(n(c), s(str)))],
  ['trim', f(['string'], ([str]) => s(str).replace(/^[\s\u0085\u00a0]+|[\s\u0085\u00a0]+$/gu, ''))],
  ['upper', f(['string'], ([str]) => s(str).toUpperCase())],
  ['lower', f(['string'], ([str]) => s(str).toLowerCase())],
  ['title', f(['string'], ([str]) => goTitle(s(str)))],
  [
    'untitle',
    f(['string'], ([str]) => {
      const r = [...s(str)];
      return r.length === 0 ? '' : r[0]!.toLowerCase() + r.slice(1).join('');
    }),
  ],
  ['substr', f(['int', 'int', 'string'], ([a, b, str]) => substr(n(a), n(b), s(str)))],
  [
    'repeat',
    f(['int', 'string'], ([c, str]) => {
      if (n(c) < 0) throw new FuncError('strings: negative Repeat count');
      checkStringSize(n(c) * s(str).length);
      return s(str).repeat(n(c));
    }),
  ],
  ['trimall', f(['string', 'string'], ([a, b]) => goTrimCutset(s(b), s(a)))],
  ['trimAll', f(['string', 'string'], ([a, b]) => goTrimCutset(s(b), s(a)))],
  [
    'trimSuffix',
    f(['string', 'string'], ([a, b]) =>
      s(b).endsWith(s(a)) ? s(b).slice(0, s(b).length - s(a).length) : s(b),
    ),
  ],
  [
    'trimPrefix',
    f(['string', 'string'], ([a, b]) => (s(b).startsWith(s(a)) ? s(b).slice(s(a).length) : s(b))),
  ],
  ['nospace', f(['string'], ([str]) => s(str).replace(/[\s\u0085\u00a0]/gu, ''))],
  [
    'initials',
    f(['string'], ([str]) =>
      s(str)
        .split(/\s+/u)
        .filter((w) => w !== '')
        .map((w) => [...w][0])
        .join(''),
    ),
  ],
  ['contains', f(['string', 'string'], ([sub, str]) => s(str).includes(s(sub)))],
  ['hasPrefix', f(['string', 'string'], ([sub, str]) => s(str).startsWith(s(sub)))],
  ['hasSuffix', f(['string', 'string'], ([sub, str]) => s(str).endsWith(s(sub)))],
  [
    'quote',
    f(
      [],
      (args) =>
        args
          .filter((a) => a !== undefined && a !== null)
          .map((a) => goQuote(strval(a)))
          .join(' '),
      'any',
    ),
  ],
  [
    'squote',
    f(
      [],
      (args) =>
        args
          .filter((a) => a !== undefined && a !== null)
          .map((a) => `'${formatValue(a, 'v')}'`)
          .join(' '),
      'any',
    ),
  ],
  [
    'cat',
    f(
      [],
      (args) =>
        args
          .filter((a) => a !== undefined && a !== null)
          .map((a) => formatValue(a, 'v'))
          .join(' '),
      'any',
    ),
  ],
  [
    'indent',
    f(['int', 'string'], ([c, str]) => {
      checkIndentSize(n(c), s(str));
      return (
        ' '.repeat(n(c)) +
        s(str)
          .split('\n')
          .join(`\n${' '.repeat(n(c))}`)
      );
    }),
  ],
  [
    'nindent',
    f(['int', 'string'], ([c, str]) => {
      checkIndentSize(n(c), s(str));
      return `\n${' '.repeat(n(c))}${s(str)
        .split('\n')
        .join(`\n${' '.repeat(n(c))}`)}`;
    }),
  ],
  ['replace', f(['string', 'string', 'string'], ([o, nw, src]) => goReplace(s(src), s(o), s(nw)))],
  ['plural', f(['string', 'string', 'int'], ([one, many, c]) => (n(c) === 1 ? one : many))],
  ['sha1sum', f(['string'], ([str]) => createHash('sha1').update(s(str), 'utf8').digest('hex'))],
  ['sha256sum', f(['string'], ([str]) => createHash('sha256').update(s(str), 'utf8').digest('hex'))],
  ['adler32sum', f(['string'], ([str]) => String(adler32(s(str))))],
  ['toString', f(['any'], ([v]) => strval(v))],
  // conversions
  [
    'atoi',
    f(['string'], ([str]) => {
      const t = s(str);
      return /^[+-]?\d+$/.test(t) && Math.abs(Number(t)) <= Number.MAX_SAFE_INTEGER ? Number(t) : 0;
    }),
  ],
  ['int64', f(['any'], ([v]) => toInt64(v))],
  ['int', f(['any'], ([v]) => Number(BigInt.asIntN(64, toInt64(v))))],
  ['float64', f(['any'], ([v]) => goFloat(toFloat64(v)))],
  ['toStrings', f(['any'], ([v]) => strslice(v))],
  [
    'split',
    f(['string', 'string'], ([sep, orig]) => newDict(goSplit(s(orig), s(sep)).map((p, i) => [`_${i}`, p]))),
  ],
  ['splitList', f(['string', 'string'], ([sep, orig]) => typedSlice(goSplit(s(orig), s(sep)), '[]string'))],
  [
    'splitn',
    f(['string', 'int', 'string'], ([sep, c, orig]) =>
      newDict(goSplit(s(orig), s(sep), n(c)).map((p, i) => [`_${i}`, p])),
    ),
  ],
  ['until', f(['int'], ([c]) => until(n(c)))],
  ['untilStep', f(['int', 'int', 'int'], ([a, b, c]) => untilStep(n(a), n(b), n(c)))],
  // arithmetic (int64 results, as sprig)
  ['add1', f(['any'], ([v]) => int64Result(toInt64(v) + 1n))],
  ['add', f([], (args) => int64Result(args.reduce<bigint>((acc, v) => acc + toInt64(v), 0n)), 'any')],
  ['sub', f(['any', 'any'], ([a, b]) => int64Result(toInt64(a) - toInt64(b)))],
  [
    'div',
    f(['any', 'any'], ([a, b]) => {
      if (toInt64(b) === 0n) throw new FuncError('runtime error: integer divide by zero');
      return toInt64(a) / toInt64(b);
    }),
  ],
  [
    'mod',
    f(['any', 'any'], ([a, b]) => {
      if (toInt64(b) === 0n) throw new FuncError('runtime error: integer divide by zero');
      return toInt64(a) % toInt64(b);
    }),
  ],
  [
    'mul',
    f(
      ['any'],
      ([a, ...rest]) => int64Result(rest.reduce<bigint>((acc, v) => acc * toInt64(v), toInt64(a))),
      'any',
    ),
  ],
  ['biggest', f(['any'], ([a, ...rest]) => maxMin('max', a, rest), 'any')],
  ['max', f(['any'], ([a, ...rest]) => maxMin('max', a, rest), 'any')],
  ['min', f(['any'], ([a, ...rest]) => maxMin('min', a, rest), 'any')],
  ['ceil', f(['any'], ([v]) => goFloat(Math.ceil(toFloat64(v))))],
  [
    'round',
    f(['any', 'int'], ([a, p, ...r]) => sprigRound(a, n(p), r.length > 0 ? numberOf(r[0]) : 0.5), 'float64'),
  ],
  ['add1f', f(['any'], ([v]) => decimalOp('add', v, [1]))],
  ['addf', f([], (args) => decimalOp('add', 0, args), 'any')],
  ['subf', f(['any'], ([a, ...rest]) => decimalOp('sub', a, rest), 'any')],
  ['mulf', f(['any'], ([a, ...rest]) => decimalOp('mul', a, rest), 'any')],
  ['divf', f(['any'], ([a, ...rest]) => decimalOp('div', a, rest), 'any')],
  ['maxf', f(['any'], ([a, ...rest]) => goFloat(Math.max(toFloat64(a), ...rest.map(toFloat64))), 'any')],
  ['minf', f(['any'], ([a, ...rest]) => goFloat(Math.min(toFloat64(a), ...rest.map(toFloat64))), 'any')],
  ['seq', f([], (args) => seq(args as number[]), 'int')],
  ['floor', f(['any'], ([v]) => goFloat(Math.floor(toFloat64(v))))],
  // string slices
  ['join', f(['string', 'any'], ([sep, v]) => strslice(v).join(s(sep)))],
  [
    'sortAlpha',
    f(['any'], ([v]) => {
      if (!Array.isArray(v)) return typedSlice([strval(v)], '[]string');
      return typedSlice(
        strslice(v).sort((a, b) => Buffer.compare(bytesOf(a), bytesOf(b))),
        '[]string',
      );
    }),
  ],
  // defaults
  ['default', f(['any'], ([d, ...given]) => (given.length === 0 || empty(given[0]) ? d : given[0]), 'any')],
  ['empty', f(['any'], ([v]) => empty(v))],
  ['coalesce', f([], (args) => args.find((a) => !empty(a)), 'any')],
  ['all', f([], (args) => args.every((a) => !empty(a)), 'any')],
  ['any', f([], (args) => args.some((a) => !empty(a)), 'any')],
  ...withMust('compact', f(['any'], listOp('compact', compactOf))),
  ...jsonEncoder('toJson', true, ''),
  ...jsonEncoder('toPrettyJson', true, '  '),
  ...jsonEncoder('toRawJson', false, ''),
  [
    'fromJson',
    f(
      ['string'],
      orElse(undefined, ([str]) => fromJson(s(str))),
    ),
  ],
  [
    'mustFromJson',
    f(['string'], ([str]) => {
      try {
        return fromJson(s(str));
      } catch (e) {
        throw new FuncError(e instanceof Error ? e.message : String(e));
      }
    }),
  ],
  ['ternary', f(['any', 'any', 'bool'], ([vt, vf, c]) => (c ? vt : vf))],
  ...withMust(
    'deepCopy',
    f(['any'], ([v]) => deepCopy(v)),
  ),
  // reflection
  ['typeOf', f(['any'], ([v]) => formatValue(v, 'T'))],
  ['typeIs', f(['string', 'any'], ([t, v]) => s(t) === formatValue(v, 'T'))],
  [
    'typeIsLike',
    f(['string', 'any'], ([t, v]) => s(t) === formatValue(v, 'T') || s(t) === `*${formatValue(v, 'T')}`),
  ],
  ['kindOf', f(['any'], ([v]) => kindIsName(v))],
  ['kindIs', f(['string', 'any'], ([t, v]) => s(t) === kindIsName(v))],
  ['deepEqual', f(['any', 'any'], ([a, b]) => deepEqual(a, b))],
  // paths
  ['base', f(['string'], ([p]) => pathBase(s(p)))],
  ['dir', f(['string'], ([p]) => pathDir(s(p)))],
  ['clean', f(['string'], ([p]) => pathClean(s(p)))],
  ['ext', f(['string'], ([p]) => pathExt(s(p)))],
  ['isAbs', f(['string'], ([p]) => s(p).startsWith('/'))],
  ['osBase', f(['string'], ([p]) => pathBase(s(p)))],
  ['osDir', f(['string'], ([p]) => pathDir(s(p)))],
  ['osClean', f(['string'], ([p]) => pathClean(s(p)))],
  ['osExt', f(['string'], ([p]) => pathExt(s(p)))],
  ['osIsAbs', f(['string'], ([p]) => s(p).startsWith('/'))],
  // encoding
  ['b64enc', f(['string'], ([str]) => bytesOf(s(str)).toString('base64'))],
  ['b64dec', f(['string'], ([str]) => base64Decode(s(str)))],
  ['b32enc', f(['string'], ([str]) => base32Encode(s(str)))],
  ['b32dec', f(['string'], ([str]) => base32Decode(s(str)))],
  // lists
  ['list', f([], (args) => list(args), 'any')],
  ['tuple', f([], (args) => list(args), 'any')],
  ...withMust('first', f(['any'], listOp('find first', firstOf))),
  ...withMust('last', f(['any'], listOp('find last', lastOf))),
  ...withMust('rest', f(['any'], listOp('find rest', restOf))),
  ...withMust('initial', f(['any'], listOp('find initial', initialOf))),
  ...withMust('reverse', f(['any'], listOp('find reverse', reverseOf))),
  ...withMust('uniq', f(['any'], listOp('find uniq', uniqOf))),
  [
    'without',
    f(
      ['any'],
      ([l, ...omit]) => list(mustList(l, 'find without').filter((e) => !omit.some((o) => deepEqual(o, e)))),
      'any',
    ),
  ],
  [
    'mustWithout',
    f(
      ['any'],
      ([l, ...omit]) => list(mustList(l, 'find without').filter((e) => !omit.some((o) => deepEqual(o, e)))),
      'any',
    ),
  ],
  ...withMust(
    'has',
    f(['any', 'any'], ([needle, hay]) => hasOf(needle, hay)),
  ),
  ['append', f(['any', 'any'], ([l, v]) => list([...mustList(l, 'push'), v]))],
  ['push', f(['any', 'any'], ([l, v]) => list([...mustList(l, 'push'), v]))],
  ['mustAppend', f(['any', 'any'], ([l, v]) => list([...mustList(l, 'push'), v]))],
  ['mustPush', f(['any', 'any'], ([l, v]) => list([...mustList(l, 'push'), v]))],
  ...withMust(
    'prepend',
    f(['any', 'any'], ([l, v]) => list([v, ...mustList(l, 'prepend')])),
  ),
  [
    'concat',
    f(
      [],
      (lists) =>
        list(
          lists.flatMap((l) => {
            if (!Array.isArray(l)) throw new FuncError(`Cannot concat type ${goKindName(l)} as list`);
            return l;
          }),
        ),
      'any',
    ),
  ],
  ...withMust(
    'slice',
    f(['any'], ([l, ...idx]) => sliceOf(l, idx), 'any'),
  ),
  ...withMust(
    'chunk',
    f(['int', 'any'], ([size, l]) => chunkOf(n(size), l)),
  ),
  // dicts
  [
    'dict',
    f(
      [],
      (args) => {
        const entries: [string, unknown][] = [];
        for (let i = 0; i < args.length; i += 2)
          entries.push([strval(args[i]), i + 1 < args.length ? args[i + 1] : '']);
        return newDict(entries);
      },
      'any',
    ),
  ],
  [
    'get',
    f(['dict', 'string'], ([d, k]) => (dictOf(d).entries.has(s(k)) ? dictOf(d).entries.get(s(k)) : '')),
  ],
  [
    'set',
    f(['dict', 'string', 'any'], ([d, k, v]) => {
      dictOf(d).entries.set(s(k), v);
      return d;
    }),
  ],
  [
    'unset',
    f(['dict', 'string'], ([d, k]) => {
      dictOf(d).entries.delete(s(k));
      return d;
    }),
  ],
  ['hasKey', f(['dict', 'string'], ([d, k]) => dictOf(d).entries.has(s(k)))],
  [
    'pluck',
    f(
      ['string'],
      ([k, ...ds]) =>
        list(
          ds
            .map(dictOf)
            .filter((d) => d.entries.has(s(k)))
            .map((d) => d.entries.get(s(k))),
        ),
      'dict',
    ),
  ],
  [
    'keys',
    f(
      [],
      (ds) =>
        typedSlice(
          ds.flatMap((d) => sortedEntries(dictOf(d)).map(([k]) => String(k))),
          '[]string',
        ),
      'dict',
    ),
  ],
  [
    'pick',
    f(
      ['dict'],
      ([d, ...ks]) =>
        newDict(sortedEntries(dictOf(d)).filter(([k]) => ks.includes(k)) as [string, unknown][]),
      'string',
    ),
  ],
  [
    'omit',
    f(
      ['dict'],
      ([d, ...ks]) =>
        newDict(sortedEntries(dictOf(d)).filter(([k]) => !ks.includes(k)) as [string, unknown][]),
      'string',
    ),
  ],
  ['values', f(['dict'], ([d]) => list(sortedEntries(dictOf(d)).map(([, v]) => v)))],
  ...(['merge', 'mustMerge', 'mergeOverwrite', 'mustMergeOverwrite'] as const).map(
    (name): [string, GoFunc] => [
      name,
      f(
        ['dict'],
        ([dst, ...srcs]) => {
          for (const src of srcs) mergeInto(dictOf(dst), dictOf(src), name.includes('Overwrite'));
          return dst;
        },
        'dict',
      ),
    ],
  ),
  ['dig', f([], (args) => dig(args), 'any')],
  // semver
  ['semver', f(['string'], ([v]) => semverValue(mustVersion(s(v))))],
  ['semverCompare', f(['string', 'string'], ([c, v]) => semverCompare(s(c), s(v)))],
  // flow control
  [
    'fail',
    f(['string'], ([msg]) => {
      throw new FuncError(s(msg));
    }),
  ],
  // regular expressions (RE2 syntax, as Go's regexp)
  ['regexMatch', f(['string', 'string'], regexFns.match)],
  ['mustRegexMatch', f(['string', 'string'], regexFns.mustMatch)],
  ...withMust('regexFindAll', f(['string', 'string', 'int'], regexFns.findAll)),
  ...withMust('regexFind', f(['string', 'string'], regexFns.find)),
  ...withMust('regexReplaceAll', f(['string', 'string', 'string'], regexFns.replaceAll)),
  ...withMust('regexReplaceAllLiteral', f(['string', 'string', 'string'], regexFns.replaceAllLiteral)),
  ...withMust('regexSplit', f(['string', 'string', 'int'], regexFns.split)),
  ['regexQuoteMeta', f(['string'], ([str]) => s(str).replace(/[\\.+*?()|[\]{}^$]/g, '\\$&'))],
];

export const SPRIG_FUNCS: ReadonlyMap<string, GoFunc> = new Map(SPRIG);
