/** The order and the checksum a stored tag list is defined by. */
import { createHash } from 'node:crypto';

/** Code-unit order: stable across locales, and what the checksum is defined over. */
export function sortTags(tags: Iterable<string>): string[] {
  return [...new Set(tags)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** sha256 (hex) of the sorted, de-duplicated tags joined by `\n`. */
export function tagListChecksum(tags: Iterable<string>): string {
  return createHash('sha256').update(sortTags(tags).join('\n')).digest('hex');
}
