/**
 * Rendezvous (highest random weight) hashing: each job key's preferred owner among the live
 * replicas. Every replica computes the same answer from the same member list, and when a
 * replica leaves only its own keys move (to whichever replica ranks next for each), so work
 * spreads evenly and a departure disturbs nobody else.
 */
import { createHash } from 'node:crypto';

function weight(key: string, replica: string): bigint {
  return createHash('sha256').update(replica).update('\0').update(key).digest().readBigUInt64BE(0);
}

/** The replica that should run `key`; null when there are none. Ties (never in practice) go to the smaller id. */
export function preferredOwner(key: string, replicas: readonly string[]): string | null {
  let best: string | null = null;
  let bestWeight = -1n;
  for (const r of replicas) {
    const w = weight(key, r);
    if (w > bestWeight || (w === bestWeight && best !== null && r < best)) {
      best = r;
      bestWeight = w;
    }
  }
  return best;
}

/** The keys whose preferred owner is `replica` among `after` but was not among `before`. */
export function gained(
  keys: Iterable<string>,
  replica: string,
  before: readonly string[],
  after: readonly string[],
): string[] {
  const out: string[] = [];
  for (const k of keys)
    if (preferredOwner(k, after) === replica && preferredOwner(k, before) !== replica) out.push(k);
  return out;
}
