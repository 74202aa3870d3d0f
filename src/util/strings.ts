/**
 * V8 makes a substring of 13 characters or more a slice that keeps the whole string it was cut
 * from, and a concatenation a tree of its parts: a line kept from a file keeps the file, a
 * value kept from git's output keeps the output. What is kept for long (a configuration, the
 * facts a daemon remembers between passes) is copied first.
 */

/** A flat copy of `s` that holds on to nothing else. */
export function copyString(s: string): string {
  // Decoding UTF-8 makes a new sequential string: neither a slice nor a concatenation.
  return Buffer.from(s, 'utf8').toString('utf8');
}
