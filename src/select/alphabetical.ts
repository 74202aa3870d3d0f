/**
 * Alphabetical ordering as Flux implements it: Go's string order, which compares UTF-8 bytes.
 * Ascending means the greatest string is the newest; descending, the least.
 */

import { compareGoStrings, isWide } from '../go/index.js';
import type { Strategy } from './strategy.js';

export type SortOrder = 'asc' | 'desc';

export function alphabeticalKey(value: string): string {
  return JSON.stringify(value);
}

/** Flux's `Alphabetical.Latest`. */
export function alphabeticalLatest(
  order: SortOrder,
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

interface Str {
  s: string;
  /** Needs the slow UTF-8 order comparison. */
  wide: boolean;
}

export function alphabeticalStrategy(order: 'asc' | 'desc'): Strategy<Str> {
  const sign = order === 'asc' ? 1 : -1;
  return {
    parse: (value) => ({ s: value, wide: isWide(value) }),
    newer: (a, b) => {
      if (a.s === b.s) return 0;
      if (a.wide || b.wide) return sign * compareGoStrings(a.s, b.s);
      return a.s < b.s ? -sign : sign;
    },
    eligible: () => true,
    key: (v) => `alphabetical ${alphabeticalKey(v.s)}`,
    tie: () => 0,
    strict: false,
    noCandidate: () => 'version list argument cannot be empty',
  };
}
