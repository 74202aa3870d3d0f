/**
 * The durable work queue of one `pawl serve` on SQLite (docs/state.md): webhook work is written
 * and committed before the webhook is answered, deleted once a run has done it, and read back at
 * start; scans a dead process left `running` are marked interrupted. Replicas queue in PostgreSQL.
 */
import type Database from 'better-sqlite3';
import * as stored from '../rows.js';
import type { QueuedWork } from '../types.js';
import type { WriteGroups } from './group.js';

interface WorkRow {
  key: string;
  repositories: string;
  tags: string;
  events: number;
  first_at: number;
  version: number;
}

const SQL = {
  put: `INSERT INTO serve_work (key, repositories, tags, events, first_at, version) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (key) DO UPDATE SET repositories = excluded.repositories, tags = excluded.tags,
          events = excluded.events, first_at = excluded.first_at, version = excluded.version`,
  delete: 'DELETE FROM serve_work WHERE key = ?',
  all: 'SELECT key, repositories, tags, events, first_at, version FROM serve_work ORDER BY first_at, key',
  // Plucked. Through scans_running: a plain SELECT with ORDER BY id read every scan ever recorded.
  interrupt: `UPDATE scans SET outcome = 'failed', ended_at = started_at, error = ? WHERE outcome = 'running'
        RETURNING id`,
} as const;

export class SqliteWorkQueue {
  constructor(
    private readonly db: Database.Database,
    private readonly groups: WriteGroups,
  ) {}

  async put(items: readonly QueuedWork[]): Promise<void> {
    if (items.length === 0) return;
    this.groups.write(() => {
      const st = this.db.prepare(SQL.put);
      for (const i of items)
        st.run(i.key, JSON.stringify(i.repositories), JSON.stringify(i.tags), i.events, i.firstAt, i.version);
    });
    // Accepted work must survive a crash: committed now, not with the group.
    this.groups.flush();
  }

  async delete(key: string): Promise<void> {
    this.groups.write(() => this.db.prepare(SQL.delete).run(key));
  }

  async all(): Promise<QueuedWork[]> {
    return (this.db.prepare(SQL.all).all() as WorkRow[]).map((r) => ({
      key: r.key,
      repositories: JSON.parse(r.repositories) as string[],
      tags: JSON.parse(r.tags) as string[],
      events: r.events,
      firstAt: r.first_at,
      version: r.version,
    }));
  }

  async interruptRunningScans(): Promise<number[]> {
    return this.groups.write(() => {
      const ids = this.db.prepare(SQL.interrupt).pluck().all(stored.INTERRUPTED) as number[];
      return ids.sort((a, b) => a - b);
    });
  }
}
