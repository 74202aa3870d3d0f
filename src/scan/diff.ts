/**
 * The scan's rule for what is unusual about a tag list (no I/O): compared with the previous good
 * list of the same image, which tags were added and removed, and which anomalies that shows.
 * The store calls it inside the transaction that records the scan.
 */
import type { Anomaly, TagDiff } from '../records/index.js';
import { sortTags } from '../store/index.js';

/** A count drop is an anomaly only when it is both large in proportion and in absolute terms. */
export const COUNT_DROP_MIN_RATIO = 0.1;
export const COUNT_DROP_MIN_TAGS = 5;

/** `previous` is null when there is no earlier good scan: nothing can be missing then. */
export function diffTags(previous: readonly string[] | null, current: readonly string[]): TagDiff {
  // The store compares an unchanged list with itself (its checksum is the previous one's): nothing
  // added or removed, without two sets of 5,000 tags.
  if (previous === current)
    return { added: [], removed: [], anomalies: current.length === 0 ? [{ kind: 'empty' }] : [] };
  const now = new Set(current);
  const anomalies: Anomaly[] = [];
  if (now.size === 0) anomalies.push({ kind: 'empty' });
  if (previous === null) return { added: sortTags(now), removed: [], anomalies };
  const before = new Set(previous);
  const added = sortTags([...now].filter((t) => !before.has(t)));
  const removed = sortTags([...before].filter((t) => !now.has(t)));
  if (removed.length > 0) anomalies.push({ kind: 'tags-missing', count: removed.length, tags: removed });
  const drop = before.size - now.size;
  if (drop >= COUNT_DROP_MIN_TAGS && drop >= before.size * COUNT_DROP_MIN_RATIO) {
    anomalies.push({ kind: 'count-drop', from: before.size, to: now.size });
  }
  return { added, removed, anomalies };
}

/** One line for tables and logs. */
export function describeAnomaly(a: Anomaly, maxNames = 10): string {
  switch (a.kind) {
    case 'empty':
      return 'empty: the registry listed no tags';
    case 'tags-missing':
      return `tags-missing: ${a.count} tag${a.count === 1 ? '' : 's'} gone (${abbreviate(a.tags, maxNames)})`;
    case 'count-drop':
      return `count-drop: ${a.from} → ${a.to} tags`;
    case 'invalid-tags':
      return `invalid-tags: ${a.count} listed name${a.count === 1 ? ' is' : 's are'} not a tag and ${a.count === 1 ? 'was' : 'were'} dropped (${abbreviate(a.examples, maxNames)}${a.count > a.examples.length ? ', …' : ''})`;
  }
}

/** `a, b, c … and 12 more` */
export function abbreviate(names: readonly string[], max = 10): string {
  if (names.length <= max) return names.join(', ');
  return `${names.slice(0, max).join(', ')} … and ${names.length - max} more`;
}
