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

/** `fn()`'s promise, a synchronous throw its rejection (`Promise.try`, which Node 20 lacks). */
export function promiseOf<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err as Error);
  }
}

/**
 * A counting semaphore: at most `size` runs at once, the others waiting in arrival order. The
 * daemon's scans and passes each share one (a job waits here, not in a timer): its scheduler
 * enters and leaves it (the scheduler's `Gate`), others call `run`.
 */
export class Slots {
  #free: number;
  readonly #queue: (() => void)[] = [];
  constructor(size: number) {
    this.#free = Math.max(1, size);
  }

  /** `go` once a slot is free: now, or when a run leaves. Whoever entered must `leave`. */
  enter(go: () => void): void {
    if (this.#free > 0) {
      this.#free--;
      go();
    } else this.#queue.push(go);
  }

  leave(): void {
    const next = this.#queue.shift();
    if (next) next();
    else this.#free++;
  }

  /** `fn` in a slot; its slot is left when it settles. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) =>
      this.enter(() => {
        // The slot is left before the caller hears: a call it makes next finds it free.
        promiseOf(fn).then(
          (v) => {
            this.leave();
            resolve(v);
          },
          (err: unknown) => {
            this.leave();
            reject(err as Error);
          },
        );
      }),
    );
  }
}
