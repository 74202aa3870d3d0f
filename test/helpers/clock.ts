/** A manual clock for the scheduler: timers fire only when a test advances time. */
import type { Clock } from '../../src/serve/index.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now = 0;
  #next = 1;
  readonly #timers = new Map<number, Timer>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { id, at: this.#now + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promises settle between. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      await settle();
      const due = [...this.#timers.values()]
        .filter((t) => t.at <= end)
        .sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.#timers.delete(due.id);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
    }
    this.#now = end;
    await settle();
  }
}

/** Lets pending promise callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}
