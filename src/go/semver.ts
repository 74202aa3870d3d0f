/**
 * Semantic versions exactly as Flux reads them: fluxcd/pkg `version.ParseVersion` (at least two
 * dots, then Masterminds/semver v3 `NewVersion`: optional `v`, leading zeros allowed in the
 * numbers, uint64 segments) and Masterminds' constraint language (`,`/space AND, `||`, hyphen
 * ranges, x-ranges, `~`, `^`, `!=`, …; a prerelease only satisfies an AND-group that names one).
 */
import { RE2JS } from 're2js';

export interface SemverVersion {
  /** The text as given (prefix and build metadata included). */
  readonly original: string;
  /** Decimal digits without leading zeros ("0" for zero); all fit in uint64. */
  readonly major: string;
  readonly minor: string;
  readonly patch: string;
  /** Without the `-`; "" when none. */
  readonly pre: string;
  /** Without the `+`; "" when none. Ignored when comparing. */
  readonly metadata: string;
  /** major/minor/patch as numbers when all three are exact in a double (else -1), for the fast path. */
  readonly fastMajor: number;
  readonly fastMinor: number;
  readonly fastPatch: number;
}

const UINT64_MAX = '18446744073709551615';

function isDigits(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function isIdentChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45;
}

/** Dot-separated, non-empty identifiers of [0-9A-Za-z-]. */
function validIdentifiers(s: string): boolean {
  if (s.length === 0) return false;
  let partLen = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (partLen === 0) return false;
      partLen = 0;
    } else if (isIdentChar(c)) {
      partLen++;
    } else {
      return false;
    }
  }
  return partLen > 0;
}

/** Masterminds' validatePrerelease (after validIdentifiers): numeric identifiers must not have leading zeros. */
function validPrerelease(pre: string): boolean {
  let start = 0;
  for (let i = 0; i <= pre.length; i++) {
    if (i < pre.length && pre.charCodeAt(i) !== 46) continue;
    if (i - start > 1 && pre.charCodeAt(start) === 48 && isDigits(pre.slice(start, i))) return false;
    start = i + 1;
  }
  return true;
}

/** Strips leading zeros; null when the value does not fit in uint64 (Go's ParseUint fails). */
function uint64(digits: string): string | null {
  if (digits.length === 1 || (digits.length < 16 && digits.charCodeAt(0) !== 48)) return digits;
  let i = 0;
  while (i < digits.length - 1 && digits.charCodeAt(i) === 48) i++;
  const n = i === 0 ? digits : digits.slice(i);
  if (n.length > 20 || (n.length === 20 && n > UINT64_MAX)) return null;
  return n;
}

/**
 * Masterminds `NewVersion` (coercing): `v?MAJOR[.MINOR[.PATCH]][-PRE][+META]`, missing parts are 0.
 * Returns null when it does not parse. A single pass: selection reads every tag of a repository.
 */
export function newVersion(v: string): SemverVersion | null {
  const len = v.length;
  let i = v.charCodeAt(0) === 118 /* v */ ? 1 : 0;
  // Metadata is everything after the first `+`, the prerelease everything after the first `-` before it.
  let plus = v.indexOf('+', i);
  if (plus < 0) plus = len;
  let dash = v.indexOf('-', i);
  if (dash < 0 || dash > plus) dash = plus;
  const nums: string[] = [];
  let start = i;
  for (; ; i++) {
    const c = i < dash ? v.charCodeAt(i) : -1;
    if (c >= 48 && c <= 57) continue;
    if (c !== 46 /* . */ && c !== -1) return null;
    if (i === start || nums.length === 3) return null;
    const n = uint64(v.slice(start, i));
    if (n === null) return null;
    nums.push(n);
    if (c === -1) break;
    start = i + 1;
  }
  const pre = dash < plus ? v.slice(dash + 1, plus) : '';
  if (dash < plus && (!validIdentifiers(pre) || !validPrerelease(pre))) return null;
  const metadata = plus < len ? v.slice(plus + 1) : '';
  if (plus < len && !validIdentifiers(metadata)) return null;
  const major = nums[0] ?? '0';
  const minor = nums[1] ?? '0';
  const patch = nums[2] ?? '0';
  const exact = major.length <= 15 && minor.length <= 15 && patch.length <= 15;
  return {
    original: v,
    major,
    minor,
    patch,
    pre,
    metadata,
    fastMajor: exact ? +major : -1,
    fastMinor: exact ? +minor : -1,
    fastPatch: exact ? +patch : -1,
  };
}

/**
 * fluxcd/pkg `version.ParseVersion`: a tag needs at least two dots (`v1.2` is not a version,
 * `v2025.07.03` is), then parses as `NewVersion`.
 */
export function parseVersion(tag: string): SemverVersion | null {
  const first = tag.indexOf('.');
  if (first < 0 || tag.indexOf('.', first + 1) < 0) return null;
  return newVersion(tag);
}

function cmpNum(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

function parseUint64(s: string): string | null {
  return isDigits(s) ? uint64(s) : null;
}

function comparePrePart(s: string, o: string): number {
  if (s === o) return 0;
  if (s === '') return -1;
  if (o === '') return 1;
  const oi = parseUint64(o);
  const si = parseUint64(s);
  if (oi === null && si === null) return s > o ? 1 : -1;
  if (oi === null) return -1;
  if (si === null) return 1;
  return cmpNum(si, oi) > 0 ? 1 : -1;
}

function comparePrerelease(v: string, o: string): number {
  const sp = v.split('.');
  const op = o.split('.');
  const l = Math.max(sp.length, op.length);
  for (let i = 0; i < l; i++) {
    const d = comparePrePart(sp[i] ?? '', op[i] ?? '');
    if (d !== 0) return d;
  }
  return 0;
}

/** Masterminds `Version.Compare`: -1, 0 or 1; build metadata is ignored. */
export function compareVersions(a: SemverVersion, b: SemverVersion): number {
  if (a.fastMajor >= 0 && b.fastMajor >= 0) {
    if (a.fastMajor !== b.fastMajor) return a.fastMajor < b.fastMajor ? -1 : 1;
    if (a.fastMinor !== b.fastMinor) return a.fastMinor < b.fastMinor ? -1 : 1;
    if (a.fastPatch !== b.fastPatch) return a.fastPatch < b.fastPatch ? -1 : 1;
  } else {
    const d = cmpNum(a.major, b.major) || cmpNum(a.minor, b.minor) || cmpNum(a.patch, b.patch);
    if (d !== 0) return d;
  }
  if (a.pre === '' && b.pre === '') return 0;
  if (a.pre === '') return 1;
  if (b.pre === '') return -1;
  return comparePrerelease(a.pre, b.pre);
}

/** The ordering key of a version as people read it: `1.2.3-rc.1` (no `v`, no build metadata). */
export function versionKey(v: SemverVersion): string {
  return `${v.major}.${v.minor}.${v.patch}${v.pre ? `-${v.pre}` : ''}`;
}

// ---------------------------------------------------------------------------------------------
// Constraints. The grammar is Masterminds' own regular expressions, run with an RE2 engine so
// that they keep Go's semantics (`\s` is ASCII whitespace, leftmost-first submatches).

const CV = String.raw`v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?`;
const OPS = String.raw`=||!=|>|<|>=|=>|<=|=<|~|~>|\^`;

let grammar: { constraint: RE2JS; range: RE2JS; find: RE2JS; valid: RE2JS } | undefined;

function rx() {
  grammar ??= {
    constraint: RE2JS.compile(String.raw`^\s*(${OPS})\s*(${CV})\s*$`),
    range: RE2JS.compile(String.raw`\s*(${CV})\s+-\s+(${CV})\s*`),
    find: RE2JS.compile(String.raw`(${OPS})\s*(${CV})`),
    valid: RE2JS.compile(String.raw`^(\s*(${OPS})\s*(${CV})\s*)((?:\s+|,\s*)(${OPS})\s*(${CV})\s*)*$`),
  };
  return grammar;
}

type Op = '' | '=' | '!=' | '>' | '<' | '>=' | '=>' | '<=' | '=<' | '~' | '~>' | '^';

interface Constraint {
  op: Op;
  con: SemverVersion;
  dirty: boolean;
  minorDirty: boolean;
  patchDirty: boolean;
}

export interface SemverRange {
  /** The range as written. */
  readonly source: string;
  /** Masterminds `Constraints.Check`. */
  check(v: SemverVersion): boolean;
}

function isX(s: string): boolean {
  return s === 'x' || s === 'X' || s === '*';
}

function strings(m: unknown): string[] | null {
  if (!Array.isArray(m)) return null;
  return m.map((x: unknown) => (typeof x === 'string' ? x : ''));
}

function rewriteRange(input: string): string {
  const all: unknown = rx().range.re2().findAllSubmatch(input, -1);
  if (!Array.isArray(all)) return input;
  let out = input;
  for (const raw of all) {
    const m = strings(raw);
    if (!m) continue;
    const whole = m[0] ?? '';
    const idx = out.indexOf(whole);
    if (idx < 0) continue;
    out = `${out.slice(0, idx)}>= ${m[1] ?? ''}, <= ${m[11] ?? ''} ${out.slice(idx + whole.length)}`;
  }
  return out;
}

function parseConstraint(c: string, whole: string): Constraint {
  const m = strings(rx().constraint.re2().findSubmatch(c));
  if (!m) throw new Error(`improper constraint: ${c}`);
  const op = (m[1] ?? '') as Op;
  const major = m[3] ?? '';
  const minor = m[4] ?? '';
  const patch = m[5] ?? '';
  const pre = m[6] ?? '';
  let ver = m[2] ?? '';
  let dirty = false;
  let minorDirty = false;
  let patchDirty = false;
  if (isX(major) || major === '') {
    ver = `0.0.0${pre}`;
    dirty = true;
  } else if (isX(minor.replace(/^\./, '')) || minor === '') {
    minorDirty = true;
    dirty = true;
    ver = `${major}.0.0${pre}`;
  } else if (isX(patch.replace(/^\./, '')) || patch === '') {
    dirty = true;
    patchDirty = true;
    ver = `${major}${minor}.0${pre}`;
  }
  const con = newVersion(ver);
  if (!con)
    throw new Error(
      `constraint parser error in ${JSON.stringify(whole)}: ${JSON.stringify(c.trim())} is not a version`,
    );
  return { op, con, dirty, minorDirty, patchDirty };
}

// A fleet's policies repeat a handful of ranges (500 policies, one `>=1.0.0`), and every
// configuration load, selection and pin check parses them: parse each once. Ranges are
// immutable; failures are not cached (they throw and are rare).
const ranges = new Map<string, SemverRange>();
const RANGE_CACHE_LIMIT = 1024;

/** Masterminds `NewConstraint`; throws `Error` with Masterminds' reason when the range is invalid. */
export function parseSemverRange(range: string): SemverRange {
  let parsed = ranges.get(range);
  if (parsed === undefined) {
    parsed = parseRange(range);
    if (ranges.size >= RANGE_CACHE_LIMIT) ranges.clear();
    ranges.set(range, parsed);
  }
  return parsed;
}

function parseRange(range: string): SemverRange {
  const r = rx();
  const rewritten = rewriteRange(range);
  const groups: { constraints: Constraint[]; hasPre: boolean }[] = [];
  for (const part of rewritten.split('||')) {
    if (!r.valid.test(part)) throw new Error(`improper constraint: ${part}`);
    const found: unknown = r.find.re2().findAll(part, -1);
    const pieces = Array.isArray(found) && found.length > 0 ? (found as string[]) : [part];
    const constraints = pieces.map((p) => parseConstraint(p, range));
    groups.push({ constraints, hasPre: constraints.some((c) => c.con.pre !== '') });
  }
  return {
    source: range,
    check(v: SemverVersion): boolean {
      for (const g of groups) {
        let ok = true;
        for (let i = 0; ok && i < g.constraints.length; i++) ok = checkOne(v, g.constraints[i]!, g.hasPre);
        if (ok) return true;
      }
      return false;
    },
  };
}

function checkOne(v: SemverVersion, c: Constraint, includePre: boolean): boolean {
  if (v.pre !== '' && !includePre) return false;
  switch (c.op) {
    case '':
    case '=':
      return c.dirty ? tilde(v, c) : compareVersions(v, c.con) === 0;
    case '!=':
      return notEqual(v, c);
    case '>':
      return greaterThan(v, c);
    case '<':
      return compareVersions(v, c.con) < 0;
    case '>=':
    case '=>':
      return compareVersions(v, c.con) >= 0;
    case '<=':
    case '=<':
      return lessThanEqual(v, c);
    case '~':
    case '~>':
      return tilde(v, c);
    case '^':
      return caret(v, c);
  }
}

function notEqual(v: SemverVersion, c: Constraint): boolean {
  if (c.dirty) {
    if (c.con.major !== v.major) return true;
    if (c.con.minor !== v.minor && !c.minorDirty) return true;
    if (c.minorDirty) return false;
    if (c.con.patch !== v.patch && !c.patchDirty) return true;
    if (c.patchDirty) {
      if (v.pre !== '' || c.con.pre !== '') return comparePrerelease(v.pre, c.con.pre) !== 0;
      return false;
    }
  }
  return compareVersions(v, c.con) !== 0;
}

function greaterThan(v: SemverVersion, c: Constraint): boolean {
  if (!c.dirty) return compareVersions(v, c.con) === 1;
  const dMajor = cmpNum(v.major, c.con.major);
  if (dMajor > 0) return true;
  if (dMajor < 0) return false;
  if (c.minorDirty) return false;
  if (c.patchDirty) return cmpNum(v.minor, c.con.minor) > 0;
  return compareVersions(v, c.con) === 1;
}

function lessThanEqual(v: SemverVersion, c: Constraint): boolean {
  if (!c.dirty) return compareVersions(v, c.con) <= 0;
  const dMajor = cmpNum(v.major, c.con.major);
  if (dMajor > 0) return false;
  if (dMajor === 0 && cmpNum(v.minor, c.con.minor) > 0 && !c.minorDirty) return false;
  return true;
}

function tilde(v: SemverVersion, c: Constraint): boolean {
  if (compareVersions(v, c.con) < 0) return false;
  if (c.con.major === '0' && c.con.minor === '0' && c.con.patch === '0' && !c.minorDirty && !c.patchDirty)
    return true;
  if (v.major !== c.con.major) return false;
  if (v.minor !== c.con.minor && !c.minorDirty) return false;
  return true;
}

function caret(v: SemverVersion, c: Constraint): boolean {
  if (compareVersions(v, c.con) < 0) return false;
  if (c.con.major !== '0' || c.minorDirty) return v.major === c.con.major;
  if (v.major !== '0') return false;
  if (c.con.minor !== '0' || c.patchDirty) return v.minor === c.con.minor;
  if (v.minor !== '0') return false;
  return c.con.patch === v.patch;
}
