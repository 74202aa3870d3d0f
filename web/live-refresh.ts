/**
 * When the page re-renders for the daemon's live events. Events ask for a refresh; refreshes come
 * at most every `everyMs` (a repository scanned every second must not re-render every second),
 * and a refresh never starts while a render is in progress. Under load a render (its request to
 * the admin API included) can take longer than the interval: if each refresh started anyway, the
 * newer render would discard the one before it, again and again, and the page would show
 * nothing new for as long as events kept coming.
 */
export interface RefreshTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
}

/** The shortest wait before a refresh: events that arrive together make one. */
const GATHER_MS = 150;

export class LiveRefresh {
  #pending = false;
  #last = 0;
  #inProgress: Promise<void> | undefined;

  constructor(
    private readonly refresh: () => Promise<void>,
    private readonly timers: RefreshTimers,
  ) {}

  /** Runs a render (a navigation's, or a refresh's) as the one in progress. */
  run(render: () => Promise<void>): Promise<void> {
    const p: Promise<void> = render().finally(() => {
      if (this.#inProgress === p) this.#inProgress = undefined;
    });
    this.#inProgress = p;
    return p;
  }

  /** An event concerns the view: refresh it soon, once, however many events come meanwhile. */
  request(everyMs: number): void {
    if (this.#pending) return;
    this.#pending = true;
    const wait = Math.max(GATHER_MS, this.#last + everyMs - this.timers.now());
    this.timers.setTimeout(() => void this.#fire(), wait);
  }

  async #fire(): Promise<void> {
    while (this.#inProgress) await this.#inProgress.catch(() => undefined);
    this.#pending = false;
    this.#last = this.timers.now();
    await this.run(this.refresh).catch(() => undefined);
  }
}
