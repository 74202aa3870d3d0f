/**
 * Numerical ordering as Flux implements it: every value is read with Go's
 * `strconv.ParseFloat(s, 64)`, and a single value that does not parse fails the whole policy.
 */

import { compareGoStrings, parseGoFloat } from '../go/index.js';
import type { Strategy } from './strategy.js';

export type SortOrder = 'asc' | 'desc';

export function numericalKey(value: number): string {
  return String(value);
}

/**
 * Flux's `Numerical.Latest`: fails on the first value that does not parse; on equal values the
 * later one wins.
 */
export function numericalLatest(
  order: SortOrder,
  values: readonly string[],
): { latest: string } | { error: string } {
  if (values.length === 0) return { error: 'version list argument cannot be empty' };
  let latest = '';
  let pv = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    const cv = parseGoFloat(v);
    if (cv === null) return { error: `failed to parse invalid numeric value '${v}'` };
    if (i > 0 && ((order === 'asc' && cv < pv) || (order === 'desc' && cv > pv))) continue;
    latest = v;
    pv = cv;
  }
  return { latest };
}

export function numericalStrategy(order: 'asc' | 'desc'): Strategy<number> {
  const sign = order === 'asc' ? 1 : -1;
  return {
    // NaN parses in Go, but it has no order (Flux's pick would depend on list order): refuse it.
    parse: (value) => {
      const n = parseGoFloat(value);
      return n === null || Number.isNaN(n) ? null : n;
    },
    newer: (a, b) => (a === b ? 0 : a > b ? sign : -sign),
    eligible: () => true,
    key: (n) => `numerical ${numericalKey(n)}`,
    // Flux keeps the last of equal values in its newest-string-first list: `1` before `1.0`.
    tie: (a, b) => compareGoStrings(b, a),
    strict: true,
    noCandidate: () => 'version list argument cannot be empty',
  };
}
