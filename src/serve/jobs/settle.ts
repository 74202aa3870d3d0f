/**
 * The one settle-retry rule of both jobs. A registry notifies as soon as the manifest is stored,
 * before it links the tag: the scan that follows may not list the pushed tag yet (Debian's
 * docker-registry does this under load), or the pass finds no candidate (`candidate-missing`,
 * or a selection that does not exist yet). Rather than leave the push to the next interval, the
 * job runs again shortly with the same webhooks: 100 ms, doubling, six times at most, and not
 * once the daemon is stopping.
 */
import type { Clock } from '../scheduler.js';

export const SETTLE_RETRIES = 6;
const SETTLE_FIRST_MS = 100;

export class SettleRetries {
  readonly #timers = new Set<unknown>();
  #closed = false;

  constructor(private readonly clock: Clock) {}

  /**
   * After the `retry`-th re-run of an episode (0: the first run), runs `again` after the next
   * delay and answers true; false when the retries are spent or the daemon is stopping.
   */
  later(retry: number, again: () => void): boolean {
    if (retry >= SETTLE_RETRIES || this.#closed) return false;
    const timer = this.clock.setTimeout(
      () => {
        this.#timers.delete(timer);
        again();
      },
      SETTLE_FIRST_MS * 2 ** retry,
    );
    this.#timers.add(timer);
    return true;
  }

  /** Stopping: the waiting re-runs are dropped (their work stays queued or comes again). */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers) this.clock.clearTimeout(t);
    this.#timers.clear();
  }
}
