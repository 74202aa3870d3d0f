import type { ClaimInfo, Lease } from './types.js';

/** A lease this process holds, with what aborts it when it is lost. */
export interface Held {
  lease: Lease;
  controller: AbortController;
  /** When it was last confirmed. */
  renewedAt: Date;
}

/** What `Coordinator.claims()` says of the leases held. */
export function claimsOf(held: Iterable<Held>): ClaimInfo[] {
  return [...held].map((h) => ({
    key: h.lease.key,
    token: h.lease.token,
    acquiredAt: h.lease.acquiredAt,
    renewedAt: h.renewedAt,
  }));
}

/** The subscribers of one kind of event (`onWork`, `onMembership`, …). */
export class Listeners<A extends unknown[]> {
  readonly #set = new Set<(...args: A) => void>();

  /** Returns the unsubscribe. */
  add(cb: (...args: A) => void): () => void {
    this.#set.add(cb);
    return () => this.#set.delete(cb);
  }

  /** Calls each; when `failed` is given, one that throws is passed to it and the rest still run. */
  emit(args: A, failed?: (err: unknown) => void): void {
    for (const cb of this.#set) {
      if (!failed) {
        cb(...args);
        continue;
      }
      try {
        cb(...args);
      } catch (err) {
        failed(err);
      }
    }
  }
}
