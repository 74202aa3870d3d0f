/**
 * The strings of the objects a load reads, made the load's own. V8 makes a substring of 13
 * characters or more (an apiVersion, an image, a URL, a range) a slice that holds on to the
 * whole text it came from, so one kept object, or one entry of the semver ranges' cache, held its
 * file's text, and every other document in it, for as long as it lived (4 MB at 10,000 images). The same few values (the namespace,
 * the apiVersions, the defaults) also repeat in every object, each its own copy. Copying each
 * distinct string once and sharing the copy releases the texts and the repeats: the 10,000-image
 * configuration went from 22.6 to ~12 MB (docs/performance.md).
 */

import { copyString } from '../util/index.js';

/** Equal strings of one load, copied once. */
export type StringPool = Map<string, string>;

/** `s` as the pool's copy: a flat string of its own, the same one for every equal string. */
export function ownString(pool: StringPool, s: string): string {
  let own = pool.get(s);
  if (own === undefined) {
    own = copyString(s);
    pool.set(own, own);
  }
  return own;
}

/**
 * Replaces, in place, every string value of `value`'s plain objects and arrays with the pool's
 * copy (property names are V8's own already). Anything else (a class's instance, a Map) is left
 * as it is. A YAML alias can make a value hold itself: each object is walked once.
 */
export function ownStrings(pool: StringPool, value: unknown, seen = new Set<object>()): void {
  // A frozen object (a caller's, not the parser's) cannot take the copies: it keeps its own.
  if (value === null || typeof value !== 'object' || seen.has(value) || Object.isFrozen(value)) return;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'string') value[i] = ownString(pool, v);
      else ownStrings(pool, v, seen);
    }
    return;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  // By index (see config/issues.ts valueAt): no iterator a key in a one-shot command.
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = o[k];
    if (typeof v === 'string') o[k] = ownString(pool, v);
    else ownStrings(pool, v, seen);
  }
}
