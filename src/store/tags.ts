/** The order and the checksum a stored tag list is defined by. */
import { createHash } from 'node:crypto';

/**
 * Code-unit order: stable across locales, and what the checksum is defined over. The default
 * `sort()` compares strings by UTF-16 code units, the same order as `<`, without a call into a
 * comparator for each comparison. Lists read back from the store come sorted already (its
 * primary key is ordered by tag): one linear check then replaces the Set and the sort.
 */
export function sortTags(tags: Iterable<string>): string[] {
  const list = Array.isArray(tags) ? (tags as readonly string[]) : [...tags];
  let ordered = true;
  for (let i = 1; i < list.length && ordered; i++) ordered = list[i - 1]! < list[i]!;
  if (ordered) return list.slice();
  return [...new Set(list)].sort();
}

/** sha256 (hex) of the sorted, de-duplicated tags joined by `\n`. */
export function tagListChecksum(tags: Iterable<string>): string {
  return createHash('sha256').update(sortTags(tags).join('\n')).digest('hex');
}
