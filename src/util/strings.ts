/**
 * V8 makes a substring of 13 characters or more a slice that keeps the whole string it was cut
 * from, and a concatenation a tree of its parts: a line kept from a file keeps the file, a
 * value kept from git's output keeps the output. What is kept for long (a configuration, the
 * facts a daemon remembers between passes) is copied first.
 */

/** A flat copy of `s` that holds on to nothing else. */
export function copyString(s: string): string {
  // Decoding UTF-8 makes a new sequential string: neither a slice nor a concatenation. A lone
  // surrogate does not survive the round trip (it comes back as U+FFFD): such a string, never a
  // name or a file's text, is kept as it is; surrogate pairs come back exact and are copied.
  const copy = Buffer.from(s, 'utf8').toString('utf8');
  return copy === s ? copy : s;
}

/**
 * Every object name's `namespace/name` key, made once. A daemon's layers each kept their own
 * copy of the same key: made by concatenation (kept outcomes, the store's caches, the
 * scheduler's jobs, report rows) or read back from the store (scans, carried decisions): ~12
 * copies of each name at rest, 0.5 KB an image (issue 27). Names rarely come and go, so a
 * namespace's keys are let go only when there are implausibly many.
 */
const nameKeys = new Map<string, Map<string, string>>();
const KEYS_PER_NAMESPACE = 1 << 17;

/** `namespace/name`, the one copy of it. */
export function nameKey(namespace: string, name: string): string {
  let names = nameKeys.get(namespace);
  if (names === undefined) nameKeys.set(namespace, (names = new Map()));
  let key = names.get(name);
  if (key === undefined) {
    if (names.size >= KEYS_PER_NAMESPACE) names.clear();
    key = copyString(`${namespace}/${name}`);
    names.set(name, key);
  }
  return key;
}

/** A `namespace/name` key read from elsewhere (the store's rows), as `nameKey` keeps it. */
export function sharedNameKey(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? key : nameKey(key.slice(0, slash), key.slice(slash + 1));
}
