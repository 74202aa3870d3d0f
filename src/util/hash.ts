/**
 * A small integer naming a tuple of strings and numbers, for a Map kept long (FNV-1a over the
 * parts' UTF-16 code units, each part ended by a separator, cut to 30 bits so V8 holds it as a
 * small integer: no string and no heap number a key). Two tuples may share one: use it only
 * where a hit is checked against the real values, so a collision costs a miss, never a wrong
 * answer.
 */
export function smallHash(...parts: readonly (string | number)[]): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    const s = typeof part === 'number' ? String(part) : part;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    // The separator: ("ab", "c") and ("a", "bc") hash apart.
    h = Math.imul(h ^ 0xffff, 0x01000193);
  }
  return h & 0x3fffffff;
}
