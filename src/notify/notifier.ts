/**
 * Delivery. `publish` routes events to Providers and returns at once; each Provider has its own
 * bounded queue and one worker that posts, retries with exponential backoff and jitter, and
 * moves on. A Provider that is down costs at most `queueSize` messages of memory (the oldest
 * are dropped and counted) and never delays a pass or another Provider.
 *
 * Rate limit as Flux's notification-controller (`--rate-limit-interval`, default 5m): an event
 * equal to one accepted within the interval — same object, reason, message and metadata — is
 * not sent again. Anything that changes makes it a new event.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/index.js';
import { errorMessage, silentLogger, type Logger } from '../util/index.js';
import type { AlertEvent } from './event.js';
import { credentialHeaders, payloadFor, rejectsBody, type Payload, type Target } from './payload.js';
import { RedirectError, postFollowing } from './redirect.js';
import { route } from './route.js';
import { resolveTarget } from './targets.js';
import { httpTransport, type AlertSender } from './transport.js';

/** Counters for serve's /metrics (prom-client counters fit behind this in one line each). */
export interface NotifyMetrics {
  /** A message the Provider accepted (2xx). */
  delivered(provider: string): void;
  /** A message given up on: attempts exhausted, a non-retryable answer, or an unusable Provider. */
  failed(provider: string): void;
  /** An attempt that will be tried again. */
  retried(provider: string): void;
  /** A queued message dropped to make room (the queue was full). */
  dropped(provider: string): void;
  /** An event not sent because an equal one was sent within the rate-limit interval. */
  suppressed(): void;
}

export const noMetrics: NotifyMetrics = {
  delivered: () => undefined,
  failed: () => undefined,
  retried: () => undefined,
  dropped: () => undefined,
  suppressed: () => undefined,
};

export interface NotifierOptions {
  config: Config;
  transport?: AlertSender;
  now?: () => Date;
  /** Waits between attempts; tests pass one they control. */
  sleep?: (ms: number) => Promise<void>;
  /** In [0, 1); jitter. */
  random?: () => number;
  metrics?: NotifyMetrics;
  log?: Logger;
  /** Messages waiting per Provider (default 100). */
  queueSize?: number;
  /** Attempts per message (default 5: Flux's retryablehttp tries once and retries 4 times). */
  attempts?: number;
  /** First backoff and its ceiling, in ms (default 1s and 30s, as retryablehttp). */
  backoff?: { minMs: number; maxMs: number };
  /** Flux's `--rate-limit-interval` (default 5 minutes). */
  rateLimitMs?: number;
  /** Distinct events remembered for the rate limit (default 10,000; the oldest go first). */
  rateLimitKeys?: number;
  /** `reportingController` (default `pawl`). */
  reportingController?: string;
  /** `reportingInstance` (default the host name, as Flux's recorder). */
  reportingInstance?: string;
}

interface Delivery {
  payload: Payload;
  /** For logs: `Kind/ns/name Reason`. */
  label: string;
}

interface ProviderQueue {
  target: Target;
  items: Delivery[];
  running: boolean;
  /** A drop was logged since the last delivery: a dead Provider logs once, not per event. */
  dropLogged: boolean;
}

export interface ProviderStats {
  queued: number;
  delivered: number;
  failed: number;
  retried: number;
  dropped: number;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Notifier {
  private readonly queues = new Map<string, ProviderQueue>();
  /** Providers that cannot be used (missing Secret, no address), with why. */
  readonly problems: string[] = [];
  private readonly broken = new Set<string>();
  private readonly sent = new Map<string, number>();
  private readonly counts = new Map<string, ProviderStats>();
  private readonly waiters: (() => void)[] = [];
  private closed = false;
  private readonly transport: AlertSender;
  private readonly now: () => Date;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly metrics: NotifyMetrics;
  private readonly log: Logger;
  private readonly queueSize: number;
  private readonly attempts: number;
  private readonly backoff: { minMs: number; maxMs: number };
  private readonly rateLimitMs: number;
  private readonly rateLimitKeys: number;
  private readonly reporting: { reportingController: string; reportingInstance: string };

  constructor(private readonly opts: NotifierOptions) {
    this.transport = opts.transport ?? httpTransport;
    this.now = opts.now ?? (() => new Date());
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
    this.metrics = opts.metrics ?? noMetrics;
    this.log = opts.log ?? silentLogger;
    this.queueSize = Math.max(1, opts.queueSize ?? 100);
    this.attempts = Math.max(1, opts.attempts ?? 5);
    this.backoff = opts.backoff ?? { minMs: 1000, maxMs: 30_000 };
    this.rateLimitMs = opts.rateLimitMs ?? 5 * 60_000;
    this.rateLimitKeys = opts.rateLimitKeys ?? 10_000;
    this.reporting = {
      reportingController: opts.reportingController ?? 'pawl',
      reportingInstance: opts.reportingInstance ?? hostname(),
    };
    for (const p of opts.config.providers.values()) {
      if (p.spec.suspend) continue;
      const r = resolveTarget(opts.config, p);
      const key = `${p.metadata.namespace}/${p.metadata.name}`;
      if (r.ok) this.queues.set(key, { target: r.target, items: [], running: false, dropLogged: false });
      else {
        this.problems.push(r.problem);
        this.broken.add(key);
        this.log.warn({ provider: key }, `${r.problem}; events for it are not sent`);
      }
    }
  }

  /**
   * Routes the events to the Providers of the Alerts they match and queues them. Returns before
   * anything is sent; never throws for a Provider's sake.
   */
  publish(events: AlertEvent | readonly AlertEvent[]): void {
    if (this.closed) return;
    const list: readonly AlertEvent[] = Array.isArray(events) ? events : [events as AlertEvent];
    for (const e of list) {
      if (this.rateLimited(e)) {
        this.metrics.suppressed();
        continue;
      }
      for (const d of route(this.opts.config, e, this.reporting)) {
        if (this.broken.has(d.provider)) {
          this.stat(d.provider).failed++;
          this.metrics.failed(d.provider);
          continue;
        }
        const q = this.queues.get(d.provider);
        if (!q) continue;
        const label = `${e.object.kind}/${e.object.namespace}/${e.object.name} ${e.reason}`;
        this.enqueue(q, { payload: payloadFor(q.target, d.event), label });
      }
    }
  }

  /** Resolves once every queue is empty and nothing is being sent. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops accepting events; what is queued is still tried. Resolves when all is done. */
  close(): Promise<void> {
    this.closed = true;
    return this.idle();
  }

  /** Per Provider: waiting messages and counters since start. */
  stats(): Record<string, ProviderStats> {
    const out: Record<string, ProviderStats> = {};
    for (const key of new Set([...this.queues.keys(), ...this.counts.keys()])) {
      out[key] = { ...this.stat(key), queued: this.queues.get(key)?.items.length ?? 0 };
    }
    return out;
  }

  private stat(provider: string): ProviderStats {
    let s = this.counts.get(provider);
    if (!s) this.counts.set(provider, (s = { queued: 0, delivered: 0, failed: 0, retried: 0, dropped: 0 }));
    return s;
  }

  private rateLimited(e: AlertEvent): boolean {
    const meta = Object.entries(e.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = createHash('sha256')
      .update(JSON.stringify([e.object.kind, e.object.namespace, e.object.name, e.reason, e.message, meta]))
      .digest('hex');
    const now = this.now().getTime();
    // Map order is insertion order and every hit re-inserts: the front holds the oldest.
    for (const [k, at] of this.sent) {
      if (now - at < this.rateLimitMs && this.sent.size <= this.rateLimitKeys) break;
      this.sent.delete(k);
    }
    const last = this.sent.get(key);
    if (last !== undefined && now - last < this.rateLimitMs) return true;
    this.sent.delete(key);
    this.sent.set(key, now);
    return false;
  }

  private enqueue(q: ProviderQueue, d: Delivery): void {
    if (q.items.length >= this.queueSize) {
      const dropped = q.items.shift()!;
      this.stat(q.target.provider).dropped++;
      this.metrics.dropped(q.target.provider);
      if (!q.dropLogged) {
        q.dropLogged = true;
        this.log.warn(
          { provider: q.target.provider, event: dropped.label },
          'notification queue full; dropping the oldest messages until the Provider accepts again',
        );
      }
    }
    q.items.push(d);
    if (!q.running) {
      q.running = true;
      // Started on a later tick: publish has returned before the first byte is sent.
      setImmediate(() => void this.work(q));
    }
  }

  private async work(q: ProviderQueue): Promise<void> {
    try {
      for (let d = q.items.shift(); d !== undefined; d = q.items.shift()) await this.deliver(q, d);
    } finally {
      q.running = false;
      if (this.isIdle()) for (const w of this.waiters.splice(0)) w();
    }
  }

  private async deliver(q: ProviderQueue, d: Delivery): Promise<void> {
    const t = q.target;
    const s = this.stat(t.provider);
    for (let attempt = 1; ; attempt++) {
      let problem: string;
      let retry: boolean;
      try {
        const res = await postFollowing(
          this.transport,
          {
            url: d.payload.url,
            headers: d.payload.headers,
            body: d.payload.body,
            timeoutMs: t.timeoutMs,
            ...(t.proxy ? { proxy: t.proxy } : {}),
            ...(t.ca ? { ca: t.ca } : {}),
            ...(t.cert && t.key ? { cert: t.cert, key: t.key } : {}),
          },
          credentialHeaders(t),
        );
        const rejected = res.status >= 200 && res.status < 300 ? rejectsBody(t, res.body) : null;
        if (res.status >= 200 && res.status < 300 && rejected === null) {
          s.delivered++;
          q.dropLogged = false;
          this.metrics.delivered(t.provider);
          return;
        }
        problem = rejected ?? `request failed with status code ${res.status}`;
        // retryablehttp's policy: 429 and 5xx (but 501) are worth another try; other 4xx are not.
        retry = rejected === null && (res.status === 429 || (res.status >= 500 && res.status !== 501));
      } catch (err) {
        problem = errorMessage(err);
        retry = !(err instanceof RedirectError);
      }
      if (!retry || attempt >= this.attempts) {
        s.failed++;
        this.metrics.failed(t.provider);
        this.log.warn(
          { provider: t.provider, event: d.label, attempts: attempt },
          `failed to send notification: ${this.mask(problem, t)}`,
        );
        return;
      }
      s.retried++;
      this.metrics.retried(t.provider);
      await this.sleep(this.delay(attempt));
    }
  }

  /** Exponential from `minMs`, capped at `maxMs`, each wait between half and all of it. */
  private delay(attempt: number): number {
    const full = Math.min(this.backoff.maxMs, this.backoff.minMs * 2 ** (attempt - 1));
    return Math.round(full / 2 + (full / 2) * this.random());
  }

  /** Errors may quote the URL (which can hold a token, like Slack's) or the token itself. */
  private mask(message: string, t: Target): string {
    let m = message.split(t.url).join('<address>');
    if (t.token) m = m.split(t.token).join('*****');
    return m;
  }

  private isIdle(): boolean {
    for (const q of this.queues.values()) if (q.running || q.items.length > 0) return false;
    return true;
  }
}
