/**
 * Kubernetes mode's replicas (docs/kubernetes.md): one daemon acts, the one holding the
 * `coordination.k8s.io` Lease, as Flux's controllers elect a leader; the others watch and wait.
 * Each replica keeps its own SQLite store and queue (a LocalCoordinator underneath): while it
 * is not leading, every claim is refused, and losing the Lease aborts the runs in progress
 * (their pushes check the signal). Gaining it runs every job now, as a new controller reconciles
 * everything it watches.
 */
import type { LeaseElector } from '../../kube/index.js';
import { Listeners } from './held.js';
import type { LocalCoordinator } from './local.js';
import type { ClaimInfo, Coordinator, Lease, ReplicaInfo, TakenWork, WorkItem, WorkSource } from './types.js';

export class LeaderCoordinator implements Coordinator {
  readonly kind = 'local' as const;
  readonly leaseTtlMs = 0;
  readonly heartbeatMs = 0;
  readonly healthy = true;
  readonly #mine = new Map<Lease, { inner: Lease; controller: AbortController }>();
  readonly #elected = new Listeners<[]>();

  constructor(
    private readonly inner: LocalCoordinator,
    private readonly elector: LeaseElector,
    /** Closes what the elector talks through (its API client). */
    private readonly onClose: () => Promise<void> = async () => undefined,
  ) {}

  get replicaId(): string {
    return this.elector.identity;
  }

  get lastHeartbeat(): Date | null {
    return this.inner.lastHeartbeat;
  }

  /** Told when this replica becomes the leader; the daemon then asks every job for a run. */
  onElected(cb: () => void): () => void {
    return this.#elected.add(cb);
  }

  /** The elector reports a change of leadership. */
  leadingChanged(leading: boolean): void {
    if (leading) return this.#elected.emit([]);
    for (const { controller } of this.#mine.values())
      controller.abort(new Error('this replica lost the leader Lease'));
  }

  async start(): Promise<void> {
    await this.inner.start();
    this.elector.start();
  }

  resume(): void {
    this.inner.resume();
  }

  async claim(key: string): Promise<Lease | null> {
    if (!this.elector.leading) return null;
    const inner = await this.inner.claim(key);
    if (!inner) return null;
    const controller = new AbortController();
    const lease: Lease = { ...inner, signal: AbortSignal.any([inner.signal, controller.signal]) };
    this.#mine.set(lease, { inner, controller });
    return lease;
  }

  async renew(lease: Lease): Promise<boolean> {
    const m = this.#mine.get(lease);
    return m !== undefined && this.elector.leading && (await this.inner.renew(m.inner));
  }

  async release(lease: Lease): Promise<void> {
    const m = this.#mine.get(lease);
    this.#mine.delete(lease);
    if (m) await this.inner.release(m.inner);
  }

  publish(items: WorkItem[]): Promise<void> {
    return this.inner.publish(items);
  }

  take(lease: Lease): Promise<TakenWork | null> {
    const m = this.#mine.get(lease);
    return m ? this.inner.take(m.inner) : Promise.resolve(null);
  }

  async ack(lease: Lease, work: TakenWork): Promise<boolean> {
    const m = this.#mine.get(lease);
    return m !== undefined && (await this.inner.ack(m.inner, work));
  }

  onWork(cb: (key: string, source: WorkSource) => void): () => void {
    return this.inner.onWork(cb);
  }

  onMembership(): () => void {
    return () => undefined;
  }

  onRecovered(): () => void {
    return () => undefined;
  }

  /** Every job is the leader's. */
  owns(): boolean {
    return this.elector.leading;
  }

  /** A replica that no longer leads holds nothing: its runs are being aborted. */
  holds(key: string): boolean {
    return this.elector.leading && this.inner.holds(key);
  }

  replicas(): ReplicaInfo[] {
    return this.inner.replicas().map((r) => ({ ...r, id: this.replicaId }));
  }

  claims(): ClaimInfo[] {
    return this.inner.claims();
  }

  async close(): Promise<void> {
    await this.elector.stop();
    await this.inner.close();
    await this.onClose();
  }
}
