/**
 * The PostgreSQL coordinator's work queue (`pawl_cluster_work`): one row per job key coalescing
 * every webhook for it, with a version bumped by each event; the lease holder takes it and
 * deletes it only if the version is unchanged, so an event that arrives during a pass leaves
 * the row for one more pass. `NOTIFY pawl_cluster_work` wakes the replicas.
 */
import type pg from 'pg';
import { mergeWork } from './work.js';
import type { Lease, TakenWork, WorkItem } from './types.js';

export const WORK_CHANNEL = 'pawl_cluster_work';

const secs = (ms: number): number => ms / 1000;

export class PostgresWorkQueue {
  constructor(
    private readonly pool: pg.Pool,
    private readonly replicaId: string,
  ) {}

  async publish(items: WorkItem[]): Promise<void> {
    const byKey = new Map<string, WorkItem>();
    for (const i of items) byKey.set(i.key, mergeWork(byKey.get(i.key), i));
    if (byKey.size === 0) return;
    const rows = [...byKey.values()].map((i) => ({
      key: i.key,
      repositories: i.repositories,
      tags: i.tags,
      events: i.events,
      first_at: new Date(i.firstAt).toISOString(),
    }));
    // One statement: queued and notified together (NOTIFY is delivered when it commits).
    await this.pool.query(
      `WITH queued AS (
         INSERT INTO pawl_cluster_work AS w (key, repositories, tags, events, first_at, updated_at, version)
         SELECT x.key, x.repositories, x.tags, x.events, x.first_at, clock_timestamp(), nextval('pawl_cluster_work_versions')
           FROM jsonb_to_recordset($1::jsonb) AS x(key text, repositories text[], tags text[], events integer, first_at timestamptz)
         ON CONFLICT (key) DO UPDATE
            SET repositories = ARRAY(SELECT DISTINCT r FROM unnest(w.repositories || EXCLUDED.repositories) AS r ORDER BY r),
                tags = ARRAY(SELECT DISTINCT t FROM unnest(w.tags || EXCLUDED.tags) AS t ORDER BY t),
                events = w.events + EXCLUDED.events,
                first_at = LEAST(w.first_at, EXCLUDED.first_at),
                updated_at = EXCLUDED.updated_at,
                version = EXCLUDED.version
         RETURNING w.key
       )
       SELECT pg_notify($2, key) FROM queued`,
      [JSON.stringify(rows), WORK_CHANNEL],
    );
  }

  async take(lease: Lease): Promise<TakenWork | null> {
    const { rows } = await this.pool.query<{
      repositories: string[];
      tags: string[];
      events: number;
      first_at: Date;
      version: string;
    }>(
      'SELECT repositories, tags, events, first_at, version::text AS version FROM pawl_cluster_work WHERE key = $1',
      [lease.key],
    );
    const r = rows[0];
    return r
      ? {
          key: lease.key,
          repositories: r.repositories,
          tags: r.tags,
          events: r.events,
          firstAt: r.first_at.getTime(),
          version: r.version,
        }
      : null;
  }

  async ack(lease: Lease, work: TakenWork): Promise<boolean> {
    // Only while the lease is still ours: otherwise its new holder does the work again. When
    // more events came meanwhile, the row stays for them, without the ones done.
    const { rows } = await this.pool.query<{ done: boolean }>(
      `WITH mine AS (
         SELECT 1 FROM pawl_cluster_leases l
          WHERE l.key = $1 AND l.holder = $3 AND l.token = $4::bigint AND l.expires_at > clock_timestamp()
       ), done AS (
         DELETE FROM pawl_cluster_work w
          WHERE w.key = $1 AND w.version = $2::bigint AND EXISTS (SELECT 1 FROM mine)
         RETURNING 1
       ), rest AS (
         UPDATE pawl_cluster_work w SET events = GREATEST(1, w.events - $5)
          WHERE w.key = $1 AND w.version <> $2::bigint AND EXISTS (SELECT 1 FROM mine)
       )
       SELECT EXISTS (SELECT 1 FROM done) AS done`,
      [lease.key, work.version, this.replicaId, lease.token, work.events],
    );
    return rows[0]?.done === true;
  }

  /**
   * Queued work no live lease covers, oldest first: whether each has waited `waitedMs` since its
   * last event, and whether `staleMs`.
   */
  async unleased(
    waitedMs: number,
    staleMs: number,
  ): Promise<{ key: string; waited: boolean; stale: boolean }[]> {
    const { rows } = await this.pool.query<{ key: string; waited: boolean; stale: boolean }>(
      `SELECT w.key,
              w.updated_at < clock_timestamp() - make_interval(secs => $1) AS waited,
              w.updated_at < clock_timestamp() - make_interval(secs => $2) AS stale
         FROM pawl_cluster_work w
        WHERE NOT EXISTS (SELECT 1 FROM pawl_cluster_leases l
                           WHERE l.key = w.key AND l.expires_at > clock_timestamp())
        ORDER BY w.first_at
        LIMIT 1000`,
      [secs(waitedMs), secs(staleMs)],
    );
    return rows;
  }
}
