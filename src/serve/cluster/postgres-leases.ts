/**
 * The PostgreSQL coordinator's leases and replicas (`pawl_cluster_leases`,
 * `pawl_cluster_replicas`): the statements, each timed by the database's clock
 * (`clock_timestamp()`), so that replicas whose clocks disagree still agree on who holds what.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Lease, ReplicaInfo } from './types.js';

export const MEMBERS_CHANNEL = 'pawl_cluster_members';

const secs = (ms: number): number => ms / 1000;

interface ReplicaRow {
  id: string;
  host: string;
  pid: number;
  started_at: Date;
  heartbeat_at: Date;
  expires_at: Date;
  live: boolean;
  claims: number;
}

export class ReplicaTables {
  constructor(
    private readonly pool: pg.Pool,
    private readonly replicaId: string,
  ) {}

  /**
   * Claims `key` until `ttlMs` from now or this replica's heartbeat runs out, whichever is first:
   * the lease; null when another holds it; 'lapsed' when this replica's own heartbeat has run
   * out (it claims nothing until it beats again — no one else need hold the key).
   */
  async claim(key: string, ttlMs: number): Promise<{ token: string; acquired_at: Date } | null | 'lapsed'> {
    const { rows } = await this.pool.query<{ live: boolean; token: string | null; acquired_at: Date | null }>(
      `WITH me AS (
         SELECT r.id, r.expires_at FROM pawl_cluster_replicas r
          WHERE r.id = $2 AND r.expires_at > clock_timestamp()
       ), claimed AS (
         INSERT INTO pawl_cluster_leases AS l (key, holder, token, acquired_at, renewed_at, expires_at)
         SELECT $1, me.id, nextval('pawl_cluster_lease_tokens'), clock_timestamp(), clock_timestamp(),
                LEAST(me.expires_at, clock_timestamp() + make_interval(secs => $3))
           FROM me
         ON CONFLICT (key) DO UPDATE
            SET holder = EXCLUDED.holder, token = EXCLUDED.token, acquired_at = EXCLUDED.acquired_at,
                renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
          WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder
         RETURNING token::text AS token, acquired_at
       )
       SELECT EXISTS (SELECT 1 FROM me) AS live, (SELECT token FROM claimed) AS token,
              (SELECT acquired_at FROM claimed) AS acquired_at`,
      [key, this.replicaId, secs(ttlMs)],
    );
    const r = rows[0];
    if (!r?.live) return 'lapsed';
    return r.token !== null && r.acquired_at !== null ? { token: r.token, acquired_at: r.acquired_at } : null;
  }

  async release(lease: Lease): Promise<void> {
    await this.pool.query('DELETE FROM pawl_cluster_leases WHERE key = $1 AND holder = $2 AND token = $3', [
      lease.key,
      this.replicaId,
      lease.token,
    ]);
  }

  /**
   * This replica's heartbeat, then every lease in `tokens` renewed to the new heartbeat's expiry
   * (a lease never outlives its holder's heartbeat): the tokens renewed, and the database's time.
   */
  async heartbeat(
    startedAt: Date,
    ttlMs: number,
    tokens: string[],
  ): Promise<{ renewed: Set<string>; at: Date }> {
    const { rows } = await this.pool.query<{ renewed: string[] | null; expires_at: Date; now: Date }>(
      `WITH me AS (
           INSERT INTO pawl_cluster_replicas AS r (id, host, pid, started_at, heartbeat_at, expires_at)
           VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp() + make_interval(secs => $5))
           ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, expires_at = EXCLUDED.expires_at
           RETURNING r.expires_at
         ), renewed AS (
           UPDATE pawl_cluster_leases l
              SET renewed_at = clock_timestamp(), expires_at = (SELECT expires_at FROM me)
            WHERE l.holder = $1 AND l.token = ANY($6::bigint[]) AND l.expires_at > clock_timestamp()
           RETURNING l.token::text AS token
         )
         SELECT (SELECT array_agg(token) FROM renewed) AS renewed,
                (SELECT expires_at FROM me) AS expires_at, clock_timestamp() AS now`,
      [this.replicaId, hostname(), process.pid, startedAt, secs(ttlMs), tokens],
    );
    return { renewed: new Set(rows[0]?.renewed ?? []), at: rows[0]?.now ?? new Date() };
  }

  /** Every replica recently seen, with whether it is live and how many leases it holds. */
  async replicas(): Promise<ReplicaInfo[]> {
    const { rows } = await this.pool.query<ReplicaRow>(
      `SELECT r.id, r.host, r.pid, r.started_at, r.heartbeat_at, r.expires_at,
              r.expires_at > clock_timestamp() AS live,
              (SELECT count(*) FROM pawl_cluster_leases l
                WHERE l.holder = r.id AND l.expires_at > clock_timestamp())::int AS claims
         FROM pawl_cluster_replicas r
        ORDER BY r.id`,
    );
    return rows.map((r) => ({
      id: r.id,
      host: r.host,
      pid: r.pid,
      startedAt: r.started_at,
      heartbeatAt: r.heartbeat_at,
      expiresAt: r.expires_at,
      live: r.live,
      claims: r.claims,
      self: r.id === this.replicaId,
    }));
  }

  /** The keys of leases the replicas `holders` held until their heartbeat ran out. */
  async expiredLeases(holders: string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ key: string }>(
      `SELECT key FROM pawl_cluster_leases WHERE holder = ANY($1::text[]) AND expires_at <= clock_timestamp()`,
      [holders],
    );
    return rows.map((r) => r.key);
  }

  /** Forgets replicas gone for an hour. */
  async prune(): Promise<void> {
    await this.pool.query(
      `DELETE FROM pawl_cluster_replicas WHERE expires_at < clock_timestamp() - interval '1 hour'`,
    );
  }

  /** Tells the other replicas that this one joined. */
  async announce(): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', [MEMBERS_CHANNEL, this.replicaId]);
  }

  /** Leaving cleanly: this replica's leases and heartbeat removed, and the others told. */
  async leave(): Promise<void> {
    await this.pool.query(
      `WITH gone AS (DELETE FROM pawl_cluster_leases WHERE holder = $1),
              me AS (DELETE FROM pawl_cluster_replicas WHERE id = $1)
         SELECT pg_notify($2, $1)`,
      [this.replicaId, MEMBERS_CHANNEL],
    );
  }
}
