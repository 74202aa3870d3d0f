/**
 * Go's string order: `a < b` compares UTF-8 bytes, which is code point order, not JavaScript's
 * UTF-16 unit order.
 */

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
