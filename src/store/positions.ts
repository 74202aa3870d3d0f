/**
 * The first position of each small hash (util's `smallHash`) among a list's entries: how a base
 * finds the row a later run may carry (carry.ts, result.ts). Two sorted typed arrays, 8 bytes
 * an entry, searched by halves; a `Map<number, number>` held ~46 bytes an entry, and a daemon
 * at 10,000 images keeps thirty such indexes of 10,000 entries each (issue 27).
 */
export class FirstPositions {
  readonly #hashes: Uint32Array;
  readonly #positions: Uint32Array;

  /** `hashOf(i)` is the hash of entry i, for i below `n`. */
  constructor(n: number, hashOf: (i: number) => number) {
    const hashes = new Uint32Array(n);
    for (let i = 0; i < n; i++) hashes[i] = hashOf(i);
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => hashes[a]! - hashes[b]! || a - b);
    // One slot a distinct hash, its first position (ties sort by position); kept at their length.
    const distinct = new Uint32Array(n);
    const first = new Uint32Array(n);
    let m = 0;
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      if (m > 0 && distinct[m - 1] === hashes[i]) continue;
      distinct[m] = hashes[i]!;
      first[m++] = i;
    }
    this.#hashes = distinct.slice(0, m);
    this.#positions = first.slice(0, m);
  }

  /** The first position whose entry has `hash`, or undefined. */
  get(hash: number): number | undefined {
    const hs = this.#hashes;
    let lo = 0;
    let hi = hs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (hs[mid]! < hash) lo = mid + 1;
      else hi = mid;
    }
    return lo < hs.length && hs[lo] === hash ? this.#positions[lo] : undefined;
  }
}
