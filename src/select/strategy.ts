/**
 * One interface every ordering strategy implements (Flux's image-reflector-controller
 * internal/policy `Policer`, widened to what pawl's guard needs: parse, order, key). One file per
 * strategy beside this one; factory.ts picks one for a policy.
 */
import type { SelectOptions } from './policy.js';

/** How one strategy reads and orders values. */
export interface Strategy<T> {
  parse(value: string, tag: string, opts: SelectOptions | undefined): T | null;
  /** >0 when a is newer. */
  newer(a: T, b: T): number;
  /** Selection only: semver's range. */
  eligible(v: T): boolean;
  key(v: T): string;
  /** Among equally new values, >0 when `a` should rank first (Flux's list order decides there). */
  tie(a: string, b: string): number;
  /** Numerical: one unreadable value fails the policy, as in Flux. */
  readonly strict: boolean;
  noCandidate(counts: Counts): string;
}

export interface Counts {
  total: number;
  excluded: number;
  filteredOut: number;
  unparsable: number;
  outOfRange: number;
}

export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}
