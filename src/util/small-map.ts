/**
 * A map that holds its first entry in place and makes a Map from the second. A daemon keeps one
 * for each marked line of its workspaces (a file's known lines) and one for each kept policy
 * outcome (its markers' verdicts), and nearly all hold one entry; a Map's least table is ~0.2 KB
 * (issue 27). Keys compare as a Map's do (SameValueZero).
 */
export class SmallMap<K, V> {
  #key: K | undefined;
  #one: V | undefined;
  #has = false;
  #more: Map<K, V> | undefined;

  get(key: K): V | undefined {
    if (this.#more !== undefined) return this.#more.get(key);
    return this.#has && same(key, this.#key) ? this.#one : undefined;
  }

  set(key: K, value: V): this {
    if (this.#more !== undefined) this.#more.set(key, value);
    else if (!this.#has || same(key, this.#key)) {
      this.#key = key;
      this.#one = value;
      this.#has = true;
    } else {
      this.#more = new Map([
        [this.#key as K, this.#one as V],
        [key, value],
      ]);
      this.#key = undefined;
      this.#one = undefined;
    }
    return this;
  }

  get size(): number {
    return this.#more !== undefined ? this.#more.size : this.#has ? 1 : 0;
  }
}

/** SameValueZero: `===`, and NaN is NaN. */
const same = (a: unknown, b: unknown): boolean => a === b || (a !== a && b !== b);
