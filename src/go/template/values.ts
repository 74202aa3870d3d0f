/**
 * How Go values are represented for the executor.
 *
 * - `undefined`: Go's invalid value / untyped nil (prints `<no value>` in an action, `<nil>` in fmt).
 * - string, boolean: Go string and bool.
 * - number: Go `int` when an integer, `float64` otherwise; bigint: Go `int64` (sprig's arithmetic).
 * - arrays: Go slices (element type name optional, see {@link typedSlice}).
 * - {@link GoMap}: a Go map; plain objects and JS Maps are taken as `map[string]interface {}`.
 * - {@link GoStruct}: a Go struct with ordered fields, embedded fields, methods and an optional String().
 */

export type ParamKind =
  'string' | 'int' | 'int64' | 'float64' | 'bool' | 'any' | 'value' | 'dict' | 'strings';

export interface GoMethod {
  params: readonly ParamKind[];
  variadic?: ParamKind;
  call: (args: unknown[]) => unknown;
}

export interface GoField {
  name: string;
  value: unknown;
  /** An embedded (anonymous) field: its fields and methods are promoted. */
  embedded?: boolean;
  /** The field's `json:"…"` tag, for sprig's toJson. */
  json?: { name: string; omitEmpty?: boolean };
}

export class GoStruct {
  constructor(
    readonly typeName: string,
    readonly fields: readonly GoField[],
    readonly methods: Readonly<Record<string, GoMethod>> = {},
    /** The type's String() method, if it has one with a value receiver. */
    readonly stringer?: () => string,
  ) {}
}

export class GoMap {
  constructor(
    readonly typeName: string,
    readonly entries: Map<unknown, unknown>,
    /** The zero value of the element type, returned by `index` for a missing key. */
    readonly elemZero: unknown = undefined,
    /** Whether keys are strings (so `.Key` field syntax works). */
    readonly stringKeys = true,
  ) {}
}

/**
 * A float64 whose value is integral (2.0): JS numbers cannot tell it from the int 2,
 * and Go prints and compares the two differently (`1e+06` vs `1000000`).
 */
export class GoFloat {
  constructor(readonly value: number) {}
}

/** A float64 result: a plain number unless integral, then a GoFloat. */
export function goFloat(x: number): number | GoFloat {
  return Number.isInteger(x) ? new GoFloat(x) : x;
}

/** The numeric value of an int, int64 or float64. */
export function numberOf(v: unknown): number {
  if (v instanceof GoFloat) return v.value;
  if (typeof v === 'bigint') return Number(v);
  return v as number;
}

const sliceTypes = new WeakMap<readonly unknown[], string>();

/** Give a slice a Go type name for error messages and %T, e.g. `[]update.Change`. */
export function typedSlice<T>(items: T[], typeName: string): T[] {
  sliceTypes.set(items, typeName);
  return items;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Normalises JS maps and plain objects to GoMap; leaves everything else. */
export function asGoMap(v: unknown): GoMap | null {
  if (v instanceof GoMap) return v;
  if (v instanceof Map) return new GoMap('map[string]interface {}', v as Map<unknown, unknown>);
  if (isPlainObject(v)) return new GoMap('map[string]interface {}', new Map(Object.entries(v)));
  return null;
}

export type Kind =
  'invalid' | 'string' | 'bool' | 'int' | 'int64' | 'float64' | 'slice' | 'map' | 'struct' | 'func';

export function kindOf(v: unknown): Kind {
  if (v === undefined || v === null) return 'invalid';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(v) ? 'int' : 'float64';
    case 'bigint':
      return 'int64';
    case 'function':
      return 'func';
    default:
      break;
  }
  if (Array.isArray(v)) return 'slice';
  if (v instanceof GoFloat) return 'float64';
  if (v instanceof GoStruct) return 'struct';
  if (asGoMap(v)) return 'map';
  return 'struct';
}

export function typeName(v: unknown): string {
  if (v === undefined || v === null) return '<nil>';
  if (v instanceof GoStruct) return v.typeName;
  if (v instanceof GoMap) return v.typeName;
  if (Array.isArray(v)) return sliceTypes.get(v) ?? '[]interface {}';
  const k = kindOf(v);
  if (k === 'map') return 'map[string]interface {}';
  if (k === 'func') return 'func()';
  return k;
}

export function paramTypeName(p: ParamKind): string {
  switch (p) {
    case 'any':
      return 'interface {}';
    case 'value':
      return 'reflect.Value';
    case 'dict':
      return 'map[string]interface {}';
    case 'strings':
      return '[]string';
    default:
      return p;
  }
}

/** Looks a field up by name, following embedded structs as Go's FieldByName does. */
export function structField(s: GoStruct, name: string): { found: boolean; value?: unknown } {
  for (const f of s.fields) if (f.name === name) return { found: true, value: f.value };
  for (const f of s.fields) {
    if (f.embedded && f.value instanceof GoStruct) {
      const r = structField(f.value, name);
      if (r.found) return r;
    }
  }
  return { found: false };
}

export function structMethod(s: GoStruct, name: string): GoMethod | undefined {
  const m = s.methods[name];
  if (m) return m;
  for (const f of s.fields) {
    if (f.embedded && f.value instanceof GoStruct) {
      const r = structMethod(f.value, name);
      if (r) return r;
    }
  }
  return undefined;
}

export function length(v: unknown): number | null {
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (Array.isArray(v)) return v.length;
  const m = asGoMap(v);
  if (m) return m.entries.size;
  return null;
}

/** text/template's isTrue: the truth of a value, or null when it has none (a func). */
export function isTrue(v: unknown): boolean | null {
  switch (kindOf(v)) {
    case 'invalid':
      return false;
    case 'string':
    case 'slice':
    case 'map':
      return (length(v) ?? 0) > 0;
    case 'bool':
      return v as boolean;
    case 'int':
    case 'float64':
      return numberOf(v) !== 0;
    case 'int64':
      return (v as bigint) !== 0n;
    case 'struct':
      return true;
    case 'func':
      return true;
  }
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** Byte order of the UTF-8 encodings; UTF-16 order is the same unless a string has astral characters. */
export function compareBytes(a: string, b: string): number {
  if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The order of internal/fmtsort, used to range over maps and to print them. */
export function compareKeys(a: unknown, b: unknown): number {
  const ka = kindOf(a);
  const kb = kindOf(b);
  if (ka !== kb) return ka < kb ? -1 : 1;
  switch (ka) {
    case 'string':
      return compareBytes(a as string, b as string);
    case 'int':
    case 'float64':
      return numberOf(a) < numberOf(b) ? -1 : numberOf(a) > numberOf(b) ? 1 : 0;
    case 'int64':
      return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0;
    case 'bool':
      return a === b ? 0 : a ? 1 : -1;
    case 'struct': {
      const fa = (a as GoStruct).fields;
      const fb = (b as GoStruct).fields;
      for (let i = 0; i < Math.min(fa.length, fb.length); i++) {
        const c = compareKeys(fa[i]!.value, fb[i]!.value);
        if (c !== 0) return c;
      }
      return 0;
    }
    default:
      return 0;
  }
}

export function sortedEntries(m: GoMap): [unknown, unknown][] {
  return [...m.entries.entries()].sort((x, y) => compareKeys(x[0], y[0]));
}

/** Go's == for comparable values (reflect.DeepEqual for the rest, as sprig uses it). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const ka = kindOf(a);
  if (ka !== kindOf(b)) return false;
  switch (ka) {
    case 'float64':
      return numberOf(a) === numberOf(b);
    case 'slice': {
      const x = a as unknown[];
      const y = b as unknown[];
      return x.length === y.length && x.every((e, i) => deepEqual(e, y[i]));
    }
    case 'map': {
      const x = asGoMap(a)!;
      const y = asGoMap(b)!;
      if (x.entries.size !== y.entries.size) return false;
      for (const [k, v] of x.entries) {
        const other = [...y.entries.entries()].find(([k2]) => deepEqual(k, k2));
        if (!other || !deepEqual(v, other[1])) return false;
      }
      return true;
    }
    case 'struct': {
      const x = a as GoStruct;
      const y = b as GoStruct;
      if (!(x instanceof GoStruct) || !(y instanceof GoStruct)) return false;
      return (
        x.typeName === y.typeName &&
        x.fields.length === y.fields.length &&
        x.fields.every((f, i) => deepEqual(f.value, y.fields[i]!.value))
      );
    }
    default:
      return false;
  }
}
