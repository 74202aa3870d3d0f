/**
 * A map over string keys given in sorted order: the keys and the values as two arrays, found by
 * bisection. A daemon's pass at 10,000 images made several maps of every policy or repository it
 * works on, each a table of ~0.45 MB that V8 allocates in its large-object space and, as the pass
 * outlives a few young-generation collections, frees only in a full one: four passes ending
 * together left tens of MB of them (issue 27). Two arrays of 10,000 are 80 KB each, in the
 * regular heap, and a lookup is 14 comparisons of strings. Its keys are fixed; a value may be
 * replaced.
 */
export class SortedTable<V> {
  /**
   * `keys` strictly increasing (as `<` orders strings: UTF-16 code units), `vals[i]` the value of
   * `keys[i]`. Neither is copied: the caller hands them over.
   */
  constructor(
    private readonly keys: readonly string[],
    private readonly vals: V[],
    checked?: typeof CHECKED,
  ) {
    if (keys.length !== vals.length)
      throw new Error(`SortedTable: ${keys.length} keys, ${vals.length} values`);
    if (checked === CHECKED) return;
    const at = unsortedAt(keys);
    if (at >= 0) throw new Error(`SortedTable: keys out of order at ${at} ("${keys[at]}")`);
  }

  /** A table of these keys and values when the keys are strictly increasing; null when they are not. */
  static ifSorted<V>(keys: readonly string[], vals: V[]): SortedTable<V> | null {
    // One pass over the keys, not a second in the constructor.
    return unsortedAt(keys) < 0 ? new SortedTable(keys, vals, CHECKED) : null;
  }

  /**
   * The values, a copy, when this table's keys are `keys` itself (the same array, as a store
   * answers the names it was asked): a caller wanting them by position then needs no lookups.
   */
  valuesIfKeys(keys: readonly string[]): V[] | null {
    return keys === this.keys ? this.vals.slice() : null;
  }

  get size(): number {
    return this.keys.length;
  }

  /** The position of `key`, or −1. */
  indexOf(key: string): number {
    let lo = 0;
    let hi = this.keys.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const k = this.keys[mid]!;
      if (k < key) lo = mid + 1;
      else if (k > key) hi = mid - 1;
      else return mid;
    }
    return -1;
  }

  get(key: string): V | undefined {
    const i = this.indexOf(key);
    return i < 0 ? undefined : this.vals[i];
  }

  has(key: string): boolean {
    return this.indexOf(key) >= 0;
  }

  /** Replaces the value of `key`, one of the table's keys; false, and nothing done, when it is not. */
  set(key: string, value: V): boolean {
    const i = this.indexOf(key);
    if (i < 0) return false;
    this.vals[i] = value;
    return true;
  }

  /** The values in their keys' order. */
  values(): readonly V[] {
    return this.vals;
  }
}

/** Vouches that the keys were found in order just before; private to this module. */
const CHECKED: unique symbol = Symbol('sorted');

/** The first position whose key is not above the one before it; −1 when they are strictly increasing. */
function unsortedAt(keys: readonly string[]): number {
  for (let i = 1; i < keys.length; i++) if (!(keys[i - 1]! < keys[i]!)) return i;
  return -1;
}

/**
 * `keys` to `vals` as a SortedTable when the keys are strictly increasing, else as a Map (the
 * last value of a repeated key).
 */
export function lookupOf<V>(
  keys: readonly string[],
  vals: V[],
): Pick<ReadonlyMap<string, V>, 'get' | 'has' | 'size'> {
  return SortedTable.ifSorted(keys, vals) ?? new Map(keys.map((k, i) => [k, vals[i]!]));
}

/**
 * The distinct `names`, sorted, each with the position of its first occurrence. Positions are
 * sorted, not names with their objects: no object a name (10,000 of them a pass, issue 27).
 */
export function sortedUnique(names: readonly string[]): { keys: string[]; at: number[] } {
  const order = new Uint32Array(names.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  order.sort((a, b) => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : a - b));
  const keys: string[] = [];
  const at: number[] = [];
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    if (keys.length === 0 || keys[keys.length - 1] !== names[i]) {
      keys.push(names[i]!);
      at.push(i);
    }
  }
  return { keys, at };
}
