/**
 * Per-registry state shared by every client and repository in the process: a limit on
 * concurrent requests, a request rate (GCRA, so waits are computed once rather than polled),
 * a rate-limit block learnt from 429s and Docker Hub's `RateLimit-*` headers, and a circuit
 * breaker that stops contacting a registry that keeps failing, with a cool-down that doubles.
 */
import type { ResponseHeaders } from './transport.js';
import { setTimeout as delay } from 'node:timers/promises';
import { isLoopbackHost } from './reference.js';

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = async (ms, signal) => {
  if (ms <= 0) return;
  await delay(ms, undefined, signal ? { signal } : {});
};

export interface RegistryLimits {
  /** Requests in flight per registry host. */
  maxConcurrent: number;
  /** Sustained requests per second per registry host (bursts up to this many). */
  requestsPerSecond: number;
  /** Retries of one request after a network error, a 5xx or a 429. */
  maxRetries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Tags requested per page (`n`). */
  pageSize: number;
  /** A listing with more pages or tags than this fails (a runaway or looping registry). */
  maxPages: number;
  maxTags: number;
  /** Failed operations in a row (after their retries) before the registry is backed off. */
  breakerThreshold: number;
  /** First back-off; doubles each time the registry fails again right after, up to the max. */
  breakerCooldownMs: number;
  breakerMaxCooldownMs: number;
}

export const DEFAULT_LIMITS: RegistryLimits = {
  maxConcurrent: 8,
  requestsPerSecond: 50,
  maxRetries: 4,
  backoffBaseMs: 500,
  backoffMaxMs: 30_000,
  pageSize: 1000,
  maxPages: 500,
  maxTags: 200_000,
  breakerThreshold: 5,
  breakerCooldownMs: 60_000,
  breakerMaxCooldownMs: 30 * 60_000,
};

export class RegistryBackoffError extends Error {
  override name = 'RegistryBackoffError';
  constructor(
    message: string,
    readonly until: Date,
  ) {
    super(message);
  }
}

export class HostState {
  private inFlight = 0;
  private readonly waiters: (() => void)[] = [];
  /** GCRA theoretical arrival time, ms. */
  private tat = 0;
  private failures = 0;
  private lastFailure = '';
  private openUntil = 0;
  private cooldown: number;
  /** Set from 429 / `RateLimit-Remaining: 0`: no request before this. */
  blockedUntil = 0;
  blockedReason = '';

  constructor(
    readonly host: string,
    readonly limits: RegistryLimits,
    private readonly now: () => number,
  ) {
    this.cooldown = limits.breakerCooldownMs;
  }

  /** Throws when the breaker is open. */
  checkBreaker(): void {
    const now = this.now();
    if (now < this.openUntil) {
      const until = new Date(this.openUntil);
      throw new RegistryBackoffError(
        `${this.host} failed ${this.failures} times in a row (last: ${this.lastFailure}); ` +
          `pawl is leaving it alone until ${until.toISOString()}`,
        until,
      );
    }
  }

  recordSuccess(): void {
    this.failures = 0;
    this.openUntil = 0;
    this.cooldown = this.limits.breakerCooldownMs;
  }

  /** An operation failed for a reason that is the registry's (network, 5xx, 429, timeout). */
  recordFailure(reason: string): void {
    this.failures++;
    this.lastFailure = reason;
    if (this.failures >= this.limits.breakerThreshold) {
      const wasOpen = this.openUntil > 0;
      if (wasOpen) this.cooldown = Math.min(this.cooldown * 2, this.limits.breakerMaxCooldownMs);
      this.openUntil = this.now() + this.cooldown;
    }
  }

  /** How long until a request may be sent under the rate limit; reserves the slot. */
  private reserveRate(): number {
    const interval = 1000 / this.limits.requestsPerSecond;
    const burst = interval * Math.max(0, this.limits.requestsPerSecond - 1);
    const now = this.now();
    const tat = Math.max(this.tat, now);
    const wait = Math.max(0, tat - burst - now);
    this.tat = tat + interval;
    return wait;
  }

  /** Waits for a concurrency slot and the rate limit; returns the release function. */
  async acquire(sleep: Sleep, signal?: AbortSignal): Promise<() => void> {
    if (this.inFlight >= this.limits.maxConcurrent) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          const i = this.waiters.indexOf(go);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(signal!.reason as Error);
        };
        const go = (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        this.waiters.push(go);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    } else {
      this.inFlight++;
    }
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.inFlight--;
    };
    try {
      const wait = this.reserveRate();
      if (wait > 0) await sleep(wait, signal);
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }
}

/**
 * Process-wide by default (`defaultRegistryPool`), so limits and back-off hold per registry
 * host across repositories, clients and scans.
 */
export class RegistryPool {
  private readonly hosts = new Map<string, HostState>();
  readonly limits: RegistryLimits;
  readonly now: () => number;

  constructor(opts: { limits?: Partial<RegistryLimits>; now?: () => number } = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.now = opts.now ?? Date.now;
  }

  /** `origin` is `https://host[:port]`. */
  host(origin: string): HostState {
    let h = this.hosts.get(origin);
    if (!h) {
      const host = new URL(origin).host;
      // The request rate limit is politeness towards shared registries; a registry on loopback
      // is the user's own (a mirror, a port-forward, a test) and only the concurrency cap holds.
      const limits = isLoopbackHost(host)
        ? { ...this.limits, requestsPerSecond: Math.max(this.limits.requestsPerSecond, LOOPBACK_RATE) }
        : this.limits;
      this.hosts.set(origin, (h = new HostState(host, limits, this.now)));
    }
    return h;
  }
}

/** Requests per second allowed to a registry on loopback. */
export const LOOPBACK_RATE = 10_000;

export const defaultRegistryPool = new RegistryPool();
const poolsByLimits = new Map<string, RegistryPool>();

/**
 * The process-wide pool for these limits: clients created with the same limits share
 * per-registry state; no limits means `defaultRegistryPool`.
 */
export function sharedRegistryPool(limits?: Partial<RegistryLimits>): RegistryPool {
  if (!limits || Object.keys(limits).length === 0) return defaultRegistryPool;
  const key = JSON.stringify(Object.entries(limits).sort(([a], [b]) => a.localeCompare(b)));
  let pool = poolsByLimits.get(key);
  if (!pool) poolsByLimits.set(key, (pool = new RegistryPool({ limits })));
  return pool;
}

/** Exponential back-off with "equal jitter": half fixed, half random. */
export function backoffMs(
  attempt: number,
  limits: Pick<RegistryLimits, 'backoffBaseMs' | 'backoffMaxMs'>,
  random: () => number = Math.random,
): number {
  const exp = Math.min(limits.backoffMaxMs, limits.backoffBaseMs * 2 ** attempt);
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** `Retry-After`: delta seconds or an HTTP date; ms from now, or undefined. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}

/**
 * Docker Hub's `RateLimit-Remaining: 76;w=21600` and the IETF draft's `RateLimit-Reset`
 * (delta seconds; an epoch when it is implausibly large for a delta).
 */
export function parseRateLimit(
  headers: Pick<ResponseHeaders, 'get'>,
  now: number,
): { remaining?: number; resetInMs?: number } {
  const out: { remaining?: number; resetInMs?: number } = {};
  const rem = headers.get('ratelimit-remaining');
  if (rem) {
    const n = Number(rem.split(';')[0]!.trim());
    if (Number.isFinite(n)) out.remaining = n;
  }
  const reset = headers.get('ratelimit-reset') ?? headers.get('x-ratelimit-reset');
  if (reset) {
    const n = Number(reset.split(';')[0]!.trim());
    if (Number.isFinite(n)) out.resetInMs = n > 1e9 ? Math.max(0, n * 1000 - now) : n * 1000;
  }
  return out;
}
