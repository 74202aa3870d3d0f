/**
 * One `pawl serve` on its own (the SQLite store): every claim is granted unless this process
 * already holds the key, work wakes this process at once, and the only replica is this one —
 * the daemon behaves exactly as before replicas existed.
 *
 * The queue is kept in memory and, given a journal (the SQLite store's `serve_work` table),
 * written through to it: `publish` resolves only once the work is committed, so a webhook
 * answered 202 survives a crash; `start` reads back what a previous process left, and `resume`
 * wakes it once the daemon's jobs exist.
 */
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { WorkQueueStore } from '../../store/index.js';
import { claimsOf, Listeners, type Held } from './held.js';
import { mergeWork } from './work.js';
import type { ClaimInfo, Coordinator, Lease, ReplicaInfo, TakenWork, WorkItem, WorkSource } from './types.js';

interface Queued extends WorkItem {
  version: number;
}

export class LocalCoordinator implements Coordinator {
  readonly kind = 'local' as const;
  readonly replicaId: string;
  readonly leaseTtlMs = 0;
  readonly heartbeatMs = 0;
  readonly healthy = true;
  readonly #held = new Map<string, Held>();
  readonly #queue = new Map<string, Queued>();
  readonly #work = new Listeners<[key: string, source: WorkSource]>();
  readonly #startedAt: Date;
  /**
   * A local lease is lost only when the daemon stops, and then all of them at once: one
   * controller for every lease instead of one per claim (500 a pass; issue 27). Each run's
   * listener on it is removed when the run ends.
   */
  readonly #closing = new AbortController();
  #token = 0;
  #version = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly journal?: Pick<WorkQueueStore, 'putQueuedWork' | 'deleteQueuedWork' | 'queuedWork'>,
  ) {
    this.replicaId = `${hostname()}-${process.pid}`;
    this.#startedAt = new Date(now());
    // Up to one listener per run in progress (the scan slots and every automation).
    setMaxListeners(0, this.#closing.signal);
  }

  get lastHeartbeat(): Date {
    return new Date(this.now());
  }

  async start(): Promise<void> {
    for (const q of (await this.journal?.queuedWork()) ?? []) {
      this.#queue.set(q.key, q);
      this.#version = Math.max(this.#version, q.version);
    }
  }

  /** Offers the work a previous process accepted and did not finish (read by `start`). */
  resume(): void {
    for (const key of this.#queue.keys()) this.#work.emit([key, 'takeover']);
  }

  async claim(key: string): Promise<Lease | null> {
    if (this.#held.has(key)) return null;
    const controller = this.#closing;
    const lease: Lease = {
      key,
      token: String(++this.#token),
      acquiredAt: new Date(this.now()),
      signal: controller.signal,
    };
    this.#held.set(key, { lease, controller, renewedAt: lease.acquiredAt });
    return lease;
  }

  async renew(lease: Lease): Promise<boolean> {
    const held = this.#held.get(lease.key);
    if (held?.lease !== lease) return false;
    held.renewedAt = new Date(this.now());
    return true;
  }

  async release(lease: Lease): Promise<void> {
    if (this.#held.get(lease.key)?.lease === lease) this.#held.delete(lease.key);
  }

  async publish(items: WorkItem[]): Promise<void> {
    for (const item of items) {
      this.#queue.set(item.key, { ...mergeWork(this.#queue.get(item.key), item), version: ++this.#version });
    }
    const keys = [...new Set(items.map((i) => i.key))];
    // Committed before the webhook is answered. Written in the order the queue changes (the
    // SQLite store writes when called), so a later ack's delete never overtakes this write. When
    // it fails the sender is told to retry; the work queued here in memory runs anyway.
    await this.journal?.putQueuedWork(keys.flatMap((k) => this.#queue.get(k) ?? []));
    for (const key of keys) this.#work.emit([key, 'notify']);
  }

  async take(lease: Lease): Promise<TakenWork | null> {
    const q = this.#queue.get(lease.key);
    return q
      ? { ...q, repositories: [...q.repositories], tags: [...q.tags], version: String(q.version) }
      : null;
  }

  async ack(lease: Lease, work: TakenWork): Promise<boolean> {
    const q = this.#queue.get(lease.key);
    if (!q) return true;
    if (String(q.version) !== work.version) {
      // Those events are done; the ones that came after stay for the next run.
      q.events = Math.max(1, q.events - work.events);
      await this.journal?.putQueuedWork([q]);
      return false;
    }
    this.#queue.delete(lease.key);
    await this.journal?.deleteQueuedWork(lease.key);
    return true;
  }

  onWork(cb: (key: string, source: WorkSource) => void): () => void {
    return this.#work.add(cb);
  }

  onMembership(): () => void {
    return () => undefined;
  }

  onRecovered(): () => void {
    return () => undefined;
  }

  owns(_key: string): boolean {
    return true;
  }

  holds(key: string): boolean {
    return this.#held.has(key);
  }

  replicas(): ReplicaInfo[] {
    const now = new Date(this.now());
    return [
      {
        id: this.replicaId,
        host: hostname(),
        pid: process.pid,
        startedAt: this.#startedAt,
        heartbeatAt: now,
        expiresAt: now,
        live: true,
        claims: this.#held.size,
        self: true,
      },
    ];
  }

  claims(): ClaimInfo[] {
    return claimsOf(this.#held.values());
  }

  async close(): Promise<void> {
    this.#closing.abort(new Error('the daemon is stopping'));
    this.#held.clear();
  }
}
