/**
 * One JSON exchange with a forge's API: the token in a header (never in a URL, never in an
 * error or a log line), retried with backoff on 429, a 403 that is a rate limit, 5xx and
 * network errors, as the registry client retries. `fetch` and `sleep` are injected.
 */
import type { z } from 'zod';
import { redactText } from '../util/index.js';

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

export interface ForgeHttpOptions {
  fetch: Fetch;
  /** The header that carries the token (each forge has its own: see auth.ts). */
  auth: Record<string, string>;
  /** The token itself, scrubbed from anything an error repeats. */
  token: string;
  sleep?: (ms: number) => Promise<void>;
  /** Attempts in all, the first included; default 4. */
  attempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  random?: () => number;
  now?: () => number;
}

/** A forge's answer pawl cannot use; `status` is the HTTP status, 0 for a network error. */
export class ForgeError extends Error {
  override name = 'ForgeError';
  constructor(
    message: string,
    readonly status: number,
    /** Whether waiting helped not (rate limit or 5xx after every attempt). */
    readonly transient: boolean,
  ) {
    super(message);
  }
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Seconds to wait from `Retry-After` or the `*RateLimit-Reset` headers, when the forge said. */
function waitHint(res: Response, now: number): number | undefined {
  const after = res.headers.get('retry-after');
  if (after !== null) {
    const s = Number(after);
    if (Number.isFinite(s)) return Math.max(0, s * 1000);
    const at = Date.parse(after);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  const reset = res.headers.get('x-ratelimit-reset') ?? res.headers.get('ratelimit-reset');
  if (reset !== null && Number.isFinite(Number(reset))) {
    const n = Number(reset);
    // GitHub and GitLab send epoch seconds; a small number is a delta.
    return Math.max(0, n > 1e9 ? n * 1000 - now : n * 1000);
  }
  return undefined;
}

/** A 403 is a rate limit when the forge says so (GitHub's secondary limits, exhausted quota). */
function isRateLimit403(res: Response, text: string): boolean {
  return (
    res.headers.get('x-ratelimit-remaining') === '0' ||
    res.headers.get('retry-after') !== null ||
    /rate limit/i.test(text)
  );
}

export class ForgeHttp {
  private readonly sleep: (ms: number) => Promise<void>;
  constructor(private readonly opts: ForgeHttpOptions) {
    this.sleep = opts.sleep ?? defaultSleep;
  }

  private scrub(s: string): string {
    return redactText(this.opts.token ? s.replaceAll(this.opts.token, '***') : s);
  }

  async json<S extends z.ZodType>(
    method: string,
    url: string,
    schema: S | null,
    body?: unknown,
  ): Promise<z.output<S>> {
    const attempts = Math.max(1, this.opts.attempts ?? 4);
    const base = this.opts.backoffBaseMs ?? 500;
    const max = this.opts.backoffMaxMs ?? 30_000;
    const random = this.opts.random ?? Math.random;
    const now = this.opts.now ?? Date.now;
    const where = `${method} ${this.scrub(url)}`;
    for (let attempt = 0; ; attempt++) {
      const last = attempt + 1 >= attempts;
      const backoff = Math.min(max, base * 2 ** attempt) * (0.5 + random() / 2);
      let res: Response;
      try {
        res = await this.opts.fetch(url, {
          method,
          headers: {
            accept: 'application/json',
            ...this.opts.auth,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          redirect: 'error',
        });
      } catch (err) {
        const why = this.scrub(err instanceof Error ? err.message : String(err));
        if (last) throw new ForgeError(`${where}: ${why}, still after ${attempts} attempts`, 0, true);
        await this.sleep(backoff);
        continue;
      }
      const text = await res.text();
      if (res.ok) {
        if (schema === null) return undefined as z.output<S>;
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw new ForgeError(
            `${where}: the forge answered ${res.status} with a body that is not JSON`,
            res.status,
            false,
          );
        }
        const out = schema.safeParse(parsed);
        if (!out.success)
          throw new ForgeError(
            `${where}: the forge's answer is not what its API documents: ${out.error.issues
              .slice(0, 3)
              .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
              .join('; ')}`,
            res.status,
            false,
          );
        return out.data;
      }
      const said = this.scrub(text.slice(0, 300).replace(/\s+/g, ' ').trim());
      const limited = res.status === 429 || (res.status === 403 && isRateLimit403(res, text));
      const transient = limited || res.status >= 500;
      if (!transient || last) {
        const what = limited
          ? 'rate limited'
          : res.status === 401
            ? 'the token was refused (401); check the Secret named by pullRequest.secretRef'
            : res.status === 403
              ? 'forbidden (403): the token may lack the scope to open pull requests'
              : res.status === 404
                ? 'not found (404): check the repository URL, pullRequest.apiURL, and that the token can see it'
                : `answered ${res.status}`;
        throw new ForgeError(
          `${where}: ${what}${said ? `: ${said}` : ''}${transient ? `, still after ${attempts} attempts` : ''}`,
          res.status,
          transient,
        );
      }
      await this.sleep(limited ? Math.min(max, waitHint(res, now()) ?? backoff) : backoff);
    }
  }
}
