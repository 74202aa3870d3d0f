import type { WorkItem } from './types.js';

/**
 * Two queued items for one key as one: the repositories and tags of both, the earliest and the
 * newest arrival, the events added up. Both coordinators coalesce with it (the PostgreSQL one
 * within a batch, before its upsert does the same in SQL, without the newest arrival).
 */
export function mergeWork(prev: WorkItem | undefined, item: WorkItem): WorkItem {
  if (!prev) return { ...item, repositories: [...item.repositories].sort(), tags: [...item.tags].sort() };
  const a = prev.lastAt;
  const b = item.lastAt;
  return {
    key: item.key,
    repositories: [...new Set([...prev.repositories, ...item.repositories])].sort(),
    tags: [...new Set([...prev.tags, ...item.tags])].sort(),
    firstAt: Math.min(prev.firstAt, item.firstAt),
    ...(a !== undefined && b !== undefined ? { lastAt: Math.max(a, b) } : {}),
    events: prev.events + item.events,
  };
}
