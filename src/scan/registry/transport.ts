/**
 * One HTTP exchange for the registry client: the request, redirects followed, the whole body
 * read (up to a limit). Two implementations:
 *
 * - `nodeTransport`, the default: node:http/https with keep-alive agents. Node's built-in fetch
 *   costs about 0.6 ms of CPU more per request (WHATWG streams, Headers, Response, abort
 *   plumbing); a pass makes 500–1,000 requests, so that was a third of a warm pass's CPU
 *   (docs/performance.md).
 * - `fetchTransport`: any `fetch` (tests and library callers pass their own).
 *
 * Redirects are followed as fetch does (`redirect: 'follow'`): at most 20; 303, and 301/302
 * after a POST, become a GET without a body; credentials (`Authorization`, `Cookie`) are not
 * sent to another origin (registries redirect blob downloads to object storage).
 */
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import type { Dispatcher } from 'undici';

export interface Exchange {
  status: number;
  statusText: string;
  headers: Headers;
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

export type Transport = (url: string, init: ExchangeInit) => Promise<Exchange>;

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
  ca?: string;
  cert?: string;
  key?: string;
}

/** Requests over node:http/https; one keep-alive agent per scheme for this transport's client. */
export function nodeTransport(tls: TlsOptions = {}): Transport {
  let http: HttpAgent | undefined;
  let https: HttpsAgent | undefined;
  const one = (url: URL, init: ExchangeInit, headers: Record<string, string>, body?: string) =>
    new Promise<{ res: IncomingMessage; body: Buffer }>((resolve, reject) => {
      const secure = url.protocol === 'https:';
      if (!secure && url.protocol !== 'http:')
        return reject(new Error(`unsupported URL scheme ${url.protocol}`));
      const options = {
        method: init.method,
        headers:
          body !== undefined ? { ...headers, 'content-length': String(Buffer.byteLength(body)) } : headers,
        signal: init.signal,
        agent: secure
          ? (https ??= new HttpsAgent({ keepAlive: true, timeout: IDLE_MS, ...tls }))
          : (http ??= new HttpAgent({ keepAlive: true, timeout: IDLE_MS })),
      };
      const req = (secure ? httpsRequest : httpRequest)(url, options, (res) => {
        res.on('error', reject);
        if (init.method === 'HEAD') {
          res.resume();
          return resolve({ res, body: Buffer.alloc(0) });
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > init.maxBytes) {
            res.destroy();
            req.destroy();
            reject(new BodyTooLarge(`response larger than ${init.maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('close', () => {
          if (!res.complete) reject(new Error('the connection closed before the response body was complete'));
        });
        res.on('end', () => resolve({ res, body: Buffer.concat(chunks, size) }));
      });
      req.on('error', reject);
      req.end(body);
    });

  return async (start, init) => {
    let url = new URL(start);
    let { method, body } = init;
    let headers = init.headers;
    for (let redirects = 0; ; redirects++) {
      const { res, body: data } = await one(url, { ...init, method }, headers, body);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECTS.has(status) && location !== undefined) {
        if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(location, url);
        if (
          (status === 303 && method !== 'HEAD') ||
          ((status === 301 || status === 302) && method === 'POST')
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
      const h = new Headers();
      const raw = res.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) h.append(raw[i]!, raw[i + 1]!);
      return { status, statusText: res.statusMessage ?? '', headers: h, body: data, url: url.href };
    }
  };
}

/** Requests through `fetch` (with an undici dispatcher when one is given). */
export function fetchTransport(fetchImpl: typeof fetch, dispatcher?: () => Promise<Dispatcher>): Transport {
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
