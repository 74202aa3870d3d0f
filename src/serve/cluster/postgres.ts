/**
 * Replicas of `pawl serve` sharing one PostgreSQL database (docs/replicas.md).
 *
 * - **Leases are rows** (`pawl_cluster_leases`, one per job key) claimed with one
 *   `INSERT … ON CONFLICT DO UPDATE … WHERE expired` statement, so exactly one replica wins. A
 *   lease never outlives its holder's heartbeat: its expiry is the holder's, renewed with it, so
 *   when a replica's heartbeat runs out every lease it held has run out too, and the others take
 *   its keys at once. Rows, not advisory locks: a pass runs minutes and must not pin a database
 *   connection (and a connection blip must not silently drop a lock while git is pushing); a row
 *   with an expiry survives a reconnect and says who holds what and since when.
 * - **Time is the database's** (`clock_timestamp()`): replicas' clocks may disagree, the
 *   database's is one. This process's clock (injected) only paces the heartbeat and decides,
 *   conservatively, when a lease it could not renew must be given up.
 * - **Work** (`pawl_cluster_work`) is one row per job key, coalescing every webhook for it, with a
 *   version bumped by each event; the lease holder takes it and deletes it only if the version
 *   is unchanged, so an event that arrives during a pass leaves the row for one more pass.
 *   `NOTIFY pawl_cluster_work` wakes the replicas; a sweep at each heartbeat catches anything a
 *   lost notification missed.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { errorMessage, type Logger } from '../../util/index.js';
import { systemClock, type Clock } from '../scheduler.js';
import { migrateCluster } from './migrations.js';
import { preferredOwner } from './rendezvous.js';
import { mergeWork } from './work.js';
import type {
  ClaimInfo,
  Coordinator,
  Lease,
  MembershipChange,
  ReplicaInfo,
  TakenWork,
  WorkItem,
  WorkSource,
} from './types.js';

export const WORK_CHANNEL = 'pawl_cluster_work';
export const MEMBERS_CHANNEL = 'pawl_cluster_members';
export const DEFAULT_LEASE_TTL_MS = 30_000;
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** Queued work any replica may take once it has waited this many lease lifetimes. */
const STALE_WORK_LEASES = 4;

/** The listening connection: LISTEN needs one connection of its own, outside the pool. */
export interface ListenConnection {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', fn: (msg: { channel: string; payload?: string | undefined }) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end', fn: () => void): unknown;
  end(): Promise<void>;
}

export interface PostgresCoordinatorOptions {
  /** Queries go through this pool (injected: tests and the store may share one). */
  pool: pg.Pool;
  /** Opens a connection for LISTEN. */
  listen: () => Promise<ListenConnection>;
  log: Logger;
  clock?: Clock;
  replicaId?: string;
  /** How long a lease and a heartbeat last without renewal (default 30 s). */
  leaseTtlMs?: number;
  /** How often the heartbeat renews them (default 10 s; at most a third of the TTL). */
  heartbeatMs?: number;
  /** Close the pool on close() (when the coordinator made it). */
  ownsPool?: boolean;
}

interface Held {
  lease: Lease;
  controller: AbortController;
  renewedAt: Date;
  /** This process's clock when the last confirming query was sent. */
  confirmedAt: number;
}

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

const secs = (ms: number): number => ms / 1000;

export function defaultReplicaId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export class PostgresCoordinator implements Coordinator {
  readonly kind = 'postgres' as const;
  readonly replicaId: string;
  readonly leaseTtlMs: number;
  readonly heartbeatMs: number;
  readonly #pool: pg.Pool;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #startedAt: Date;
  readonly #held = new Map<string, Held>();
  readonly #workListeners = new Set<(key: string, source: WorkSource) => void>();
  readonly #memberListeners = new Set<(change: MembershipChange) => void>();
  readonly #recoveredListeners = new Set<() => void>();
  #live: string[] = [];
  #replicas: ReplicaInfo[] = [];
  #healthy = false;
  #everHealthy = false;
  #lastHeartbeat: Date | null = null;
  #listener: ListenConnection | null = null;
  #listening: Promise<void> | null = null;
  #timer: unknown = null;
  #ticking: Promise<void> | null = null;
  #again = false;
  #closed = false;
  /** Sweep all queued work of this replica's keys, not only the stale: notifications may have been missed. */
  #sweepAll = true;

  constructor(private readonly opts: PostgresCoordinatorOptions) {
    this.#pool = opts.pool;
    this.#log = opts.log;
    this.#clock = opts.clock ?? systemClock;
    this.replicaId = opts.replicaId ?? defaultReplicaId();
    this.leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.heartbeatMs = Math.min(opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, Math.floor(this.leaseTtlMs / 3));
    if (this.heartbeatMs < 1) throw new Error('the lease TTL is too short: it must be at least 3 ms');
    this.#startedAt = new Date(this.#clock.now());
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  get lastHeartbeat(): Date | null {
    return this.#lastHeartbeat;
  }

  async start(): Promise<void> {
    const applied = await migrateCluster(this.#pool);
    if (applied.length > 0) this.#log.info({ versions: applied }, 'cluster tables migrated');
    await this.#tick();
    if (!this.#healthy) throw new Error('cannot register this replica in the database');
    await this.#pool
      .query('SELECT pg_notify($1, $2)', [MEMBERS_CHANNEL, this.replicaId])
      .catch(() => undefined);
    this.#schedule();
  }

  // ── leases ──────────────────────────────────────────────────────────────────────────────

  async claim(key: string, ttlMs?: number): Promise<Lease | null> {
    if (this.#closed || this.#held.has(key)) return null;
    const sentAt = this.#clock.now();
    // The lease runs out with this replica's heartbeat (or sooner, when asked): a replica whose
    // heartbeat has lapsed cannot claim at all.
    const { rows } = await this.#pool.query<{ token: string; acquired_at: Date }>(
      `INSERT INTO pawl_cluster_leases AS l (key, holder, token, acquired_at, renewed_at, expires_at)
       SELECT $1, r.id, nextval('pawl_cluster_lease_tokens'), clock_timestamp(), clock_timestamp(),
              LEAST(r.expires_at, clock_timestamp() + make_interval(secs => $3))
         FROM pawl_cluster_replicas r
        WHERE r.id = $2 AND r.expires_at > clock_timestamp()
       ON CONFLICT (key) DO UPDATE
          SET holder = EXCLUDED.holder, token = EXCLUDED.token, acquired_at = EXCLUDED.acquired_at,
              renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
        WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder
       RETURNING token::text AS token, acquired_at`,
      [key, this.replicaId, secs(ttlMs ?? this.leaseTtlMs)],
    );
    const row = rows[0];
    if (!row) return null;
    const controller = new AbortController();
    const lease: Lease = { key, token: row.token, acquiredAt: row.acquired_at, signal: controller.signal };
    this.#held.set(key, { lease, controller, renewedAt: row.acquired_at, confirmedAt: sentAt });
    return lease;
  }

  async renew(lease: Lease): Promise<boolean> {
    if (this.#held.get(lease.key)?.lease !== lease) return false;
    await this.#tick();
    return this.#held.get(lease.key)?.lease === lease && !lease.signal.aborted;
  }

  async release(lease: Lease): Promise<void> {
    const held = this.#held.get(lease.key);
    if (held?.lease !== lease) return;
    this.#held.delete(lease.key);
    try {
      await this.#pool.query(
        'DELETE FROM pawl_cluster_leases WHERE key = $1 AND holder = $2 AND token = $3',
        [lease.key, this.replicaId, lease.token],
      );
    } catch (err) {
      // It runs out with this replica's heartbeat, or the next claim takes it over.
      this.#log.debug({ key: lease.key, err: errorMessage(err) }, 'cannot release a lease');
    }
  }

  #lose(held: Held, why: string): void {
    if (this.#held.get(held.lease.key) === held) this.#held.delete(held.lease.key);
    if (held.controller.signal.aborted) return;
    this.#log.warn({ key: held.lease.key, token: held.lease.token, reason: why }, 'lease lost');
    held.controller.abort(new LeaseLostError(held.lease.key, why));
  }

  // ── work ────────────────────────────────────────────────────────────────────────────────

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
    await this.#pool.query(
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
    const { rows } = await this.#pool.query<{
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
    const { rows } = await this.#pool.query<{ done: boolean }>(
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

  onWork(cb: (key: string, source: WorkSource) => void): () => void {
    this.#workListeners.add(cb);
    return () => this.#workListeners.delete(cb);
  }

  onMembership(cb: (change: MembershipChange) => void): () => void {
    this.#memberListeners.add(cb);
    return () => this.#memberListeners.delete(cb);
  }

  onRecovered(cb: () => void): () => void {
    this.#recoveredListeners.add(cb);
    return () => this.#recoveredListeners.delete(cb);
  }

  #offer(key: string, source: WorkSource): void {
    for (const cb of this.#workListeners) {
      try {
        cb(key, source);
      } catch (err) {
        this.#log.error({ key, err: errorMessage(err) }, 'a work listener failed');
      }
    }
  }

  // ── membership ──────────────────────────────────────────────────────────────────────────

  owns(key: string): boolean {
    // Until the first heartbeat, or while the database is away, the last known members decide.
    const live = this.#live.includes(this.replicaId) ? this.#live : [...this.#live, this.replicaId];
    return preferredOwner(key, live) === this.replicaId;
  }

  holds(key: string): boolean {
    return this.#held.has(key);
  }

  replicas(): ReplicaInfo[] {
    return this.#replicas;
  }

  claims(): ClaimInfo[] {
    return [...this.#held.values()].map((h) => ({
      key: h.lease.key,
      token: h.lease.token,
      acquiredAt: h.lease.acquiredAt,
      renewedAt: h.renewedAt,
    }));
  }

  // ── heartbeat ───────────────────────────────────────────────────────────────────────────

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = null;
      void this.#tick().finally(() => this.#schedule());
    }, this.heartbeatMs);
  }

  /** One heartbeat; a tick asked for while one runs runs once more right after it. */
  #tick(): Promise<void> {
    if (this.#ticking) {
      this.#again = true;
      return this.#ticking;
    }
    this.#ticking = (async () => {
      do {
        this.#again = false;
        await this.#beat();
      } while (this.#again && !this.#closed);
    })().finally(() => (this.#ticking = null));
    return this.#ticking;
  }

  async #beat(): Promise<void> {
    if (this.#closed) return;
    const sentAt = this.#clock.now();
    const held = [...this.#held.values()];
    try {
      // Heartbeat first, then every lease renewed to the new heartbeat's expiry: a lease never
      // outlives its holder's heartbeat.
      const { rows } = await this.#pool.query<{ renewed: string[] | null; expires_at: Date; now: Date }>(
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
        [
          this.replicaId,
          hostname(),
          process.pid,
          this.#startedAt,
          secs(this.leaseTtlMs),
          held.map((h) => h.lease.token),
        ],
      );
      const renewed = new Set(rows[0]?.renewed ?? []);
      const at = rows[0]?.now ?? new Date();
      for (const h of held) {
        if (renewed.has(h.lease.token)) {
          h.renewedAt = at;
          h.confirmedAt = sentAt;
        } else if (this.#held.get(h.lease.key) === h) {
          this.#lose(h, 'another replica holds it now (this replica missed its heartbeat)');
        }
      }
      this.#lastHeartbeat = at;
      await this.#members();
      await this.#ensureListening();
      await this.#sweep();
      await this.#pool
        .query(`DELETE FROM pawl_cluster_replicas WHERE expires_at < clock_timestamp() - interval '1 hour'`)
        .catch(() => undefined);
      if (!this.#healthy) {
        const recovered = this.#everHealthy;
        this.#healthy = true;
        this.#everHealthy = true;
        if (recovered) {
          this.#log.info({ replica: this.replicaId }, 'the database is reachable again');
          for (const cb of this.#recoveredListeners) cb();
        }
      }
    } catch (err) {
      if (this.#healthy) {
        this.#log.warn(
          { replica: this.replicaId, err: errorMessage(err) },
          'the database is unreachable: no work is claimed until it returns',
        );
      }
      this.#healthy = false;
      this.#sweepAll = true;
      // A lease this replica can no longer confirm is given up before the database could hand
      // it to another replica: the pass holding it stops before it pushes.
      const now = this.#clock.now();
      for (const h of [...this.#held.values()])
        if (now + this.heartbeatMs >= h.confirmedAt + this.leaseTtlMs)
          this.#lose(
            h,
            `not renewed for ${Math.round((now - h.confirmedAt) / 1000)}s: the database is unreachable`,
          );
    }
  }

  async #members(): Promise<void> {
    const { rows } = await this.#pool.query<ReplicaRow>(
      `SELECT r.id, r.host, r.pid, r.started_at, r.heartbeat_at, r.expires_at,
              r.expires_at > clock_timestamp() AS live,
              (SELECT count(*) FROM pawl_cluster_leases l
                WHERE l.holder = r.id AND l.expires_at > clock_timestamp())::int AS claims
         FROM pawl_cluster_replicas r
        ORDER BY r.id`,
    );
    this.#replicas = rows.map((r) => ({
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
    const live = rows.filter((r) => r.live).map((r) => r.id);
    const before = this.#live;
    this.#live = live;
    const joined = live.filter((id) => !before.includes(id));
    const left = before.filter((id) => !live.includes(id));
    if (before.length > 0 && (joined.length > 0 || left.length > 0)) {
      this.#log.info({ replica: this.replicaId, joined, left, live }, 'replicas changed');
      for (const cb of this.#memberListeners) {
        try {
          cb({ joined, left });
        } catch (err) {
          this.#log.error({ err: errorMessage(err) }, 'a membership listener failed');
        }
      }
    }
    if (left.length > 0) await this.#takeOver(left);
  }

  /**
   * The runs a departed replica was in the middle of (its leases are still in the table, run
   * out with its heartbeat): each is offered to its new owner at once rather than at its next
   * interval. Queued work it had not finished is found by the sweep.
   */
  async #takeOver(left: string[]): Promise<void> {
    const { rows } = await this.#pool.query<{ key: string }>(
      `SELECT key FROM pawl_cluster_leases WHERE holder = ANY($1::text[]) AND expires_at <= clock_timestamp()`,
      [left],
    );
    const mine = rows.filter((r) => this.owns(r.key)).map((r) => r.key);
    if (mine.length > 0)
      this.#log.info({ replica: this.replicaId, left, jobs: mine.length }, 'taking over interrupted runs');
    for (const key of mine) this.#offer(key, 'takeover');
  }

  /**
   * Queued work no live lease covers. This replica's own keys once they have waited a heartbeat
   * (or all of them after a notification may have been missed); anyone's once they have waited
   * several lease lifetimes, in case their owner is alive but not getting to them.
   */
  async #sweep(): Promise<void> {
    const all = this.#sweepAll;
    this.#sweepAll = false;
    const { rows } = await this.#pool.query<{ key: string; waited: boolean; stale: boolean }>(
      `SELECT w.key,
              w.updated_at < clock_timestamp() - make_interval(secs => $1) AS waited,
              w.updated_at < clock_timestamp() - make_interval(secs => $2) AS stale
         FROM pawl_cluster_work w
        WHERE NOT EXISTS (SELECT 1 FROM pawl_cluster_leases l
                           WHERE l.key = w.key AND l.expires_at > clock_timestamp())
        ORDER BY w.first_at
        LIMIT 1000`,
      [secs(this.heartbeatMs), secs(STALE_WORK_LEASES * this.leaseTtlMs)],
    );
    for (const r of rows) if (r.stale || ((r.waited || all) && this.owns(r.key))) this.#offer(r.key, 'sweep');
  }

  async #ensureListening(): Promise<void> {
    if (this.#listener || this.#closed) return;
    this.#listening ??= (async () => {
      const conn = await this.opts.listen();
      const drop = (why: string) => {
        if (this.#listener !== conn) return;
        this.#listener = null;
        this.#sweepAll = true;
        if (!this.#closed) this.#log.warn({ replica: this.replicaId, why }, 'lost the LISTEN connection');
        conn.end().catch(() => undefined);
      };
      conn.on('error', (err) => drop(errorMessage(err)));
      conn.on('end', () => drop('closed'));
      conn.on('notification', (msg) => {
        if (msg.channel === WORK_CHANNEL && msg.payload) {
          const key = msg.payload;
          if (this.owns(key) || this.holds(key)) this.#offer(key, 'notify');
        } else if (msg.channel === MEMBERS_CHANNEL && msg.payload !== this.replicaId) {
          void this.#tick();
        }
      });
      await conn.query(`LISTEN ${WORK_CHANNEL}`);
      await conn.query(`LISTEN ${MEMBERS_CHANNEL}`);
      this.#listener = conn;
    })().finally(() => (this.#listening = null));
    await this.#listening;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    await this.#ticking?.catch(() => undefined);
    for (const h of [...this.#held.values()]) h.controller.abort(new Error('the replica is stopping'));
    this.#held.clear();
    try {
      // Leaving cleanly: the others take this replica's keys at their next heartbeat, not after the TTL.
      await this.#pool.query(
        `WITH gone AS (DELETE FROM pawl_cluster_leases WHERE holder = $1),
              me AS (DELETE FROM pawl_cluster_replicas WHERE id = $1)
         SELECT pg_notify($2, $1)`,
        [this.replicaId, MEMBERS_CHANNEL],
      );
    } catch (err) {
      this.#log.debug({ err: errorMessage(err) }, 'cannot deregister this replica; its heartbeat runs out');
    }
    await this.#listener?.end().catch(() => undefined);
    this.#listener = null;
    if (this.opts.ownsPool) await this.#pool.end().catch(() => undefined);
  }
}

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`lost the lease on ${key}: ${reason}`);
  }
}

/**
 * A coordinator with its own small pool and LISTEN connection to the database. `base`: the
 * store's connection settings (URL with its password, schema search path), so the coordinator's
 * tables sit beside the store's.
 */
export function connectPostgresCoordinator(
  base: pg.ClientConfig,
  opts: Omit<PostgresCoordinatorOptions, 'pool' | 'listen' | 'ownsPool'>,
): PostgresCoordinator {
  const heartbeat = Math.min(
    opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    (opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS) / 3,
  );
  // An unreachable database fails a heartbeat within one period instead of hanging it.
  const bound = Math.max(1000, heartbeat);
  const config: pg.ClientConfig = {
    ...base,
    application_name: 'pawl-replica',
    connectionTimeoutMillis: bound,
    query_timeout: bound,
    statement_timeout: bound,
  };
  const pool = new pg.Pool({ ...config, max: 3, idleTimeoutMillis: 60_000 });
  pool.on('error', (err) => opts.log.debug({ err: errorMessage(err) }, 'an idle database connection failed'));
  // A checked-out connection the server closes between statements must not crash the process.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const listen = async (): Promise<ListenConnection> => {
    const { query_timeout: _q, statement_timeout: _s, ...rest } = config;
    const client = new pg.Client({ ...rest, keepAlive: true });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
  return new PostgresCoordinator({ ...opts, pool, listen, ownsPool: true });
}
