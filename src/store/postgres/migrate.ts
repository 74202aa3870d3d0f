/**
 * Versioned migrations in a PostgreSQL schema, safe when several replicas start at once: the
 * whole migration is one transaction under an advisory lock named after the migrations table,
 * so the first replica migrates and the others wait, then find nothing left to do. PostgreSQL's
 * DDL is transactional: a step that fails leaves nothing half-applied.
 *
 * Any component that lives beside the store (replica leases, queues) may keep its own
 * migrations the same way, in its own table: `migratePostgres(client, { table: 'replica_migrations', … })`.
 */
import type { ClientBase } from 'pg';
import { pendingSteps } from '../schema.js';

export interface MigrationSet {
  /** The schema the tables live in (created when missing). */
  schema: string;
  /** The table recording applied versions, in `schema`: one per component. */
  table: string;
  /** Version N is `steps[N-1]`; SQL runs with `search_path` set to `schema`. */
  steps: readonly string[];
  /** For messages: what these tables are ("the state store"), and where (a URL without password). */
  what: string;
  location: string;
}

/** `"name"`: an identifier quoted for SQL. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Applies the steps not applied yet; returns the version the schema is at. Refuses a schema
 * newer than `steps` (a newer pawl migrated it) without changing anything.
 */
export async function migratePostgres(client: ClientBase, set: MigrationSet): Promise<number> {
  const schema = quoteIdent(set.schema);
  const table = `${schema}.${quoteIdent(set.table)}`;
  await client.query('BEGIN');
  try {
    // Transaction-scoped: released by COMMIT or ROLLBACK, even if this process dies.
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
      `pawl:${set.schema}.${set.table}`,
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${table} (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const r = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${table}`);
    const pending = pendingSteps(r.rows[0]?.v ?? 0, set.steps, {
      subject: `${set.what} at ${set.location} (schema ${set.schema}) has version`,
      advice: 'upgrade pawl (every replica), or point it at another database or schema',
    });
    await client.query(`SET LOCAL search_path TO ${schema}`);
    for (const { version, sql } of pending) {
      await client.query(sql);
      await client.query(`INSERT INTO ${table} (version) VALUES ($1)`, [version]);
    }
    await client.query('COMMIT');
    return set.steps.length;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
