/**
 * A listener whose socket is bound at start and whose app is built when it is first needed.
 *
 * The daemon's two apps (http.ts: fastify, its routes, the JSON API and the dashboard) are most of
 * the modules `pawl serve` loads: compiling them and building their routes cost more CPU at start
 * than anything but the first pass itself (docs/performance.md, "Issue 27: the daemon's first
 * pass"). The socket is bound at start, so the ports, an address in use and the `listening` line
 * are as before; the app is built on the first request (which waits for it, its body unread in
 * the socket meanwhile) or when the daemon asks, once its first pass is done — whichever comes
 * first. Nothing a sender or a probe sees changes: the first request gets the app's answer.
 */
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { ServerOptions } from 'node:http';
import { lookup } from 'node:dns/promises';
import type { AddressInfo } from 'node:net';
import { errorMessage, type Logger } from '../util/index.js';

export interface ListenAddress {
  host: string;
  port: number;
}

/** `:9292`, `0.0.0.0:9292`, `127.0.0.1:0`, `[::1]:9293`, or a bare port. */
export function parseListen(addr: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr) ?? /^()()(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port > 65535)
    throw new Error(`"${addr}" is not a listen address; use HOST:PORT, :PORT or [IPv6]:PORT`);
  const host = m[1] ?? (m[2] || '0.0.0.0');
  return { host, port };
}

export interface ReceiverServerOptions {
  /** Webhook requests with a complete body verified and queued at once; more are answered 503 (senders retry). */
  maxInFlight?: number;
  /** Requests whose body is still arriving, from one address; more are answered 503 before their body is read. */
  maxUploadsPerPeer?: number;
  /** The same from all addresses together (each upload holds at most MAX_WEBHOOK_BODY_BYTES). */
  maxUploads?: number;
  /** From the end of a request's headers to the last byte of its body; a slower request's connection is closed. */
  bodyTimeoutMs?: number;
  /** For a request's headers to arrive. */
  headersTimeoutMs?: number;
}

/** The defaults (docs/serve.md, "Webhook limits"). */
export const RECEIVER_LIMITS = {
  maxInFlight: 64,
  maxUploadsPerPeer: 64,
  maxUploads: 256,
  bodyTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
} as const satisfies Required<ReceiverServerOptions>;

/** fastify's keep-alive default, which its own servers had. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** What node's server enforces for the webhook listener, from the first connection on. */
export function receiverServer(opts: ReceiverServerOptions = {}): ListenerServer {
  const limits = { ...RECEIVER_LIMITS, ...opts };
  return {
    options: {
      headersTimeout: limits.headersTimeoutMs,
      // Node checks these deadlines on a timer (30 s by default): once a second keeps them close.
      connectionsCheckingInterval: 1_000,
      // Backstops of the body deadline (http.ts): the whole request, and a socket that sends nothing.
      requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    },
    socketTimeoutMs: Math.max(limits.headersTimeoutMs, limits.bodyTimeoutMs),
    // Requests in progress finish (a webhook being queued); idle connections are closed.
    closeConnections: 'idle',
  };
}

/** The admin listener: no deadlines (the dashboard's event streams stay open), all closed on stop. */
export const ADMIN_SERVER: ListenerServer = {
  options: { requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS },
  socketTimeoutMs: 0,
  closeConnections: 'all',
};

export interface ListenerServer {
  options: ServerOptions;
  /** `server.setTimeout`: a socket idle this long is closed (0: never). */
  socketTimeoutMs: number;
  /** On close: the idle connections (requests in progress finish) or all of them. */
  closeConnections: 'idle' | 'all';
}

/** What a listener's app is to it: ready to take requests, and closed on stop. */
export interface ListenerApp {
  ready(): PromiseLike<unknown>;
  close(): PromiseLike<unknown>;
}

/**
 * Builds the app on `attach`'s server: the app gives `attach` the function that handles each
 * request (fastify's `serverFactory`) and gets the bound server back.
 */
export type BuildApp = (attach: (handler: RequestListener) => Server) => Promise<ListenerApp>;

export type BuildReason = 'request' | 'first pass';

export interface LazyListenerOptions {
  /** For the log and errors: `webhooks`, `admin`. */
  name: string;
  server: ListenerServer;
  build: BuildApp;
  log: Logger;
}

export class LazyListener {
  readonly server: Server;
  /** `localhost`'s other addresses (listen). */
  readonly #others: Server[] = [];
  readonly #opts: LazyListenerOptions;
  #app: ListenerApp | null = null;
  #handler: RequestListener | null = null;
  #building: Promise<RequestListener> | null = null;
  #closing = false;

  constructor(opts: LazyListenerOptions) {
    this.#opts = opts;
    this.server = this.#newServer();
  }

  #newServer(): Server {
    const server = createServer(this.#opts.server.options, (req, res) => this.#request(req, res));
    server.setTimeout(this.#opts.server.socketTimeoutMs);
    return server;
  }

  /** Whether the app has been built (tests; the log says when and why). */
  get built(): boolean {
    return this.#handler !== null;
  }

  /**
   * Binds the socket; answers `host:port` as bound (`[v6]:port`). `localhost` is every address it
   * resolves to (127.0.0.1 and ::1), on the first one's port, as fastify's own listen did; one
   * this host cannot bind (no IPv6) is left out, as fastify left it.
   */
  async listen(addr: ListenAddress): Promise<string> {
    const a = await bind(this.server, addr.host, addr.port);
    if (addr.host === 'localhost') {
      for (const other of await lookup('localhost', { all: true })) {
        if (other.address === a.address) continue;
        const server = this.#newServer();
        try {
          await bind(server, other.address, a.port);
          this.#others.push(server);
        } catch {
          // not an address of this host's
        }
      }
    }
    return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  }

  /**
   * Builds the app now if nothing has (the daemon's first pass is done). A failure is logged and
   * left to the next request, which tries again and answers 500 with the reason.
   */
  async warm(reason: BuildReason = 'first pass'): Promise<void> {
    if (this.#closing) return;
    await this.#build(reason).then(
      () => undefined,
      (err: unknown) =>
        this.#opts.log.error(
          { listener: this.#opts.name, error: errorMessage(err) },
          'listener app failed to start',
        ),
    );
  }

  #request(req: IncomingMessage, res: ServerResponse): void {
    if (this.#handler) return void this.#handler(req, res);
    if (this.#closing && !this.#building) {
      // Stopping before anything was ever served: nothing to build the app for.
      res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
      res.end(JSON.stringify({ error: 'pawl is stopping' }));
      return;
    }
    this.#build('request').then(
      (handle) => handle(req, res),
      (err: unknown) => {
        const error = `the ${this.#opts.name} listener could not start: ${errorMessage(err)}`;
        this.#opts.log.error(
          { listener: this.#opts.name, error: errorMessage(err) },
          'listener app failed to start',
        );
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ error }));
      },
    );
  }

  #build(reason: BuildReason): Promise<RequestListener> {
    this.#building ??= (async () => {
      const started = performance.now();
      let handler: RequestListener | null = null;
      const app = await this.#opts.build((h) => {
        handler = h;
        return this.server;
      });
      await app.ready();
      if (!handler) throw new Error('the app did not attach to its server');
      this.#app = app;
      this.#handler = handler;
      this.#opts.log.debug(
        { listener: this.#opts.name, reason, ms: Math.round(performance.now() - started) },
        'listener app built',
      );
      return handler;
    })().catch((err: unknown) => {
      // The next request tries again (a module that failed to load, a dashboard being edited).
      this.#building = null;
      throw err;
    });
    return this.#building;
  }

  /**
   * Stops: the app answers 503 to requests still arriving on open connections (and ends the
   * dashboard's streams), the socket takes no new connection, and — per `closeConnections` —
   * idle or all connections are closed. Settles once every connection has ended.
   */
  async close(): Promise<void> {
    this.#closing = true;
    if (this.#building) await this.#building.catch(() => undefined);
    const servers = [this.server, ...this.#others];
    const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    await this.#app?.close();
    for (const s of servers)
      if (this.#opts.server.closeConnections === 'all') s.closeAllConnections();
      else s.closeIdleConnections();
    await Promise.all(closed);
  }
}

function bind(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err);
    server.once('error', failed);
    server.listen({ host, port }, () => {
      server.off('error', failed);
      resolve(server.address() as AddressInfo);
    });
  });
}
