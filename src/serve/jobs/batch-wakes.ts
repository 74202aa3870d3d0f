/**
 * A pass at each open commit batch's end (spec.git.commit.batch): the pass that opened the
 * batch reports when its write is due, and the daemon asks for a pass then, so the write waits
 * for no interval. One timer per automation, replaced by each pass; none once stopping (the
 * store keeps the batch, and the next start's first pass writes it).
 */
import type { Clock } from '../scheduler.js';

export class BatchWakes {
  readonly #timers = new Map<string, unknown>();
  #closed = false;

  constructor(
    private readonly clock: Clock,
    private readonly wake: (automation: string) => void,
  ) {}

  /** Wakes `automation` at `writesAt` (RFC 3339), replacing the wake asked for before; undefined: none. */
  at(automation: string, writesAt: string | undefined): void {
    const before = this.#timers.get(automation);
    if (before !== undefined) this.clock.clearTimeout(before);
    this.#timers.delete(automation);
    if (writesAt === undefined || this.#closed) return;
    const timer = this.clock.setTimeout(
      () => {
        this.#timers.delete(automation);
        this.wake(automation);
      },
      Math.max(0, Date.parse(writesAt) - this.clock.now()),
    );
    this.#timers.set(automation, timer);
  }

  /** Stopping: every wake dropped, none taken. */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers.values()) this.clock.clearTimeout(t);
    this.#timers.clear();
  }
}
