/**
 * Alphabetical ordering as Flux implements it: Go's string order, which compares UTF-8 bytes.
 * Ascending means the greatest string is the newest; descending, the least.
 */

import { compareGoStrings } from '../../go/index.js';

export type Order = 'asc' | 'desc';

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
