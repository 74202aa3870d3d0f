/**
 * The coordinator's own tables, beside the store's in the same database: every name starts with
 * `pawl_cluster_`, and the versions are counted in `pawl_cluster_schema`, apart from the store's.
 * A migration is applied once, in a transaction, by whichever replica gets the advisory lock
 * first; the others wait for it and find nothing left to do.
 */
import type pg from 'pg';

export interface ClusterMigration {
  version: number;
  what: string;
  sql: string;
}

export const CLUSTER_MIGRATIONS: readonly ClusterMigration[] = [
  {
    version: 1,
    what: 'replicas, leases and the work queue',
    sql: `
CREATE TABLE pawl_cluster_replicas (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE TABLE pawl_cluster_leases (
  key text PRIMARY KEY,
  holder text NOT NULL,
  token bigint NOT NULL,
  acquired_at timestamptz NOT NULL,
  renewed_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX pawl_cluster_leases_holder ON pawl_cluster_leases (holder);
CREATE SEQUENCE pawl_cluster_lease_tokens;
CREATE TABLE pawl_cluster_work (
  key text PRIMARY KEY,
  repositories text[] NOT NULL,
  events integer NOT NULL,
  first_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  version bigint NOT NULL
);
CREATE SEQUENCE pawl_cluster_work_versions;
`,
  },
  {
    version: 2,
    what: 'the pushed tags a webhook named, awaited in the registry tag list',
    sql: `ALTER TABLE pawl_cluster_work ADD COLUMN tags text[] NOT NULL DEFAULT '{}';`,
  },
];

/** The advisory lock (one bigint) that serialises migrating the coordinator's tables. */
const MIGRATION_LOCK = '7061776c636c7573'; // "pawlclus" in hex, as a bigint below
const LOCK_ID = BigInt(`0x${MIGRATION_LOCK}`).toString();

export class ClusterSchemaError extends Error {
  override name = 'ClusterSchemaError';
}

/** Brings the tables to the newest version this pawl knows; returns the versions applied. */
export async function migrateCluster(pool: Pick<pg.Pool, 'connect'>): Promise<number[]> {
  const client = await pool.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [LOCK_ID]);
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS pawl_cluster_schema (
           version integer PRIMARY KEY,
           what text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const { rows } = await client.query<{ v: number }>(
        'SELECT coalesce(max(version), 0)::int AS v FROM pawl_cluster_schema',
      );
      const current = rows[0]?.v ?? 0;
      const newest = CLUSTER_MIGRATIONS.at(-1)?.version ?? 0;
      if (current > newest)
        throw new ClusterSchemaError(
          `the database's pawl_cluster_ tables are at version ${current}, newer than this pawl knows (${newest}): run the same pawl version on every replica`,
        );
      for (const m of CLUSTER_MIGRATIONS) {
        if (m.version <= current) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO pawl_cluster_schema (version, what) VALUES ($1, $2)', [
            m.version,
            m.what,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
        applied.push(m.version);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [LOCK_ID]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
  return applied;
}
