/**
 * The registry client's exchanges: one operation's deadline (`Op`), and each request sent
 * through the per-registry pool (concurrency, rate, rate-limit blocks, circuit breaker) over
 * transport.ts, retried on network errors, 5xx and 429 within that deadline, recorded and
 * logged redacted. Authentication is auth.ts's; what the answers mean is the callers'.
 */
import { rootCertificates } from 'node:tls';
import type { Dispatcher } from 'undici';
import { type Secret, refKey } from '../../config/index.js';
import { Redactor, RuntimeError, silentLogger, type Logger } from '../../util/index.js';
import {
  backoffMs,
  parseRateLimit,
  parseRetryAfter,
  realSleep,
  RegistryBackoffError,
  sharedRegistryPool,
  type RegistryPool,
  type HostState,
  type RegistryLimits,
  type Sleep,
} from './pool.js';
import {
  BodyTooLarge,
  fetchTransport,
  loadUndici,
  undiciTransport,
  type Exchange,
  type RegistryTransport,
} from './transport.js';
import type { RecordedResponse, RepositoryRef } from './types.js';

/** A registry operation failed. Carries what the scanner records for a failed scan. */
export class RegistryError extends RuntimeError {
  override name = 'RegistryError';
  constructor(
    message: string,
    readonly requests: number,
    readonly responses: RecordedResponse[],
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface RecordOptions {
  /** Body bytes kept per recorded response (default 64 KiB). */
  maxBodyBytes: number;
  /** Responses kept per listing: the first ones, and always the last (default 20). */
  maxResponses: number;
}

/** The client's options that shape its exchanges (see RegistryClientOptions). */
export interface ExchangeOptions {
  log?: Logger;
  /** `spec.certSecretRef`: `ca.crt` (or `caFile`), optional client `tls.crt`/`tls.key` (`certFile`/`keyFile`). */
  caSecret?: Secret;
  /** Plain HTTP for every registry this client talks to (`spec.insecure`). */
  insecure?: boolean;
  /** Deadline of one operation, retries and waits included (default 60s, Flux's). */
  timeoutMs?: number;
  /** Per-registry limits: clients with equal limits share one process-wide pool (ignored with `pool`). */
  limits?: Partial<RegistryLimits>;
  /** Shared per-registry state; default: the process-wide pool. */
  pool?: RegistryPool;
  recordResponses?: RecordOptions;
  fetch?: typeof fetch;
  /** Told of every exchange with a registry (or its token service): the daemon's metrics. */
  onResponse?: (host: string, status: number | 'error') => void;
  sleep?: Sleep;
  random?: () => number;
}

/** One operation (a listing, a HEAD, a build time): its deadline, and what it has sent so far. */
export interface Op {
  what: string;
  signal: AbortSignal;
  /** Whether the deadline passed (the signal then aborted with a TimeoutError). */
  timedOut: boolean;
  timeoutMs: number;
  deadline: number;
  requests: number;
  responses: RecordedResponse[] | null;
  /** Page being fetched, for messages. */
  step: string;
  /** Clears the deadline's timer and lets go of the caller's signal (`run` calls it). */
  end: () => void;
}

/** What `AbortSignal.timeout` aborts with, so a deadline reads the same whoever set it. */
const timeoutReason = (): DOMException =>
  new DOMException('The operation was aborted due to timeout', 'TimeoutError');

export type Fetched = Exchange;

export function describeStatus(f: Fetched): string {
  let detail = '';
  try {
    const parsed = JSON.parse(f.body.toString('utf8')) as { errors?: { code?: string; message?: string }[] };
    const e = parsed.errors?.[0];
    if (e) detail = `: ${[e.code, e.message].filter(Boolean).join(' ')}`.slice(0, 300);
  } catch {
    // not the registry's JSON error format
  }
  return `${f.status} ${f.statusText}`.trim() + detail;
}

function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return `${err.message}: ${code ? `${code} ` : ''}${cause.message}`.slice(0, 300);
  }
  return err.message.slice(0, 300);
}

function secretText(s: Secret | undefined, ...keys: string[]): string | undefined {
  if (!s) return undefined;
  for (const k of keys) {
    const v = s.data[k];
    if (v) return v.toString('utf8');
  }
  return undefined;
}

/** The transport with `certSecretRef`'s TLS settings; a Secret that cannot be used throws. */
function tlsTransport(caSecret: Secret | undefined, givenFetch: typeof fetch | undefined): RegistryTransport {
  const ca = secretText(caSecret, 'ca.crt', 'caFile');
  const cert = secretText(caSecret, 'tls.crt', 'certFile');
  const key = secretText(caSecret, 'tls.key', 'keyFile');
  if (caSecret && !ca && !cert) {
    throw new RuntimeError(
      `Secret ${refKey(caSecret.metadata)} (certSecretRef) has no ca.crt, tls.crt or tls.key`,
    );
  }
  if ((cert && !key) || (key && !cert)) {
    throw new RuntimeError(
      `Secret ${refKey(caSecret!.metadata)} (certSecretRef) has ${cert ? 'tls.crt without tls.key' : 'tls.key without tls.crt'}`,
    );
  }
  // A CA is trusted beside the usual ones, as Flux adds ca.crt to the system pool: a TLS `ca`
  // option alone would replace them.
  const tls = { ...(ca ? { ca: [...rootCertificates, ca] } : {}), ...(cert && key ? { cert, key } : {}) };
  // A given fetch (tests, library callers) needs an undici Agent for the TLS settings, made on
  // its first request (npm undici is compiled only when a request is made).
  let agent: Promise<Dispatcher> | undefined;
  return givenFetch
    ? fetchTransport(
        givenFetch,
        caSecret
          ? () => (agent ??= loadUndici().then(({ Agent }) => new Agent({ connect: tls })))
          : undefined,
      )
    : undiciTransport(tls);
}

/** Sends a client's requests; shared by its authorization, tag listing and manifest reading. */
export class Exchanger {
  readonly log: Logger;
  readonly pool: RegistryPool;
  /** Every credential value the client learns is added, so no message or record shows it. */
  readonly redactor = new Redactor();
  private readonly transport: RegistryTransport;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly timeoutMs: number;

  constructor(private readonly opts: ExchangeOptions) {
    this.log = opts.log ?? silentLogger;
    this.pool = opts.pool ?? sharedRegistryPool(opts.limits);
    this.sleep = opts.sleep ?? realSleep;
    this.random = opts.random ?? Math.random;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.transport = tlsTransport(opts.caSecret, opts.fetch);
  }

  /** Origins by base URL: every request of every operation asks (a URL parse each, before). */
  readonly #origins = new Map<string, string>();

  origin(repo: RepositoryRef): string {
    let origin = this.#origins.get(repo.baseUrl);
    if (origin === undefined) {
      const u = new URL(repo.baseUrl);
      if (this.opts.insecure) u.protocol = 'http:';
      origin = u.origin;
      this.#origins.set(repo.baseUrl, origin);
    }
    return origin;
  }

  /**
   * An operation's deadline is one controller and one timer that `run` clears, not
   * `AbortSignal.timeout` and `AbortSignal.any`: those cost ~10 and ~8 µs each in a process that
   * is not optimised (a pass starts an operation per repository and per candidate), keep weak
   * references and finalizers for the collector, and leave the timer pending for the whole
   * timeout after the operation is done. The timer is ref'd: the deadline holds even when
   * nothing else keeps the process alive, and ends with the operation.
   */
  startOp(what: string, signal: AbortSignal | undefined, record: boolean): Op {
    const controller = new AbortController();
    const op: Op = {
      what,
      signal: controller.signal,
      timedOut: false,
      timeoutMs: this.timeoutMs,
      deadline: this.pool.now() + this.timeoutMs,
      requests: 0,
      responses: record ? [] : null,
      step: '',
      end: () => undefined,
    };
    const timer = setTimeout(() => {
      op.timedOut = true;
      controller.abort(timeoutReason());
    }, this.timeoutMs);
    if (!signal) {
      op.end = () => clearTimeout(timer);
      return op;
    }
    const onCaller = (): void => controller.abort(signal.reason);
    if (signal.aborted) onCaller();
    else signal.addEventListener('abort', onCaller, { once: true });
    op.end = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onCaller);
    };
    return op;
  }

  /**
   * Runs an operation's body: whatever it throws leaves as a RegistryError naming the operation.
   * The operation ends with it (its deadline's timer cleared).
   */
  async run<T>(op: Op, repo: RepositoryRef, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (err) {
      if (err instanceof RegistryError) {
        if (op.timedOut) this.pool.host(this.origin(repo)).recordFailure('timeout');
        throw err;
      }
      if (op.signal.aborted) throw this.abortError(op, err);
      if (err instanceof RuntimeError) throw this.fail(op, err.message);
      throw this.fail(op, `unexpected error: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      op.end();
    }
  }

  fail(op: Op, message: string, status?: number): RegistryError {
    return new RegistryError(
      this.redactor.text(`${op.what}: ${message}`),
      op.requests,
      op.responses ?? [],
      status,
    );
  }

  private abortError(op: Op, cause?: unknown): RegistryError {
    if (op.timedOut) {
      const secs = Math.round(op.timeoutMs / 100) / 10;
      return this.fail(
        op,
        `timed out after ${secs}s${op.step ? ` (during ${op.step})` : ''}; ${op.requests} request(s) made`,
      );
    }
    const reason = cause instanceof Error ? cause.message : 'aborted';
    return this.fail(op, `cancelled (${reason})`);
  }

  /** Waits `ms` unless that would cross the deadline, in which case it fails with `why`. */
  private async wait(op: Op, ms: number, why: string): Promise<void> {
    const left = op.deadline - this.pool.now();
    if (ms > left) {
      const until = new Date(this.pool.now() + ms).toISOString();
      throw this.fail(
        op,
        `${why}: asked to wait ${Math.ceil(ms / 1000)}s (until ${until}), more than the ${Math.max(0, Math.floor(left / 1000))}s left of the ${Math.round(op.timeoutMs / 1000)}s timeout`,
      );
    }
    try {
      await this.sleep(ms, op.signal);
    } catch (err) {
      throw this.abortError(op, err);
    }
  }

  private record(op: Op, method: string, f: Fetched, started: number, duration: number): void {
    if (!op.responses) return;
    const limits = this.opts.recordResponses ?? { maxBodyBytes: 64 << 10, maxResponses: 20 };
    const bodyText = f.body.subarray(0, limits.maxBodyBytes).toString('utf8');
    const rec: RecordedResponse = {
      method,
      url: this.redactor.url(f.url),
      status: f.status,
      headers: this.redactor.headers(f.headers),
      body:
        this.redactor.text(bodyText) +
        (f.body.length > limits.maxBodyBytes
          ? `\n… (${f.body.length - limits.maxBodyBytes} more bytes not kept)`
          : ''),
      at: new Date(started).toISOString(),
      durationMs: duration,
    };
    this.redactor.seal(rec);
    if (op.responses.length >= limits.maxResponses) op.responses[op.responses.length - 1] = rec;
    else op.responses.push(rec);
  }

  /**
   * One HTTP exchange with retries (network errors, truncated bodies, 5xx, 429) and the
   * pool's limits. Returns the final answer whatever its status; the body is read in full.
   */
  async send(
    op: Op,
    host: HostState,
    method: string,
    url: string,
    headers: Record<string, string>,
    maxBytes: number,
    requestBody?: string,
  ): Promise<Fetched> {
    const limits = this.pool.limits;
    let waited = false;
    for (let attempt = 0; ; attempt++) {
      if (op.signal.aborted) throw this.abortError(op);
      try {
        host.checkBreaker();
      } catch (err) {
        if (err instanceof RegistryBackoffError) throw this.fail(op, err.message);
        throw err;
      }
      const blockedFor = host.blockedUntil - this.pool.now();
      // After this request's own wait the block has been served (the clock may be a test's).
      if (blockedFor > 0 && !waited)
        await this.wait(op, blockedFor, `${host.host} is rate limited (${host.blockedReason})`);
      let release: () => void;
      try {
        release = await host.acquire(this.sleep, op.signal);
      } catch (err) {
        throw this.abortError(op, err);
      }
      const started = this.pool.now();
      let fetched: Fetched | undefined;
      let networkError: unknown;
      try {
        op.requests++;
        fetched = await this.transport(url, {
          method,
          headers,
          signal: op.signal,
          maxBytes,
          ...(requestBody !== undefined ? { body: requestBody } : {}),
        });
      } catch (err) {
        networkError = err;
      } finally {
        release();
      }
      this.opts.onResponse?.(host.host, networkError === undefined ? fetched!.status : 'error');
      const ms = this.pool.now() - started;
      if (networkError !== undefined) {
        if (op.signal.aborted) throw this.abortError(op, networkError);
        if (networkError instanceof BodyTooLarge)
          throw this.fail(op, `${method} ${this.redactor.url(url)}: ${networkError.message}`);
        const why = describeNetworkError(networkError);
        this.log.debug(
          { method, url: this.redactor.url(url), error: this.redactor.text(why), ms },
          'registry request failed',
        );
        if (attempt >= limits.maxRetries) {
          host.recordFailure(why);
          throw this.fail(
            op,
            `${method} ${this.redactor.url(url)} failed after ${attempt + 1} attempts: ${this.redactor.text(why)}`,
          );
        }
        await this.wait(op, backoffMs(attempt, limits, this.random), `${host.host} is unreachable (${why})`);
        continue;
      }
      const f = fetched!;
      waited = false;
      this.record(op, method, f, started, ms);
      // Redacting the URL costs more than the request's own bookkeeping: only when it is logged.
      if (this.log.isLevelEnabled('debug'))
        this.log.debug({ method, url: this.redactor.url(f.url), status: f.status, ms }, 'registry request');
      const rl = parseRateLimit(f.headers, this.pool.now());
      if (rl.remaining === 0 && rl.resetInMs !== undefined) {
        host.blockedUntil = this.pool.now() + rl.resetInMs;
        host.blockedReason = 'RateLimit-Remaining: 0';
      }
      if (f.status === 429) {
        const retryAfter = parseRetryAfter(f.headers.get('retry-after'), this.pool.now());
        const waitMs = retryAfter ?? rl.resetInMs ?? backoffMs(attempt, limits, this.random);
        const why = `${host.host} answered 429 Too Many Requests${retryAfter !== undefined ? ` with Retry-After ${f.headers.get('retry-after')}` : ''}`;
        host.blockedUntil = Math.max(host.blockedUntil, this.pool.now() + waitMs);
        host.blockedReason = '429 Too Many Requests';
        if (attempt >= limits.maxRetries) {
          host.recordFailure('429 Too Many Requests');
          throw this.fail(op, `${why}, still after ${attempt + 1} attempts`, 429);
        }
        this.log.info({ registry: host.host, waitMs }, 'rate limited by the registry; waiting');
        await this.wait(op, waitMs, why);
        waited = true;
        continue;
      }
      if (f.status >= 500) {
        if (attempt >= limits.maxRetries) {
          host.recordFailure(`${f.status} ${f.statusText}`.trim());
          throw this.fail(
            op,
            `${method} ${this.redactor.url(url)} answered ${describeStatus(f)}, still after ${attempt + 1} attempts`,
            f.status,
          );
        }
        await this.wait(op, backoffMs(attempt, limits, this.random), `${host.host} answered ${f.status}`);
        continue;
      }
      return f;
    }
  }
}
