/**
 * A webhook receiver of the tests' own, on 127.0.0.1 port 0: records every request, checks
 * Flux's generic-hmac signature (`X-Signature: sha256=<hex>`) with its token in constant time,
 * and can misbehave on cue — answer 500, drop the connection, or hold a response until the test
 * releases it. Tests wait for requests with `arrived(n)`, never with timers.
 */
import http from 'node:http';
import https from 'node:https';
import { execFile } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect, type AddressInfo } from 'node:net';

const exec = promisify(execFile);

export interface Received {
  method: string;
  /** The request target as sent: a path, or an absolute URI when the receiver acts as a proxy. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Null without a token; else whether X-Signature is the HMAC of the body. */
  signatureValid: boolean | null;
}

/** What to do with one request; `redirect` answers that status with that Location. */
export type Behaviour = 'ok' | 'fail' | 'drop' | 'hold' | 'reject' | { redirect: number; location: string };

export interface Receiver {
  url: string;
  port: number;
  /** Every request, answered or not, in arrival order. */
  requests: Received[];
  /** `host:port` of each CONNECT tunnel opened through this receiver acting as a proxy. */
  tunnels: string[];
  /** Requests that were answered 2xx. */
  accepted(): Received[];
  /** Forgets what was received (between tests sharing a receiver). */
  reset(): void;
  /** Behaviour of the next requests, in order; afterwards `ok`. */
  script(...b: Behaviour[]): void;
  /** Resolves when `n` requests have arrived. */
  arrived(n: number): Promise<void>;
  /** Answers every held request with 200. */
  release(): void;
  stop(): Promise<void>;
}

export interface ReceiverOptions {
  /** generic-hmac token to verify signatures with. */
  token?: string;
  tls?: { key: Buffer; cert: Buffer };
}

function verify(body: Buffer, header: string | string[] | undefined, token: string): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const want = createHmac('sha256', token).update(body).digest();
  const got = Buffer.from(header.slice('sha256='.length), 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}

export async function startReceiver(opts: ReceiverOptions = {}): Promise<Receiver> {
  const requests: Received[] = [];
  const accepted: Received[] = [];
  const plan: Behaviour[] = [];
  const held: { res: http.ServerResponse; r: Received }[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const wake = (): void => {
    for (const w of [...waiters]) {
      if (requests.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const r: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        signatureValid: opts.token ? verify(body, req.headers['x-signature'], opts.token) : null,
      };
      requests.push(r);
      const b = plan.shift() ?? 'ok';
      if (typeof b === 'object') {
        res.writeHead(b.redirect, { Location: b.location }).end();
        wake();
        return;
      }
      switch (b) {
        case 'ok':
          accepted.push(r);
          res.writeHead(200).end('{"ok":true}');
          break;
        case 'fail':
          res.writeHead(500).end('receiver error');
          break;
        case 'reject':
          res.writeHead(400).end('bad request');
          break;
        case 'drop':
          req.socket.destroy();
          break;
        case 'hold':
          held.push({ res, r });
          break;
      }
      wake();
    });
  };
  const server = opts.tls
    ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert }, handler)
    : http.createServer(handler);
  // As an HTTPS proxy: tunnels to loopback only (tests never reach other addresses).
  const tunnels: string[] = [];
  const tunnelSockets = new Set<import('node:stream').Duplex>();
  server.on('connect', (req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => {
    const target = req.url ?? '';
    tunnels.push(target);
    const m = /^127\.0\.0\.1:(\d+)$/.exec(target);
    if (!m) {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    tunnelSockets.add(socket);
    socket.on('close', () => tunnelSockets.delete(socket));
    const upstream = connect(Number(m[1]), '127.0.0.1', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}/hook`,
    port,
    requests,
    tunnels,
    accepted: () => accepted,
    reset: () => {
      requests.length = 0;
      accepted.length = 0;
      tunnels.length = 0;
    },
    script: (...b) => plan.push(...b),
    arrived: (n) =>
      new Promise<void>((resolve) => {
        waiters.push({ n, resolve });
        wake();
      }),
    release: () => {
      for (const { res, r } of held.splice(0)) {
        if (res.destroyed) continue;
        accepted.push(r);
        res.writeHead(200).end('{"ok":true}');
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const { res } of held.splice(0)) res.destroy();
        for (const socket of tunnelSockets) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A self-signed certificate for 127.0.0.1 (with the IP in subjectAltName, as TLS checks it). */
export async function loopbackCertificate(): Promise<{ key: Buffer; cert: Buffer }> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-receiver-'));
  try {
    await exec('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'k.pem'),
      '-out',
      join(dir, 'c.pem'),
    ]);
    return { key: await readFile(join(dir, 'k.pem')), cert: await readFile(join(dir, 'c.pem')) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
