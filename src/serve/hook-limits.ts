/**
 * What a webhook request may hold while its body arrives. Anyone who can reach `--listen` can
 * open requests, so an unverified upload gets little: a place among a bounded number per peer
 * address and in all, for at most the body deadline, and it gives that place back however it
 * ends (complete, closed by the sender, timed out, failed). The cap on work (`maxInFlight`)
 * applies only once a body is complete, so uploads never take the places verified requests need.
 */

export interface UploadLimitOptions {
  /** Uploads open at once from one address. */
  perPeer: number;
  /** Uploads open at once in all (each holds at most MAX_WEBHOOK_BODY_BYTES). */
  total: number;
  /** Called with the number open whenever it changes (the metrics gauge). */
  onChange?: (open: number) => void;
}

/** One admitted upload; `release` is idempotent, so every way a request ends may call it. */
export interface Upload {
  /** False once released. */
  readonly open: boolean;
  release(): void;
}

export class UploadLimits {
  readonly #byPeer = new Map<string, number>();
  #total = 0;
  constructor(private readonly opts: UploadLimitOptions) {}

  get open(): number {
    return this.#total;
  }

  /** A place for one more upload from `peer`, or null when that peer or everyone is at the limit. */
  admit(peer: string): Upload | null {
    const mine = this.#byPeer.get(peer) ?? 0;
    if (mine >= this.opts.perPeer || this.#total >= this.opts.total) return null;
    this.#byPeer.set(peer, mine + 1);
    this.#total++;
    this.opts.onChange?.(this.#total);
    let open = true;
    return {
      get open() {
        return open;
      },
      release: () => {
        if (!open) return;
        open = false;
        const left = (this.#byPeer.get(peer) ?? 1) - 1;
        // An address that has nothing open is forgotten: the map is bounded by `total`.
        if (left <= 0) this.#byPeer.delete(peer);
        else this.#byPeer.set(peer, left);
        this.#total--;
        this.opts.onChange?.(this.#total);
      },
    };
  }
}
