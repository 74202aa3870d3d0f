/**
 * How replicas of `pawl serve` share work (docs/replicas.md): a lease per job key (one replica
 * runs a scan or a pass at a time), a heartbeat per replica (who is alive), and a queue of
 * webhook work that wakes the replica that will do it. One process on SQLite uses the
 * LocalCoordinator (always granted, wake-ups in process); several on PostgreSQL the
 * PostgresCoordinator. The daemon sees only this interface.
 */

/** A claim on one job key, held until released or lost. */
export interface Lease {
  readonly key: string;
  /** A fencing token: a new holder always has a larger one. */
  readonly token: string;
  readonly acquiredAt: Date;
  /** Aborted when the lease is lost (not renewed in time, or the database says another holds it). */
  readonly signal: AbortSignal;
}

/** Webhook work queued for a job key, coalesced: one entry per key however many events arrived. */
export interface WorkItem {
  key: string;
  /** The repositories (`ns/name`) the events named, to be rescanned before the pass. */
  repositories: string[];
  /**
   * The pushed tags the events named (`ns/name:tag`): until the registry lists each of them, the
   * run scans again shortly (a registry may notify before its tag list shows the tag).
   */
  tags: string[];
  /** When the first of the coalesced events arrived (ms since the epoch, the publisher's clock). */
  firstAt: number;
  /**
   * When the newest of the coalesced events arrived, where the coordinator keeps it (this
   * process's queue does; the PostgreSQL queue and work read back from the journal after a
   * restart do not); absent when not known. A publisher sets it to the event's `firstAt`.
   */
  lastAt?: number;
  events: number;
}

/** What a job run took from the queue; acknowledged once the run has done it. */
export interface TakenWork extends WorkItem {
  version: string;
}

export interface ReplicaInfo {
  id: string;
  host: string;
  pid: number;
  startedAt: Date;
  heartbeatAt: Date;
  /** When its heartbeat runs out: a replica past this is dead, and its leases with it. */
  expiresAt: Date;
  live: boolean;
  /** Leases it holds (as of this replica's last heartbeat). */
  claims: number;
  self: boolean;
}

export interface ClaimInfo {
  key: string;
  token: string;
  acquiredAt: Date;
  /** When the database last confirmed it. */
  renewedAt: Date;
}

export interface MembershipChange {
  joined: string[];
  left: string[];
}

/**
 * Why work is offered to this replica: a notification, a sweep of queued work no one ran, or a
 * run a departed replica left unfinished.
 */
export type WorkSource = 'notify' | 'sweep' | 'takeover';

export interface Coordinator {
  readonly kind: 'local' | 'postgres';
  readonly replicaId: string;
  /** The lease time to live and heartbeat period, ms (for status pages). */
  readonly leaseTtlMs: number;
  readonly heartbeatMs: number;
  /** Registers this replica (migrating the tables first) and starts its heartbeat. */
  start(): Promise<void>;
  /**
   * Claims `key` for this replica: a lease, or null when another live replica holds it. Throws
   * when the database cannot be reached (the caller retries later; nothing is run meanwhile).
   */
  claim(key: string, ttlMs?: number): Promise<Lease | null>;
  /** Confirms the lease now; false (and its signal aborted) when it is lost. */
  renew(lease: Lease): Promise<boolean>;
  release(lease: Lease): Promise<void>;
  /** Queues webhook work and wakes the replicas; throws when it could not be queued. */
  publish(items: WorkItem[]): Promise<void>;
  /** The work queued for the lease's key (null when none); call while holding the lease. */
  take(lease: Lease): Promise<TakenWork | null>;
  /**
   * Marks taken work done. False when more work arrived meanwhile (it stays queued, less the
   * events taken: run again) or the lease was lost (the new holder will do it).
   */
  ack(lease: Lease, work: TakenWork): Promise<boolean>;
  /**
   * Offers, through `onWork`, the work a previous process accepted and did not finish, once the
   * daemon's jobs exist. Only a coordinator whose queue outlives its process in a journal it
   * reads at start (the LocalCoordinator on SQLite) has it; PostgreSQL replicas find such work
   * by their sweep.
   */
  resume?(): void;
  /** Called with a job key when this replica should run it now. Returns an unsubscribe. */
  onWork(cb: (key: string, source: WorkSource) => void): () => void;
  /** Called when replicas join or leave (their heartbeat ran out). */
  onMembership(cb: (change: MembershipChange) => void): () => void;
  /** Called when the database becomes reachable again after an outage. */
  onRecovered(cb: () => void): () => void;
  /**
   * Called when this replica becomes the one that acts (Kubernetes mode's leader Lease): every
   * job is then due. Only a coordinator that elects a leader has it.
   */
  onElected?(cb: () => void): () => void;
  /** Is this replica the preferred owner of `key` among the live replicas (rendezvous hashing)? */
  owns(key: string): boolean;
  /** Does this replica hold a lease on `key` now? */
  holds(key: string): boolean;
  /** Live and recently seen replicas, as of the last heartbeat. */
  replicas(): ReplicaInfo[];
  /** The leases this replica holds. */
  claims(): ClaimInfo[];
  /** The last heartbeat reached the database (false while it is unreachable). */
  readonly healthy: boolean;
  readonly lastHeartbeat: Date | null;
  /** Releases every lease, removes this replica from the live set, closes connections. */
  close(): Promise<void>;
}
