/**
 * One HTTP exchange for the registry client: the request, redirects followed, the whole body
 * read (up to a limit). Two implementations:
 *
 * - `undiciTransport`, the default: undici's `dispatch` over a keep-alive Agent. Node's built-in
 *   fetch (undici's fetch) costs about 0.3 ms of CPU more per request than undici's `request`
 *   (WHATWG streams, Headers, Response, abort plumbing); a pass makes 500–1,000 requests, so that
 *   was a fifth of a warm pass's CPU (docs/performance.md).
 * - `fetchTransport`: any `fetch` (tests and library callers pass their own).
 *
 * Redirects are followed as fetch does (`redirect: 'follow'`): at most 20; 303, and 301/302
 * after a POST, become a GET without a body; credentials (`Authorization`, `Cookie`) are not
 * sent to another origin (registries redirect blob downloads to object storage).
 */
import { STATUS_CODES } from 'node:http';
import type { Dispatcher } from 'undici';

/**
 * What the client reads of a response's headers: fetch's `Headers` is one; `undiciTransport`
 * answers with `RawHeaders`, because filling a WHATWG `Headers` (a name and value check per
 * append) cost more than the rest of a HEAD's bookkeeping.
 */
export interface ResponseHeaders {
  /** The value, repeated headers joined with ", "; null when absent. Names are case-insensitive. */
  get(name: string): string | null;
  /** In name order, names lower-case, as `Headers` iterates. */
  forEach(fn: (value: string, name: string) => void): void;
}

/** undici's header record (lower-case names) seen as `ResponseHeaders`. */
export class RawHeaders implements ResponseHeaders {
  constructor(private readonly raw: Readonly<Record<string, string | string[]>>) {}

  get(name: string): string | null {
    const v = this.raw[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(', ') : v;
  }

  forEach(fn: (value: string, name: string) => void): void {
    for (const name of Object.keys(this.raw).sort()) {
      const v = this.get(name);
      if (v !== null) fn(v, name);
    }
  }
}

export interface Exchange {
  status: number;
  statusText: string;
  headers: ResponseHeaders;
  body: Buffer;
  /** The final URL, after redirects. */
  url: string;
}

export interface ExchangeInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /** A longer body fails the exchange with BodyTooLarge. */
  maxBytes: number;
}

export type RegistryTransport = (url: string, init: ExchangeInit) => Promise<Exchange>;

export class BodyTooLarge extends Error {}

const MAX_REDIRECTS = 20;
/** The statuses fetch follows (300 and 305 are not). */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * An idle kept-alive connection is closed after this long (undici's default is 4 s): a server's
 * own idle timeout then rarely closes one under a request, and the agents of a configuration the
 * daemon replaced let go of their sockets.
 */
const IDLE_MS = 5_000;
const CROSS_ORIGIN_DROPPED = ['authorization', 'cookie', 'proxy-authorization'];

export interface TlsOptions {
  ca?: string | string[];
  cert?: string;
  key?: string;
}

type Undici = typeof import('undici');

/**
 * npm undici, compiled on the first request: a pass that scans nothing never pays for it. Bundled,
 * a dynamic import of this CommonJS package yields its exports under `default` only.
 */
export const loadUndici = (() => {
  let undici: Promise<Undici> | undefined;
  return (): Promise<Undici> =>
    (undici ??= import('undici').then((m) => ('default' in m && m.default ? m.default : m) as Undici));
})();

/** What one request answered, before redirects are looked at. */
interface RawAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

/**
 * undici's raw header list (name, value, name, value…) as a record: names lower-case, a repeated
 * header's values in an array, as undici's `request` reports them.
 */
export function headerRecord(raw: readonly Buffer[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('utf8');
    const had = out[name];
    if (had === undefined) out[name] = value;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = [had, value];
  }
  return out;
}

/**
 * One request through `dispatcher.dispatch` with a handler that collects the answer. undici's
 * `request` wraps the same call in a body stream, an async resource and its own abort
 * plumbing; at the registry's scale (a HEAD per candidate, a list per repository, often in a
 * process that lives for a second, so never optimised) that wrapping cost about as much CPU as
 * the request itself (docs/performance.md, round 4).
 */
function dispatchOnce(
  dispatcher: Dispatcher,
  url: URL,
  init: ExchangeInit,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const { signal, maxBytes } = init;
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    let abort: ((reason?: Error) => void) | null = null;
    let status = 0;
    let answerHeaders: Record<string, string | string[]> = {};
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const settle = (err: unknown, answer?: RawAnswer): void => {
      if (done) return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      if (answer) resolve(answer);
      else reject(err);
    };
    const abortReason = (): Error => (signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    // The caller's deadline ends the exchange at once, even one still waiting for a connection;
    // undici drops the request when it connects, or the socket when it has.
    function onAbort(): void {
      const reason = abortReason();
      settle(reason);
      abort?.(reason);
    }
    signal.addEventListener('abort', onAbort, { once: true });
    const handler: Dispatcher.DispatchHandlers = {
      onConnect(a) {
        abort = a;
        if (signal.aborted) a(abortReason());
      },
      onHeaders(statusCode, raw) {
        status = statusCode;
        answerHeaders = headerRecord(raw);
        return true;
      },
      onData(chunk) {
        size += chunk.length;
        if (size > maxBytes) {
          const err = new BodyTooLarge(`response larger than ${maxBytes} bytes`);
          settle(err);
          abort?.(err);
          return false;
        }
        chunks.push(chunk);
        return true;
      },
      onComplete() {
        settle(null, {
          status,
          headers: answerHeaders,
          body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size),
        });
      },
      onError(err) {
        settle(err);
      },
    };
    dispatcher.dispatch(
      {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: method as Dispatcher.HttpMethod,
        headers,
        // undici closes the connection after every HEAD unless told otherwise, in case a server
        // sends a body anyway; registries answer HEAD as the distribution spec says, and the
        // guard HEADs every candidate, so a new TCP connection each time would cost more than
        // the requests themselves.
        ...(method === 'HEAD' ? { reset: false } : {}),
        ...(body !== undefined ? { body } : {}),
      },
      handler,
    );
  });
}

/**
 * Requests over one keep-alive Agent for this transport's client (the certSecretRef's CA and
 * client certificate in its `connect` options). Redirects are followed here, not by undici, so
 * that the rules above hold.
 */
export function undiciTransport(tls: TlsOptions = {}): RegistryTransport {
  let agent: Dispatcher | undefined;
  const one = async (
    url: URL,
    init: ExchangeInit,
    method: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<RawAnswer> => {
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new Error(`unsupported URL scheme ${url.protocol}`);
    if (!agent) {
      const { Agent } = await loadUndici();
      agent ??= new Agent({ keepAliveTimeout: IDLE_MS, connect: tls });
    }
    return dispatchOnce(agent, url, init, method, headers, body);
  };

  return async (start, init) => {
    let url = new URL(start);
    let { method, body } = init;
    let headers = init.headers;
    for (let redirects = 0; ; redirects++) {
      const res = await one(url, init, method, headers, body);
      const location = res.headers.location;
      if (REDIRECTS.has(res.status) && typeof location === 'string') {
        if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(location, url);
        if (
          (res.status === 303 && method !== 'HEAD') ||
          ((res.status === 301 || res.status === 302) && method === 'POST')
        ) {
          method = 'GET';
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
        }
        if (next.origin !== url.origin)
          headers = Object.fromEntries(
            Object.entries(headers).filter(([k]) => !CROSS_ORIGIN_DROPPED.includes(k.toLowerCase())),
          );
        url = next;
        continue;
      }
      return {
        status: res.status,
        statusText: STATUS_CODES[res.status] ?? '',
        headers: new RawHeaders(res.headers),
        body: res.body,
        url: url.href,
      };
    }
  };
}

/** Requests through `fetch` (with an undici dispatcher when one is given). */
export function fetchTransport(
  fetchImpl: typeof fetch,
  dispatcher?: () => Promise<Dispatcher>,
): RegistryTransport {
  return async (url, init) => {
    const req: RequestInit & { dispatcher?: Dispatcher } = {
      method: init.method,
      headers: init.headers,
      signal: init.signal,
      redirect: 'follow',
      ...(init.body !== undefined ? { body: init.body } : {}),
    };
    if (dispatcher) req.dispatcher = await dispatcher();
    const res = await fetchImpl(url, req);
    const body = init.method === 'HEAD' ? Buffer.alloc(0) : await readBody(res, init.maxBytes);
    return {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
      body,
      url: res.url || url,
    };
  };
}

async function readBody(res: Response, maxBytes: number): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const b = Buffer.from(chunk as Uint8Array);
    size += b.length;
    if (size > maxBytes) {
      await res.body.cancel().catch(() => undefined);
      throw new BodyTooLarge(`response larger than ${maxBytes} bytes`);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}
