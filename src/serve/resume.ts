/**
 * What a `pawl serve` that died (a crash, `kill -9`, an OOM kill) left behind on the SQLite store,
 * taken up at the next start: the webhook work it had accepted (its queue is durable in the
 * store, see cluster/local.ts) and the scans it was in the middle of. Replicas on PostgreSQL
 * have the same from their coordinator: the queue is a table, and a dead replica's leases are
 * taken over when its heartbeat runs out.
 */
import { SqliteStore, type Store, type WorkQueueStore } from '../store/index.js';
import type { Logger } from '../util/index.js';

/** The store's durable work queue, when it has one (SQLite). */
export function workQueueOf(store: Store): WorkQueueStore | undefined {
  return store instanceof SqliteStore ? store : undefined;
}

/**
 * Marks the scans left `running` as interrupted and returns their ids: each one's repository is
 * due at once, not an interval after the scan that never finished. Only for the daemon holding
 * the store file's lock, so no live `pawl serve` is running them.
 */
export async function interruptedScans(store: Store, log: Logger): Promise<Set<number>> {
  const ids = (await workQueueOf(store)?.interruptRunningScans()) ?? [];
  if (ids.length > 0)
    log.info({ scans: ids.length }, 'scans left running by a process that is gone: redone now');
  return new Set(ids);
}
