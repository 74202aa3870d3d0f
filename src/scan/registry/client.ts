/**
 * The OCI distribution client (SPEC §2, §4; issue 3) over undici's `dispatch` (transport.ts), or
 * a given `fetch`.
 *
 * Every operation (listTags, headManifest, buildTime) has one deadline (`timeoutMs`, the
 * ImageRepository's `spec.timeout`) covering retries and waits. Requests go through the
 * per-registry pool (concurrency, rate, rate-limit blocks, circuit breaker). Authentication
 * follows the registry's `WWW-Authenticate` challenge from the `/v2/` ping: none, Basic, or
 * Bearer via the token service (anonymous or with credentials), tokens cached per scope
 * until they expire and fetched again on a 401.
 */
import { createHash } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { z } from 'zod';
import { type Secret, refKey } from '../../config/index.js';
import { Redactor, RuntimeError, silentLogger, type Logger } from '../../util/index.js';
import { isValidTag } from '../../image/index.js';
import {
  credentialsFromDockerConfig,
  credentialsFromSecret,
  secretValues,
  type Credentials,
  type HelperRunner,
} from './credentials.js';
import type { CredentialSource } from './cloud/index.js';
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
import { familiarName } from './reference.js';
import type { Dispatcher } from 'undici';
import {
  BodyTooLarge,
  fetchTransport,
  loadUndici,
  undiciTransport,
  type ResponseHeaders,
  type Transport,
} from './transport.js';
import type {
  BuildTime,
  BuildTimeCache,
  ManifestHead,
  RecordedResponse,
  RegistryClient,
  RepositoryRef,
  TagList,
} from './types.js';

export const MEDIA = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerSchema1Signed: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  dockerSchema1: 'application/vnd.docker.distribution.manifest.v1+json',
} as const;
const MANIFEST_ACCEPT = [
  MEDIA.ociIndex,
  MEDIA.ociManifest,
  MEDIA.dockerList,
  MEDIA.dockerManifest,
  MEDIA.dockerSchema1Signed,
  MEDIA.dockerSchema1,
].join(', ');
const CREATED_KEY = 'org.opencontainers.image.created';

const MAX_TAG_PAGE_BYTES = 32 << 20;
const MAX_MANIFEST_BYTES = 4 << 20;
const MAX_CONFIG_BYTES = 8 << 20;

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

export interface RegistryClientOptions {
  log?: Logger;
  /** `spec.secretRef`: dockerconfigjson (or dockercfg, or basic-auth). Without it, the Docker config. */
  secret?: Secret;
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
  buildTimeCache?: BuildTimeCache;
  /**
   * Credentials from elsewhere than a Secret or the Docker config (`provider: aws | gcp | azure`):
   * used instead of both, and asked again shortly before they expire.
   */
  credentialSource?: CredentialSource;
  /** Docker config directory (default `$DOCKER_CONFIG` or `~/.docker`); false: never read it. */
  dockerConfig?: string | false;
  runCredentialHelper?: HelperRunner;
  fetch?: typeof fetch;
  /** Told of every exchange with a registry (or its token service): the daemon's metrics. */
  onResponse?: (host: string, status: number | 'error') => void;
  sleep?: Sleep;
  random?: () => number;
}

/** Credentials that expire are fetched again this long before they do. */
const CREDENTIALS_RENEW_MS = 5 * 60_000;

type Challenge =
  { scheme: 'none' } | { scheme: 'basic' } | { scheme: 'bearer'; realm: string; service?: string };

interface Op {
  what: string;
  signal: AbortSignal;
  timeout: AbortSignal;
  timeoutMs: number;
  deadline: number;
  requests: number;
  responses: RecordedResponse[] | null;
  /** Page being fetched, for messages. */
  step: string;
}

interface Fetched {
  status: number;
  statusText: string;
  headers: ResponseHeaders;
  body: Buffer;
  url: string;
}

/** Parses `WWW-Authenticate` (one challenge; registries send one). */
export function parseChallenge(header: string | null): Challenge {
  if (!header) return { scheme: 'none' };
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!m) return { scheme: 'none' };
  const scheme = m[1]!.toLowerCase();
  const params: Record<string, string> = {};
  const re = /(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g;
  for (let p = re.exec(m[2]!); p; p = re.exec(m[2]!)) params[p[1]!.toLowerCase()] = p[2] ?? p[3] ?? '';
  if (scheme === 'basic') return { scheme: 'basic' };
  if (scheme === 'bearer' && params.realm)
    return { scheme: 'bearer', realm: params.realm, ...(params.service ? { service: params.service } : {}) };
  return { scheme: 'none' };
}

/** The `rel="next"` target of a Link header, or undefined. */
export function parseNextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (m && /;\s*rel\s*=\s*"?next"?/i.test(m[2]!)) return m[1]!;
  }
  return undefined;
}

/** Entries are checked one by one (isValidTag), so that one bad entry drops itself, not the page. */
const tagPage = z.object({ name: z.string(), tags: z.array(z.unknown()).nullable().optional() });

/** How many dropped names a scan's `invalid-tags` anomaly shows, and how much of each. */
const INVALID_EXAMPLES = 5;
const INVALID_EXAMPLE_CHARS = 60;

/** What zod found wrong with a page that is JSON, in words ("tags" is a string, not a list). */
function shapeProblem(err: z.ZodError): string {
  const issue = err.issues[0];
  if (!issue) return 'not a tag list';
  const path = issue.path.length > 0 ? `"${issue.path.join('.')}"` : 'the page';
  return `${path}: ${issue.message}`;
}
const tokenAnswer = z.object({
  token: z.string().optional(),
  access_token: z.string().optional(),
  expires_in: z.number().optional(),
  issued_at: z.string().optional(),
  refresh_token: z.string().optional(),
});
const descriptor = z.object({
  mediaType: z.string().optional(),
  digest: z.string(),
  platform: z.object({ architecture: z.string().optional(), os: z.string().optional() }).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const manifestDoc = z.object({
  mediaType: z.string().optional(),
  schemaVersion: z.number().optional(),
  config: descriptor.optional(),
  manifests: z.array(descriptor).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  history: z.array(z.object({ v1Compatibility: z.string() })).optional(),
});
const configDoc = z.object({
  created: z.string().optional(),
  config: z
    .object({ Labels: z.record(z.string(), z.string()).nullable().optional() })
    .nullable()
    .optional(),
});

/** A usable time: parses, and is not Go's zero time or the Unix epoch that reproducible builds stamp. */
export function parseCreated(value: string | undefined): Date | null {
  if (!value) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t) || t <= 0) return null;
  return new Date(t);
}

/** Tags and digests go into the path as they are (`sha256:…` unescaped, as registries expect). */
function pathReference(reference: string): string {
  return /^[\w.:+=-]+$/.test(reference) ? reference : encodeURIComponent(reference);
}

function sha256(body: Buffer): string {
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}

function secretText(s: Secret | undefined, ...keys: string[]): string | undefined {
  if (!s) return undefined;
  for (const k of keys) {
    const v = s.data[k];
    if (v) return v.toString('utf8');
  }
  return undefined;
}

function describeStatus(f: Fetched): string {
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

/**
 * The tag list names the repository asked for. Some registries (Artifactory behind a
 * repository-per-subdomain set-up) add or drop a leading path component, so a match on
 * whole trailing components, ignoring case, is accepted; anything else is another repository.
 */
export function sameRepository(listed: string, asked: string): boolean {
  const a = listed.toLowerCase();
  const b = asked.toLowerCase();
  return a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}

function isAttestation(d: z.infer<typeof descriptor>): boolean {
  if (d.annotations?.['vnd.docker.reference.type'] === 'attestation-manifest') return true;
  return d.platform?.architecture === 'unknown' && d.platform.os === 'unknown';
}

class Client implements RegistryClient {
  private readonly log: Logger;
  private readonly pool: RegistryPool;
  private readonly transport: Transport;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly timeoutMs: number;
  private readonly redactor = new Redactor();
  private readonly challenges = new Map<string, Promise<Challenge>>();
  private readonly tokens = new Map<string, { header: string; expires: number }>();
  private readonly credentials = new Map<
    string,
    { promise: Promise<Credentials | null>; renewAt?: number }
  >();

  constructor(private readonly opts: RegistryClientOptions) {
    this.log = opts.log ?? silentLogger;
    this.pool = opts.pool ?? sharedRegistryPool(opts.limits);
    this.sleep = opts.sleep ?? realSleep;
    this.random = opts.random ?? Math.random;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    const ca = secretText(opts.caSecret, 'ca.crt', 'caFile');
    const cert = secretText(opts.caSecret, 'tls.crt', 'certFile');
    const key = secretText(opts.caSecret, 'tls.key', 'keyFile');
    if (opts.caSecret && !ca && !cert) {
      throw new RuntimeError(
        `Secret ${refKey(opts.caSecret.metadata)} (certSecretRef) has no ca.crt, tls.crt or tls.key`,
      );
    }
    if ((cert && !key) || (key && !cert)) {
      throw new RuntimeError(
        `Secret ${refKey(opts.caSecret!.metadata)} (certSecretRef) has ${cert ? 'tls.crt without tls.key' : 'tls.key without tls.crt'}`,
      );
    }
    // A CA is trusted beside the usual ones, as Flux adds ca.crt to the system pool: a TLS `ca`
    // option alone would replace them.
    const tls = { ...(ca ? { ca: [...rootCertificates, ca] } : {}), ...(cert && key ? { cert, key } : {}) };
    // A given fetch (tests, library callers) needs an undici Agent for the TLS settings, made on
    // its first request (npm undici is compiled only when a request is made).
    let agent: Promise<Dispatcher> | undefined;
    this.transport = opts.fetch
      ? fetchTransport(
          opts.fetch,
          opts.caSecret
            ? () => (agent ??= loadUndici().then(({ Agent }) => new Agent({ connect: tls })))
            : undefined,
        )
      : undiciTransport(tls);
  }

  private origin(repo: RepositoryRef): string {
    const u = new URL(repo.baseUrl);
    if (this.opts.insecure) u.protocol = 'http:';
    return u.origin;
  }

  private startOp(what: string, signal: AbortSignal | undefined, record: boolean): Op {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    return {
      what,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      timeout,
      timeoutMs: this.timeoutMs,
      deadline: this.pool.now() + this.timeoutMs,
      requests: 0,
      responses: record ? [] : null,
      step: '',
    };
  }

  private fail(op: Op, message: string, status?: number): RegistryError {
    return new RegistryError(
      this.redactor.text(`${op.what}: ${message}`),
      op.requests,
      op.responses ?? [],
      status,
    );
  }

  private abortError(op: Op, cause?: unknown): RegistryError {
    if (op.timeout.aborted) {
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
    if (op.responses.length >= limits.maxResponses) op.responses[op.responses.length - 1] = rec;
    else op.responses.push(rec);
  }

  /**
   * One HTTP exchange with retries (network errors, truncated bodies, 5xx, 429) and the
   * pool's limits. Returns the final answer whatever its status; the body is read in full.
   */
  private async send(
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

  private creds(repo: RepositoryRef): Promise<Credentials | null> {
    const registry = repo.registry;
    const hit = this.credentials.get(registry);
    if (hit && (hit.renewAt === undefined || this.pool.now() < hit.renewAt)) return hit.promise;
    const promise = (async () => {
      let c: Credentials | null;
      if (this.opts.credentialSource) c = await this.opts.credentialSource(registry, this.origin(repo));
      else if (this.opts.secret) c = credentialsFromSecret(this.opts.secret, registry);
      else if (this.opts.dockerConfig === false) c = null;
      else {
        c = await credentialsFromDockerConfig(registry, {
          ...(typeof this.opts.dockerConfig === 'string' ? { dir: this.opts.dockerConfig } : {}),
          ...(this.opts.runCredentialHelper ? { runHelper: this.opts.runCredentialHelper } : {}),
        });
      }
      for (const v of secretValues(c)) this.redactor.add(v);
      this.log.debug({ registry, credentials: c ? c.source : 'none (anonymous)' }, 'registry credentials');
      return c;
    })();
    const entry: { promise: Promise<Credentials | null>; renewAt?: number } = { promise };
    this.credentials.set(registry, entry);
    promise.then(
      // Cloud tokens: ask again five minutes before they expire (ECR 12h, GCP 1h, ACR ~3h).
      (c) => {
        if (c?.expiresAt !== undefined) entry.renewAt = c.expiresAt - CREDENTIALS_RENEW_MS;
      },
      // A failure (the token endpoint was down) is not remembered: the next operation asks again.
      () => {
        if (this.credentials.get(registry) === entry) this.credentials.delete(registry);
      },
    );
    return promise;
  }

  private challenge(op: Op, origin: string, host: HostState): Promise<Challenge> {
    let p = this.challenges.get(origin);
    if (!p) {
      p = (async () => {
        op.step = 'the /v2/ ping';
        const f = await this.send(op, host, 'GET', `${origin}/v2/`, {}, 1 << 20);
        if (f.status === 200) return { scheme: 'none' } as Challenge;
        if (f.status === 401) return parseChallenge(f.headers.get('www-authenticate'));
        throw this.fail(
          op,
          `${origin}/v2/ answered ${describeStatus(f)}; is this an OCI registry?`,
          f.status,
        );
      })();
      this.challenges.set(origin, p);
      p.catch(() => this.challenges.delete(origin));
    }
    return p;
  }

  /** The Authorization header for a repository's pull scope, or undefined for anonymous access. */
  private async authorization(
    op: Op,
    repo: RepositoryRef,
    host: HostState,
    challenge: Challenge,
    fresh: boolean,
  ): Promise<string | undefined> {
    if (challenge.scheme === 'none') return undefined;
    const creds = await this.creds(repo);
    if (challenge.scheme === 'basic') {
      if (!creds?.password || !creds.username) {
        throw this.fail(
          op,
          `${repo.registry} requires a user name and password (Basic auth) and none were found; set spec.secretRef, or log in with docker login`,
          401,
        );
      }
      const b = Buffer.from(`${creds.username}:${creds.password}`).toString('base64');
      this.redactor.add(b);
      return `Basic ${b}`;
    }
    if (creds?.registryToken) return `Bearer ${creds.registryToken}`;
    const scope = `repository:${repo.path}:pull`;
    const key = `${challenge.realm}|${challenge.service ?? ''}|${scope}`;
    const cached = this.tokens.get(key);
    if (!fresh && cached && cached.expires > this.pool.now()) return cached.header;
    const realm = new URL(challenge.realm);
    const realmHost = this.pool.host(realm.origin);
    op.step = 'authentication';
    let f: Fetched;
    if (creds?.identityToken) {
      // OAuth2 refresh-token grant, as Docker does with an identity token.
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: creds.identityToken,
        client_id: 'pawl',
        scope,
      });
      if (challenge.service) form.set('service', challenge.service);
      f = await this.send(
        op,
        realmHost,
        'POST',
        realm.toString(),
        { 'content-type': 'application/x-www-form-urlencoded' },
        1 << 20,
        form.toString(),
      );
    } else {
      if (challenge.service) realm.searchParams.set('service', challenge.service);
      realm.searchParams.set('scope', scope);
      const headers: Record<string, string> = {};
      if (creds?.username && creds.password) {
        const b = Buffer.from(`${creds.username}:${creds.password}`).toString('base64');
        this.redactor.add(b);
        headers.authorization = `Basic ${b}`;
      }
      f = await this.send(op, realmHost, 'GET', realm.toString(), headers, 1 << 20);
    }
    if (f.status === 401 || f.status === 403) {
      throw this.fail(
        op,
        `the token service ${realm.origin} refused ${creds ? `the credentials from ${creds.source}` : 'anonymous access'} (${f.status})`,
        f.status,
      );
    }
    if (f.status !== 200)
      throw this.fail(op, `the token service ${realm.origin} answered ${describeStatus(f)}`, f.status);
    let answer: z.infer<typeof tokenAnswer>;
    try {
      answer = tokenAnswer.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      throw this.fail(op, `the token service ${realm.origin} answered something that is not a token`);
    }
    const token = answer.token ?? answer.access_token;
    if (!token) throw this.fail(op, `the token service ${realm.origin} answered without a token`);
    this.redactor.add(token);
    if (answer.refresh_token) this.redactor.add(answer.refresh_token);
    // Docker's default lifetime when the service does not say: 60s. Refresh a little early.
    const lifetime = Math.max(answer.expires_in ?? 60, 10) * 1000;
    const header = `Bearer ${token}`;
    this.tokens.set(key, { header, expires: this.pool.now() + lifetime - 5000 });
    return header;
  }

  /** A request with authentication: one retry with a fresh token (or re-read challenge) on 401. */
  private async authed(
    op: Op,
    repo: RepositoryRef,
    method: string,
    url: string,
    headers: Record<string, string>,
    maxBytes: number,
  ): Promise<Fetched> {
    const origin = this.origin(repo);
    const host = this.pool.host(origin);
    // The ping and the token request name their own steps while they run; the request after them is the caller's step.
    const step = op.step;
    let challenge = await this.challenge(op, origin, host);
    for (let attempt = 0; ; attempt++) {
      const auth = await this.authorization(op, repo, host, challenge, attempt > 0);
      op.step = step;
      const f = await this.send(
        op,
        host,
        method,
        url,
        auth ? { ...headers, authorization: auth } : headers,
        maxBytes,
      );
      if (f.status !== 401 && f.status !== 403) {
        if (f.status < 500) host.recordSuccess();
        return f;
      }
      if (attempt > 0 || f.status === 403) {
        const creds = await this.creds(repo);
        const who = creds
          ? `the credentials from ${creds.source}`
          : 'anonymous access (no credentials found)';
        throw this.fail(
          op,
          `${repo.registry} refused ${who} for ${repo.path} (${describeStatus(f)})`,
          f.status,
        );
      }
      const fresh = parseChallenge(f.headers.get('www-authenticate'));
      if (fresh.scheme !== 'none') {
        challenge = fresh;
        this.challenges.set(origin, Promise.resolve(fresh));
      }
    }
  }

  private async run<T>(op: Op, repo: RepositoryRef, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (err) {
      if (err instanceof RegistryError) {
        if (op.timeout.aborted) this.pool.host(this.origin(repo)).recordFailure('timeout');
        throw err;
      }
      if (op.signal.aborted) throw this.abortError(op, err);
      if (err instanceof RuntimeError) throw this.fail(op, err.message);
      throw this.fail(op, `unexpected error: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async listTags(repo: RepositoryRef, opts: { signal?: AbortSignal } = {}): Promise<TagList> {
    const op = this.startOp(`listing tags of ${familiarName(repo)}`, opts.signal, true);
    const limits = this.pool.limits;
    return this.run(op, repo, async () => {
      const origin = this.origin(repo);
      let next: string | undefined = `${origin}/v2/${repo.path}/tags/list?n=${limits.pageSize}`;
      const tags: string[] = [];
      const seen = new Set<string>();
      const visited = new Set<string>();
      let invalid = 0;
      const examples: string[] = [];
      let pages = 0;
      while (next) {
        pages++;
        if (pages > limits.maxPages) {
          throw this.fail(
            op,
            `more than ${limits.maxPages} pages of tags; raise the page limit if this repository really is that large`,
          );
        }
        if (visited.has(next))
          throw this.fail(
            op,
            `the registry's next-page link points back to a page already read (${this.redactor.url(next)})`,
          );
        visited.add(next);
        op.step = `page ${pages}`;
        const f = await this.authed(
          op,
          repo,
          'GET',
          next,
          { accept: 'application/json' },
          MAX_TAG_PAGE_BYTES,
        );
        if (f.status === 404)
          throw this.fail(
            op,
            `${repo.registry} says ${repo.path} does not exist (${describeStatus(f)})`,
            404,
          );
        if (f.status !== 200) throw this.fail(op, `page ${pages} answered ${describeStatus(f)}`, f.status);
        let json: unknown;
        try {
          json = JSON.parse(f.body.toString('utf8'));
        } catch {
          throw this.fail(
            op,
            `page ${pages} is not a tag list (malformed JSON, ${f.body.length} bytes); nothing was kept`,
          );
        }
        const parsed = tagPage.safeParse(json);
        if (!parsed.success) {
          throw this.fail(
            op,
            `page ${pages} is JSON but not a tag list (${shapeProblem(parsed.error)}); nothing was kept`,
          );
        }
        const page = parsed.data;
        if (!sameRepository(page.name, repo.path)) {
          throw this.fail(
            op,
            `page ${pages} is the tag list of "${page.name}", not of "${repo.path}"; nothing was kept`,
          );
        }
        for (const t of page.tags ?? []) {
          // A name that is not a tag would be stored, selected and written into manifests.
          if (typeof t !== 'string' || !isValidTag(t)) {
            invalid++;
            if (examples.length < INVALID_EXAMPLES) {
              const quoted = JSON.stringify(t) ?? String(t);
              examples.push(
                this.redactor.text(
                  quoted.length > INVALID_EXAMPLE_CHARS
                    ? `${quoted.slice(0, INVALID_EXAMPLE_CHARS)}…`
                    : quoted,
                ),
              );
            }
            continue;
          }
          if (!seen.has(t)) {
            seen.add(t);
            tags.push(t);
          }
        }
        if (tags.length > limits.maxTags)
          throw this.fail(
            op,
            `more than ${limits.maxTags} tags; raise the tag limit if this repository really is that large`,
          );
        const link = parseNextLink(f.headers.get('link'));
        if (link === undefined) break;
        const resolved = new URL(link, f.url);
        if (resolved.origin !== new URL(f.url).origin) {
          throw this.fail(
            op,
            `page ${pages} links the next page to another origin (${resolved.origin}); refusing to follow`,
          );
        }
        next = resolved.toString();
      }
      this.log.debug(
        { repository: repo.canonical, tags: tags.length, pages, requests: op.requests },
        'listed tags',
      );
      return {
        tags,
        pages,
        requests: op.requests,
        responses: op.responses ?? [],
        ...(invalid > 0 ? { invalid: { count: invalid, examples } } : {}),
      };
    });
  }

  async headManifest(
    repo: RepositoryRef,
    reference: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ManifestHead> {
    const op = this.startOp(`checking ${familiarName(repo)}:${reference}`, opts.signal, false);
    return this.run(op, repo, async () => {
      const url = `${this.origin(repo)}/v2/${repo.path}/manifests/${pathReference(reference)}`;
      op.step = 'HEAD manifest';
      const f = await this.authed(op, repo, 'HEAD', url, { accept: MANIFEST_ACCEPT }, 0);
      if (f.status === 404) return { exists: false };
      if (f.status !== 200) throw this.fail(op, `HEAD manifest answered ${describeStatus(f)}`, f.status);
      const mediaType = f.headers.get('content-type')?.split(';')[0]?.trim();
      let digest = f.headers.get('docker-content-digest') ?? undefined;
      if (!digest) {
        // Some registries omit the digest on HEAD; the manifest's own hash is the digest.
        const g = await this.authed(op, repo, 'GET', url, { accept: MANIFEST_ACCEPT }, MAX_MANIFEST_BYTES);
        if (g.status === 200) digest = sha256(g.body);
      }
      return { exists: true, ...(digest ? { digest } : {}), ...(mediaType ? { mediaType } : {}) };
    });
  }

  async buildTime(
    repo: RepositoryRef,
    reference: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<BuildTime | null> {
    if (reference.startsWith('sha256:')) {
      const hit = await this.cachedBuildTime(reference);
      if (hit !== undefined) return hit;
    }
    const op = this.startOp(
      `reading the build time of ${familiarName(repo)}${reference.startsWith('sha256:') ? '@' : ':'}${reference}`,
      opts.signal,
      false,
    );
    return this.run(op, repo, () => this.buildTimeOf(op, repo, reference, 0));
  }

  private async buildTimeOf(
    op: Op,
    repo: RepositoryRef,
    reference: string,
    depth: number,
  ): Promise<BuildTime | null> {
    const origin = this.origin(repo);
    const url = `${origin}/v2/${repo.path}/manifests/${pathReference(reference)}`;
    if (!reference.startsWith('sha256:')) {
      // A tag: learn its digest with a HEAD first, so a cached digest costs one cheap request.
      op.step = 'HEAD manifest';
      const h = await this.authed(op, repo, 'HEAD', url, { accept: MANIFEST_ACCEPT }, 0);
      if (h.status === 404) throw this.fail(op, `${familiarName(repo)}:${reference} does not exist`, 404);
      const d = h.headers.get('docker-content-digest');
      if (d) {
        const hit = await this.cachedBuildTime(d);
        if (hit !== undefined) return hit;
      }
    } else if (depth > 0) {
      const hit = await this.cachedBuildTime(reference);
      if (hit !== undefined) return hit;
    }
    op.step = 'GET manifest';
    const f = await this.authed(op, repo, 'GET', url, { accept: MANIFEST_ACCEPT }, MAX_MANIFEST_BYTES);
    if (f.status === 404) throw this.fail(op, `manifest ${reference} does not exist`, 404);
    if (f.status !== 200) throw this.fail(op, `GET manifest answered ${describeStatus(f)}`, f.status);
    const digest = reference.startsWith('sha256:')
      ? reference
      : (f.headers.get('docker-content-digest') ?? sha256(f.body));
    let doc: z.infer<typeof manifestDoc>;
    try {
      doc = manifestDoc.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      throw this.fail(op, `manifest ${digest} is not valid JSON`);
    }
    const result = await this.timeFromManifest(
      op,
      repo,
      digest,
      doc,
      f.headers.get('content-type') ?? '',
      depth,
    );
    // The cache only saves requests: a store that cannot take the entry costs a fetch next time.
    await this.opts.buildTimeCache?.set(digest, result).catch(() => undefined);
    return result;
  }

  /** A build time the store remembers by digest; undefined when unknown (or the store cannot say). */
  private async cachedBuildTime(digest: string): Promise<BuildTime | null | undefined> {
    const cache = this.opts.buildTimeCache;
    if (!cache) return undefined;
    try {
      return await cache.get(digest);
    } catch {
      return undefined;
    }
  }

  private async timeFromManifest(
    op: Op,
    repo: RepositoryRef,
    digest: string,
    doc: z.infer<typeof manifestDoc>,
    contentType: string,
    depth: number,
  ): Promise<BuildTime | null> {
    const own = parseCreated(doc.annotations?.[CREATED_KEY]);
    if (own) return { digest, created: own, source: 'annotation' };
    const mediaType = doc.mediaType ?? contentType.split(';')[0]!.trim();
    if (doc.manifests || mediaType === MEDIA.ociIndex || mediaType === MEDIA.dockerList) {
      if (depth > 0) return null; // an index inside an index: not an image
      let best: BuildTime | null = null;
      for (const child of doc.manifests ?? []) {
        if (isAttestation(child)) continue;
        const t = await this.buildTimeOf(op, repo, child.digest, depth + 1);
        if (t && (!best || t.created > best.created)) best = t;
      }
      return best ? { digest, created: best.created, source: 'index-child' } : null;
    }
    if (doc.history && doc.schemaVersion === 1) {
      // Docker schema 1: the newest layer's v1Compatibility carries `created`.
      try {
        const first = JSON.parse(doc.history[0]?.v1Compatibility ?? '{}') as { created?: string };
        const t = parseCreated(first.created);
        return t ? { digest, created: t, source: 'config' } : null;
      } catch {
        return null;
      }
    }
    if (!doc.config) return null;
    op.step = 'GET config blob';
    const f = await this.authed(
      op,
      repo,
      'GET',
      `${this.origin(repo)}/v2/${repo.path}/blobs/${doc.config.digest}`,
      { accept: '*/*' },
      MAX_CONFIG_BYTES,
    );
    if (f.status !== 200)
      throw this.fail(op, `config blob ${doc.config.digest} answered ${describeStatus(f)}`, f.status);
    let cfg: z.infer<typeof configDoc>;
    try {
      cfg = configDoc.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      return null; // not an image config (an artifact): no build time
    }
    const created = parseCreated(cfg.created);
    const label = parseCreated(cfg.config?.Labels?.[CREATED_KEY]);
    if (created && (!label || created >= label)) return { digest, created, source: 'config' };
    if (label) return { digest, created: label, source: 'label' };
    return null;
  }
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

/** A client over the shared per-registry pool. See RegistryClientOptions. */
export function createRegistryClient(opts: RegistryClientOptions = {}): RegistryClient {
  return new Client(opts);
}
