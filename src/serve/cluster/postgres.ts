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
import { claimsOf, Listeners, type Held } from './held.js';
import { migrateCluster } from './migrations.js';
import { MEMBERS_CHANNEL, ReplicaTables } from './postgres-leases.js';
import { Listener, type ListenConnection } from './postgres-listen.js';
import { PostgresWorkQueue, WORK_CHANNEL } from './postgres-work.js';
import { preferredOwner } from './rendezvous.js';
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

export { MEMBERS_CHANNEL } from './postgres-leases.js';
export type { ListenConnection } from './postgres-listen.js';
export { WORK_CHANNEL } from './postgres-work.js';
export const DEFAULT_LEASE_TTL_MS = 30_000;
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** Queued work any replica may take once it has waited this many lease lifetimes. */
const STALE_WORK_LEASES = 4;

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

interface PostgresHeld extends Held {
  /** This process's clock when the last confirming query was sent. */
  confirmedAt: number;
}

export function defaultReplicaId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export class PostgresCoordinator implements Coordinator {
  readonly kind = 'postgres' as const;
  readonly replicaId: string;
  readonly leaseTtlMs: number;
  readonly heartbeatMs: number;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #startedAt: Date;
  readonly #tables: ReplicaTables;
  readonly #queue: PostgresWorkQueue;
  readonly #listener: Listener;
  readonly #held = new Map<string, PostgresHeld>();
  readonly #workListeners = new Listeners<[key: string, source: WorkSource]>();
  readonly #memberListeners = new Listeners<[change: MembershipChange]>();
  readonly #recoveredListeners = new Listeners<[]>();
  #live: string[] = [];
  #replicas: ReplicaInfo[] = [];
  #healthy = false;
  #everHealthy = false;
  #lastHeartbeat: Date | null = null;
  #timer: unknown = null;
  #ticking: Promise<void> | null = null;
  #again = false;
  #closed = false;
  /** Sweep all queued work of this replica's keys, not only the stale: notifications may have been missed. */
  #sweepAll = true;

  constructor(private readonly opts: PostgresCoordinatorOptions) {
    this.#log = opts.log;
    this.#clock = opts.clock ?? systemClock;
    this.replicaId = opts.replicaId ?? defaultReplicaId();
    this.leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.heartbeatMs = Math.min(opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, Math.floor(this.leaseTtlMs / 3));
    if (this.heartbeatMs < 1) throw new Error('the lease TTL is too short: it must be at least 3 ms');
    this.#startedAt = new Date(this.#clock.now());
    this.#tables = new ReplicaTables(opts.pool, this.replicaId);
    this.#queue = new PostgresWorkQueue(opts.pool, this.replicaId);
    this.#listener = new Listener({
      open: opts.listen,
      channels: [WORK_CHANNEL, MEMBERS_CHANNEL],
      onNotification: (channel, payload) => this.#notified(channel, payload),
      onDrop: (why) => {
        this.#sweepAll = true;
        if (!this.#closed) this.#log.warn({ replica: this.replicaId, why }, 'lost the LISTEN connection');
      },
    });
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  get lastHeartbeat(): Date | null {
    return this.#lastHeartbeat;
  }

  async start(): Promise<void> {
    const applied = await migrateCluster(this.opts.pool);
    if (applied.length > 0) this.#log.info({ versions: applied }, 'cluster tables migrated');
    await this.#tick();
    if (!this.#healthy) throw new Error('cannot register this replica in the database');
    await this.#tables.announce().catch(() => undefined);
    this.#schedule();
  }

  // ── leases ──────────────────────────────────────────────────────────────────────────────

  async claim(key: string, ttlMs?: number): Promise<Lease | null> {
    if (this.#closed || this.#held.has(key)) return null;
    let sentAt = this.#clock.now();
    // The lease runs out with this replica's heartbeat (or sooner, when asked).
    let row = await this.#tables.claim(key, ttlMs ?? this.leaseTtlMs);
    if (row === 'lapsed') {
      // This replica's heartbeat ran out (a stalled process, a slow database): it beats now
      // rather than at its next period — losing the leases it held — and claims once more. A
      // refusal here is not "another replica holds it": reported so, the run would be skipped
      // until its next interval, and with no one else running it the object would wait that long.
      await this.#tick();
      if (this.#closed || this.#held.has(key)) return null;
      sentAt = this.#clock.now();
      row = await this.#tables.claim(key, ttlMs ?? this.leaseTtlMs);
      if (row === 'lapsed') throw new ReplicaLapsedError(this.replicaId);
    }
    if (!row) return null;
    const controller = new AbortController();
    const lease = { key, token: row.token, acquiredAt: row.acquired_at, signal: controller.signal };
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
      await this.#tables.release(lease);
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

  publish(items: WorkItem[]): Promise<void> {
    return this.#queue.publish(items);
  }

  take(lease: Lease): Promise<TakenWork | null> {
    return this.#queue.take(lease);
  }

  ack(lease: Lease, work: TakenWork): Promise<boolean> {
    return this.#queue.ack(lease, work);
  }

  onWork(cb: (key: string, source: WorkSource) => void): () => void {
    return this.#workListeners.add(cb);
  }

  onMembership(cb: (change: MembershipChange) => void): () => void {
    return this.#memberListeners.add(cb);
  }

  onRecovered(cb: () => void): () => void {
    return this.#recoveredListeners.add(cb);
  }

  #offer(key: string, source: WorkSource): void {
    this.#workListeners.emit([key, source], (err) =>
      this.#log.error({ key, err: errorMessage(err) }, 'a work listener failed'),
    );
  }

  #notified(channel: string, payload: string | undefined): void {
    if (channel === WORK_CHANNEL && payload) {
      if (this.owns(payload) || this.holds(payload)) this.#offer(payload, 'notify');
    } else if (channel === MEMBERS_CHANNEL && payload !== this.replicaId) {
      void this.#tick();
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
    return claimsOf(this.#held.values());
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
      const { renewed, at } = await this.#tables.heartbeat(
        this.#startedAt,
        this.leaseTtlMs,
        held.map((h) => h.lease.token),
      );
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
      if (!this.#closed) await this.#listener.ensure();
      await this.#sweep();
      await this.#tables.prune().catch(() => undefined);
      if (!this.#healthy) {
        const recovered = this.#everHealthy;
        this.#healthy = true;
        this.#everHealthy = true;
        if (recovered) {
          this.#log.info({ replica: this.replicaId }, 'the database is reachable again');
          this.#recoveredListeners.emit([]);
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
    this.#replicas = await this.#tables.replicas();
    const live = this.#replicas.filter((r) => r.live).map((r) => r.id);
    const before = this.#live;
    this.#live = live;
    const joined = live.filter((id) => !before.includes(id));
    const left = before.filter((id) => !live.includes(id));
    if (before.length > 0 && (joined.length > 0 || left.length > 0)) {
      this.#log.info({ replica: this.replicaId, joined, left, live }, 'replicas changed');
      this.#memberListeners.emit([{ joined, left }], (err) =>
        this.#log.error({ err: errorMessage(err) }, 'a membership listener failed'),
      );
    }
    if (left.length > 0) await this.#takeOver(left);
  }

  /**
   * The runs a departed replica was in the middle of (its leases are still in the table, run
   * out with its heartbeat): each is offered to its new owner at once rather than at its next
   * interval. Queued work it had not finished is found by the sweep.
   */
  async #takeOver(left: string[]): Promise<void> {
    const mine = (await this.#tables.expiredLeases(left)).filter((key) => this.owns(key));
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
    const rows = await this.#queue.unleased(this.heartbeatMs, STALE_WORK_LEASES * this.leaseTtlMs);
    for (const r of rows) if (r.stale || ((r.waited || all) && this.owns(r.key))) this.#offer(r.key, 'sweep');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    await this.#ticking?.catch(() => undefined);
    for (const h of [...this.#held.values()]) h.controller.abort(new Error('the replica is stopping'));
    this.#held.clear();
    try {
      await this.#tables.leave();
    } catch (err) {
      this.#log.debug({ err: errorMessage(err) }, 'cannot deregister this replica; its heartbeat runs out');
    }
    await this.#listener.close();
    if (this.opts.ownsPool) await this.opts.pool.end().catch(() => undefined);
  }
}

/** A claim by a replica whose heartbeat has run out and could not be renewed: the run is retried. */
export class ReplicaLapsedError extends Error {
  override name = 'ReplicaLapsedError';
  constructor(readonly replica: string) {
    super(
      `the heartbeat of replica ${replica} has run out and could not be renewed; it claims nothing until it can`,
    );
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
