/**
 * Alphabetical ordering as Flux implements it: Go's string order, which compares UTF-8 bytes.
 * Ascending means the greatest string is the newest; descending, the least.
 */

export type Order = 'asc' | 'desc';

const WIDE = /[\uD800-\uFFFF]/;

/**
 * Whether a string has code units where UTF-16 order and UTF-8 order can differ; strings
 * without them compare correctly with JavaScript's own (much faster) `<`.
 */
export function isWide(s: string): boolean {
  return WIDE.test(s);
}

/** Go's `a < b` on strings: UTF-8 byte order, which is code point order (not UTF-16 unit order). */
export function compareGoStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (code points above U+FFFF) sort after U+E000–U+FFFF in UTF-8.
    if (x >= 0xd800) x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
    if (y >= 0xd800) y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

export function alphabeticalKey(value: string): string {
  return JSON.stringify(value);
}

/** Flux's `Alphabetical.Latest`. */
export function alphabeticalLatest(
  order: Order,
  values: readonly string[],
): { latest: string } | { error: string } {
  if (values.length === 0) return { error: 'version list argument cannot be empty' };
  let latest = values[0]!;
  for (const v of values) {
    const d = compareGoStrings(v, latest);
    if ((order === 'asc' && d > 0) || (order === 'desc' && d < 0)) latest = v;
  }
  return { latest };
}
