/**
 * Every job runs under its coordinator's lease, here and nowhere else. A run on its interval
 * goes ahead only on the job's preferred owner, any run only with the lease, and a lost lease
 * aborts the run's signal (which `pushWithRetry` checks before every push). The webhook work
 * queued for a job is taken and acknowledged under the same lease.
 */
import { errorMessage, type Logger } from '../../util/index.js';
import type { Coordinator, Lease, TakenWork } from '../cluster/index.js';
import type { ServeMetrics } from '../metrics.js';
import type { RunContext } from '../scheduler.js';

/** Why a run did nothing: another replica is the preferred owner, or holds the lease now. */
export type SkipReason = 'not-owner' | 'held';

/** A run holding its job's lease. */
export interface Claimed {
  /** The run's own signal and the lease's: aborted on timeout, on stop, or when the lease is lost. */
  signal: AbortSignal;
  lease: Lease;
  /** The webhook work queued for the job (null when none). */
  take(): Promise<TakenWork | null>;
  /** Marks taken work done; when more arrived meanwhile, one more run takes it. */
  done(work: TakenWork | null): Promise<void>;
}

export interface JobLeasesDeps {
  coordinator: Coordinator;
  metrics: ServeMetrics;
  log: Logger;
  /** Asks the scheduler for one more run of the job. */
  request(key: string): void;
}

export class JobLeases {
  /** Why each job's last run did nothing (cleared when it runs): for the API and reconcile through. */
  readonly #skipped = new Map<string, SkipReason>();

  constructor(private readonly deps: JobLeasesDeps) {}

  skipped(key: string): SkipReason | null {
    return this.#skipped.get(key) ?? null;
  }

  /** A run on schedule is the preferred owner's; the others skip it without waiting for a slot. */
  admit(key: string): boolean {
    if (this.deps.coordinator.owns(key)) return true;
    this.#skipped.set(key, 'not-owner');
    return false;
  }

  /**
   * Runs `fn` holding the job's lease. A run by the clock or a retry is this replica's only when
   * it is the job's preferred owner; a request (a webhook, reconcile through, a takeover) claims
   * whatever the owner.
   */
  async run(key: string, ctx: RunContext, fn: (claimed: Claimed) => Promise<void>): Promise<void> {
    const { coordinator, metrics, log } = this.deps;
    if (ctx.trigger !== 'request' && !coordinator.owns(key)) {
      this.#skipped.set(key, 'not-owner');
      return;
    }
    let lease: Lease | null;
    try {
      lease = await coordinator.claim(key);
    } catch (err) {
      metrics.claims.inc({ outcome: 'error' });
      throw new Error(
        `cannot claim ${key}: the database is unreachable (${errorMessage(err)}); nothing runs until it returns`,
      );
    }
    if (!lease) {
      metrics.claims.inc({ outcome: 'held' });
      this.#skipped.set(key, 'held');
      log.debug({ job: key }, 'another replica holds this job');
      return;
    }
    metrics.claims.inc({ outcome: 'granted' });
    this.#skipped.delete(key);
    const held = lease;
    ctx.follow(held.signal);
    try {
      await fn({
        signal: ctx.signal,
        lease: held,
        take: () => coordinator.take(held),
        done: (work) => this.#ack(key, held, work),
      });
    } finally {
      if (held.signal.aborted) metrics.leasesLost.inc();
      await coordinator.release(held);
    }
  }

  async #ack(key: string, lease: Lease, work: TakenWork | null): Promise<void> {
    if (!work) return;
    const done = await this.deps.coordinator.ack(lease, work).catch(() => false);
    if (!done && !lease.signal.aborted) this.deps.request(key);
  }
}
