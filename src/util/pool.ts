/** Runs `fn` over `items` with at most `width` calls in flight; rejects with the first failure. */
export async function pool<T>(
  items: readonly T[],
  width: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}

/**
 * A counting semaphore: at most `size` calls of `run` in flight at once, the others waiting in
 * arrival order. The daemon's scans and passes each share one (a job waits here, not in a timer).
 */
export class Slots {
  #free: number;
  readonly #queue: (() => void)[] = [];
  constructor(size: number) {
    this.#free = Math.max(1, size);
  }
  /**
   * `fn` once a slot is free. Not an async function: every repository asked for at once (a start,
   * `pawl reconcile` of everything) waits here, and each suspended function held ~0.5 KB more
   * than its place in the queue (issue 27).
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) {
      this.#free--;
      return this.#go(fn);
    }
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(() => void this.#go(fn).then(resolve, reject));
    });
  }

  #go<T>(fn: () => Promise<T>): Promise<T> {
    let running: Promise<T>;
    try {
      running = fn();
    } catch (err) {
      running = Promise.reject(err as Error);
    }
    return running.finally(() => {
      const next = this.#queue.shift();
      if (next) next();
      else this.#free++;
    });
  }
}
