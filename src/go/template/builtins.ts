/** Go's text/template built-in functions (text/template/funcs.go). */
import { FuncError } from './errors.js';
import type { GoFunc } from './eval.js';
import { formatValue, sprint, sprintf, sprintln } from './fmt.js';
import { asGoMap, deepEqual, GoStruct, isTrue, kindOf, length, numberOf, typeName } from './values.js';

type BasicKind = 'bool' | 'int' | 'float' | 'string';

function basicKind(v: unknown): BasicKind | null {
  switch (kindOf(v)) {
    case 'bool':
      return 'bool';
    case 'int':
    case 'int64':
      return 'int';
    case 'float64':
      return 'float';
    case 'string':
      return 'string';
    default:
      return null;
  }
}

const ERR_BAD_COMPARISON_TYPE = 'invalid type for comparison';
const ERR_BAD_COMPARISON = 'incompatible types for comparison';
const ERR_NO_COMPARISON = 'missing argument for comparison';

function num(v: unknown): number | bigint {
  return typeof v === 'bigint' ? v : numberOf(v);
}

function lessNum(a: unknown, b: unknown): boolean {
  const x = num(a);
  const y = num(b);
  if (typeof x === 'bigint' && typeof y === 'bigint') return x < y;
  return Number(x) < Number(y);
}

function eqNum(a: unknown, b: unknown): boolean {
  const x = num(a);
  const y = num(b);
  if (typeof x === 'bigint' && typeof y === 'bigint') return x === y;
  return Number(x) === Number(y);
}

function isNilValue(v: unknown): boolean {
  return v === undefined || v === null;
}

export function eq(arg1: unknown, ...arg2: unknown[]): boolean {
  if (arg2.length === 0) throw new FuncError(ERR_NO_COMPARISON);
  const k1 = basicKind(arg1);
  for (const arg of arg2) {
    const k2 = basicKind(arg);
    let truth = false;
    if (k1 !== k2) {
      if (!isNilValue(arg1) && !isNilValue(arg)) throw new FuncError(ERR_BAD_COMPARISON);
    } else if (k1 === 'bool' || k1 === 'string') {
      truth = arg1 === arg;
    } else if (k1 === 'int' || k1 === 'float') {
      truth = eqNum(arg1, arg);
    } else {
      if (isNilValue(arg1) || isNilValue(arg)) {
        truth = isNilValue(arg1) === isNilValue(arg);
      } else {
        const kind = kindOf(arg);
        if (kindOf(arg1) !== kind || typeName(arg1) !== typeName(arg)) {
          throw new FuncError(
            `non-comparable types ${formatValue(arg1, 'v')}: ${typeName(arg1)}, ${typeName(arg)}: ${formatValue(arg, 'v')}`,
          );
        }
        if (kind === 'slice' || kind === 'map' || kind === 'func') {
          throw new FuncError(`non-comparable type ${formatValue(arg, 'v')}: ${typeName(arg)}`);
        }
        truth = arg1 instanceof GoStruct ? deepEqual(arg1, arg) : arg1 === arg;
      }
    }
    if (truth) return true;
  }
  return false;
}

export function lt(arg1: unknown, arg2: unknown): boolean {
  const k1 = basicKind(arg1);
  if (k1 === null) throw new FuncError(ERR_BAD_COMPARISON_TYPE);
  const k2 = basicKind(arg2);
  if (k2 === null) throw new FuncError(ERR_BAD_COMPARISON_TYPE);
  if (k1 !== k2) throw new FuncError(ERR_BAD_COMPARISON);
  switch (k1) {
    case 'bool':
      throw new FuncError(ERR_BAD_COMPARISON_TYPE);
    case 'string':
      return Buffer.compare(Buffer.from(arg1 as string), Buffer.from(arg2 as string)) < 0;
    default:
      return lessNum(arg1, arg2);
  }
}

function le(a: unknown, b: unknown): boolean {
  return lt(a, b) || eq(a, b);
}

function indexArg(index: unknown, cap: number): number {
  if (index === undefined || index === null) throw new FuncError('cannot index slice/array with nil');
  const k = kindOf(index);
  if (k !== 'int' && k !== 'int64')
    throw new FuncError(`cannot index slice/array with type ${typeName(index)}`);
  const x = Number(index);
  if (x < 0 || x >= cap) throw new FuncError(`index out of range: ${x}`);
  return x;
}

function index(item: unknown, ...indexes: unknown[]): unknown {
  if (item === undefined || item === null) throw new FuncError('index of untyped nil');
  let cur: unknown = item;
  for (const idx of indexes) {
    if (cur === undefined || cur === null) throw new FuncError('index of nil pointer');
    if (typeof cur === 'string') {
      const bytes = Buffer.from(cur, 'utf8');
      cur = bytes[indexArg(idx, bytes.length)]!;
      continue;
    }
    if (Array.isArray(cur)) {
      cur = cur[indexArg(idx, cur.length)];
      continue;
    }
    const m = asGoMap(cur);
    if (m) {
      if (m.stringKeys && typeof idx !== 'string') {
        throw new FuncError(`value has type ${typeName(idx)}; should be string`);
      }
      let found = false;
      let value: unknown;
      if (m.entries.has(idx)) {
        found = true;
        value = m.entries.get(idx);
      } else if (!m.stringKeys) {
        for (const [k, v] of m.entries) {
          if (deepEqual(k, idx)) {
            found = true;
            value = v;
            break;
          }
        }
      }
      cur = found ? value : m.elemZero;
      continue;
    }
    throw new FuncError(`can't index item of type ${typeName(cur)}`);
  }
  return cur;
}

function printable(args: unknown[]): unknown[] {
  return args.map((a) => (a === undefined || a === null ? '<no value>' : a));
}

function evalArgs(args: unknown[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(printable(args));
}

export function htmlEscape(s: string): string {
  return s.replace(/["'&<>\0]/g, (c) => {
    switch (c) {
      case '"':
        return '&#34;';
      case "'":
        return '&#39;';
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      default:
        return '\uFFFD';
    }
  });
}

export function jsEscape(s: string): string {
  let out = '';
  for (const c of s) {
    const cp = c.codePointAt(0)!;
    switch (c) {
      case '\\':
        out += '\\\\';
        continue;
      case "'":
        out += "\\'";
        continue;
      case '"':
        out += '\\"';
        continue;
      case '<':
        out += '\\u003C';
        continue;
      case '>':
        out += '\\u003E';
        continue;
      case '&':
        out += '\\u0026';
        continue;
      case '=':
        out += '\\u003D';
        continue;
      default:
        break;
    }
    if (cp < 0x20) out += `\\u00${cp.toString(16).toUpperCase().padStart(2, '0')}`;
    else if (cp >= 0x80 && !/^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(c)) {
      out += `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`;
    } else out += c;
  }
  return out;
}

export function queryEscape(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export const BUILTINS: ReadonlyMap<string, GoFunc> = new Map<string, GoFunc>([
  // and/or are evaluated lazily by the executor; these entries give their signatures.
  ['and', { params: ['value'], variadic: 'value', call: () => undefined }],
  ['or', { params: ['value'], variadic: 'value', call: () => undefined }],
  ['not', { params: ['value'], call: ([a]) => !(isTrue(a) ?? false) }],
  [
    'len',
    {
      params: ['value'],
      call: ([a]) => {
        if (a === undefined || a === null) throw new FuncError('len of untyped nil');
        const n = length(a);
        if (n === null) throw new FuncError(`len of type ${typeName(a)}`);
        return n;
      },
    },
  ],
  ['index', { params: ['value'], variadic: 'value', call: ([item, ...rest]) => index(item, ...rest) }],
  [
    'call',
    {
      params: ['value'],
      variadic: 'value',
      call: () => {
        throw new FuncError('pawl templates have no function values to call');
      },
    },
  ],
  ['print', { params: [], variadic: 'any', call: (args) => sprint(args) }],
  ['printf', { params: ['string'], variadic: 'any', call: ([f, ...args]) => sprintf(f as string, args) }],
  ['println', { params: [], variadic: 'any', call: (args) => sprintln(args) }],
  ['html', { params: [], variadic: 'any', call: (args) => htmlEscape(evalArgs(args)) }],
  ['js', { params: [], variadic: 'any', call: (args) => jsEscape(evalArgs(args)) }],
  ['urlquery', { params: [], variadic: 'any', call: (args) => queryEscape(evalArgs(args)) }],
  ['eq', { params: ['value'], variadic: 'value', call: ([a, ...b]) => eq(a, ...b) }],
  ['ne', { params: ['value', 'value'], call: ([a, b]) => !eq(a, b) }],
  ['lt', { params: ['value', 'value'], call: ([a, b]) => lt(a, b) }],
  ['le', { params: ['value', 'value'], call: ([a, b]) => le(a, b) }],
  ['gt', { params: ['value', 'value'], call: ([a, b]) => !le(a, b) }],
  ['ge', { params: ['value', 'value'], call: ([a, b]) => !lt(a, b) }],
]);
