/**
 * Numerical ordering as Flux implements it: every value is read with Go's
 * `strconv.ParseFloat(s, 64)`, and a single value that does not parse fails the whole policy.
 */

import { parseGoFloat } from '../../go/index.js';

export type Order = 'asc' | 'desc';

export function numericalKey(value: number): string {
  return String(value);
}

/**
 * Flux's `Numerical.Latest`: fails on the first value that does not parse; on equal values the
 * later one wins.
 */
export function numericalLatest(
  order: Order,
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
