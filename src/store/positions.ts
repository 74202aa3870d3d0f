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
    // One slot a distinct hash, its first position.
    let m = 0;
    for (let k = 0; k < n; k++) if (k === 0 || hashes[order[k]!] !== hashes[order[k - 1]!]) m++;
    this.#hashes = new Uint32Array(m);
    this.#positions = new Uint32Array(m);
    for (let k = 0, j = 0; k < n; k++) {
      const i = order[k]!;
      if (k > 0 && hashes[i] === hashes[order[k - 1]!]) continue;
      this.#hashes[j] = hashes[i]!;
      this.#positions[j++] = i;
    }
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
