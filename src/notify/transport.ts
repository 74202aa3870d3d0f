/**
 * One POST to a Provider, over node:http(s): a custom CA (and client certificate), an HTTP
 * proxy (absolute-URI requests for http, CONNECT tunnels for https), and a timeout covering
 * the whole exchange. Injected into the Notifier, so tests and serve can pass their own.
 */
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';

export interface OutgoingRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  proxy?: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

export interface TransportResponse {
  status: number;
  /** The first 64 KiB of the body, for error messages. */
  body: string;
  /** The `Location` header, when there is one (redirects are followed by redirect.ts). */
  location?: string;
}

export type AlertSender = (req: OutgoingRequest) => Promise<TransportResponse>;

const MAX_BODY = 64 * 1024;

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username && !proxy.password) return {};
  const creds = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'Proxy-Authorization': `Basic ${Buffer.from(creds).toString('base64')}` };
}

/** A TLS socket to `target` through the proxy's CONNECT tunnel. */
function tunnel(proxy: URL, target: URL, req: OutgoingRequest, signal: AbortSignal): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const port = target.port || '443';
    const connect = (proxy.protocol === 'https:' ? https : http).request({
      host: proxy.hostname,
      port: proxy.port || (proxy.protocol === 'https:' ? 443 : 80),
      method: 'CONNECT',
      path: `${target.hostname}:${port}`,
      headers: { Host: `${target.hostname}:${port}`, ...proxyAuthorization(proxy) },
      signal,
    });
    connect.once('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`proxy answered CONNECT with ${res.statusCode}`));
        return;
      }
      const secure = tls.connect({
        socket,
        // The name the certificate is checked against.
        host: target.hostname,
        // SNI carries host names only (RFC 6066).
        ...(isIP(target.hostname) ? {} : { servername: target.hostname }),
        ...(req.ca ? { ca: req.ca } : {}),
        ...(req.cert ? { cert: req.cert } : {}),
        ...(req.key ? { key: req.key } : {}),
      });
      secure.once('secureConnect', () => resolve(secure));
      secure.once('error', reject);
    });
    connect.once('error', reject);
    connect.end();
  });
}

export const httpTransport: AlertSender = async (req) => {
  const target = new URL(req.url);
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`timed out after ${req.timeoutMs / 1000}s`)),
    req.timeoutMs,
  );
  try {
    const secure = target.protocol === 'https:';
    const proxy = req.proxy ? new URL(req.proxy) : undefined;
    const headers: Record<string, string> = { ...req.headers, 'Content-Length': String(req.body.length) };
    let options: https.RequestOptions;
    if (proxy && secure) {
      const socket = await tunnel(proxy, target, req, controller.signal);
      options = {
        method: 'POST',
        host: target.hostname,
        path: `${target.pathname}${target.search}`,
        headers,
        // Without `agent`, Node uses createConnection (with `agent: false` it would not).
        createConnection: () => socket,
      };
    } else if (proxy) {
      options = {
        method: 'POST',
        host: proxy.hostname,
        port: proxy.port || 80,
        path: target.toString(),
        headers: { ...headers, Host: target.host, ...proxyAuthorization(proxy) },
        agent: false,
      };
    } else {
      options = {
        method: 'POST',
        host: target.hostname,
        port: target.port || (secure ? 443 : 80),
        path: `${target.pathname}${target.search}`,
        headers,
        agent: false,
        ...(req.ca ? { ca: req.ca } : {}),
        ...(req.cert ? { cert: req.cert } : {}),
        ...(req.key ? { key: req.key } : {}),
      };
    }
    const lib = secure && !proxy ? https : http;
    return await new Promise<TransportResponse>((resolve, reject) => {
      const r = lib.request({ ...options, signal: controller.signal }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < MAX_BODY) chunks.push(c);
          size += c.length;
        });
        res.once('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).subarray(0, MAX_BODY).toString('utf8'),
            ...(typeof res.headers.location === 'string' ? { location: res.headers.location } : {}),
          }),
        );
        res.once('error', reject);
      });
      r.once('error', reject);
      r.end(req.body);
    });
  } catch (err) {
    throw controller.signal.aborted ? (controller.signal.reason as Error) : err;
  } finally {
    clearTimeout(timer);
  }
};
