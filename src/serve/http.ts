/**
 * The daemon's two listeners. `--listen` serves only `POST /hook/…` (what a registry or forge
 * must reach); `--admin-listen` serves metrics, health and the read-only JSON API (docs/api.md),
 * so exposing the webhooks never exposes the state.
 */
import type { IncomingMessage, RequestListener, Server } from 'node:http';
import { Readable } from 'node:stream';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { RECEIVER_LIMITS, type ListenAddress, type ReceiverServerOptions } from './listener.js';
import type { AdminView, ListenerView } from './view.js';
import { registerApi } from './api.js';
import { registerDashboard, type DashboardSetup } from './dashboard/index.js';
import { UploadLimits } from './hook-limits.js';
import type { WebhookResult } from './metrics.js';
import { acceptWebhook, MAX_WEBHOOK_BODY_BYTES, ReplayGuard } from './webhooks.js';

export { parseListen, RECEIVER_LIMITS, type ListenAddress, type ReceiverServerOptions } from './listener.js';

/**
 * The listener (listener.ts) that bound the app's socket at start: given, the app takes its
 * requests from that server (fastify's `serverFactory`) and the server's deadlines are the
 * listener's; absent, fastify makes a server of its own (`listen` below; tests).
 */
export type Attach = (handler: RequestListener) => Server;

export function receiverApp(
  daemon: ListenerView,
  opts: ReceiverServerOptions = {},
  attach?: Attach,
): FastifyInstance {
  const limits = { ...RECEIVER_LIMITS, ...opts };
  const replays = new ReplayGuard();
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_WEBHOOK_BODY_BYTES,
    // Node checks these deadlines on a timer (30 s by default): once a second keeps them close.
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: 1_000 },
    // Backstops of the body deadline below: the whole request, and a socket that sends nothing.
    requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
    connectionTimeout: Math.max(limits.headersTimeoutMs, limits.bodyTimeoutMs),
    return503OnClosing: true,
    ...(attach ? { serverFactory: attach } : {}),
  });
  const count = (receiver: string | null, result: WebhookResult) =>
    daemon.metrics.webhooks.inc({ receiver: receiver ?? '', result });
  const uploads = new UploadLimits({
    perPeer: limits.maxUploadsPerPeer,
    total: limits.maxUploads,
    onChange: (n) => daemon.metrics.webhookUploads.set(n),
  });
  /** How each open upload is ended once its body is complete (its deadline cleared, its place given back). */
  const bodyDone = new WeakMap<IncomingMessage, () => void>();
  const timedOut = new WeakSet<IncomingMessage>();
  let inFlight = 0;

  app.removeAllContentTypeParsers();
  // Every body stays bytes: signatures are computed over exactly what was sent.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (req, reply) => {
    if (daemon.stopping) {
      count(null, 'busy');
      return reply.code(503).send({ error: 'pawl is stopping' });
    }
    const upload = uploads.admit(req.socket.remoteAddress ?? '');
    if (!upload) {
      count(null, 'too-many-uploads');
      // Closing the connection drops the body unread.
      return reply
        .code(503)
        .header('retry-after', '1')
        .header('connection', 'close')
        .send({ error: 'too many webhook requests from this address at once' });
    }
    const raw = req.raw;
    const deadline = setTimeout(() => {
      if (!upload.open) return;
      upload.release();
      count(null, 'timeout');
      timedOut.add(raw);
      raw.socket.destroy();
    }, limits.bodyTimeoutMs);
    deadline.unref();
    const done = () => {
      clearTimeout(deadline);
      upload.release();
    };
    bodyDone.set(raw, done);
    // However the request ends, its place comes back: the sender closing first (before the body
    // is complete, or before the answer), a socket error, the response sent.
    raw.once('close', done);
    reply.raw.once('close', done);
    // The sender may have gone while the hooks before this one ran: then no 'close' is to come.
    if (raw.destroyed) done();
  });
  // The sender closed before the answer; the hooks after this point may not have run at all.
  app.addHook('onRequestAbort', async (req) => {
    if (!req.raw.complete && !timedOut.has(req.raw)) count(null, 'aborted');
  });
  // The body is complete (or there is none): from here on the request is work, not an upload.
  app.addHook('preValidation', async (req) => {
    bodyDone.get(req.raw)?.();
  });

  app.post('/hook/*', async (req, reply) => {
    if (inFlight >= limits.maxInFlight) {
      count(null, 'busy');
      return reply.code(503).header('retry-after', '1').send({ error: 'too many webhook requests at once' });
    }
    inFlight++;
    daemon.metrics.webhookInFlight.set(inFlight);
    try {
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const out = await acceptWebhook(
        daemon,
        replays,
        req.url,
        { headers: req.headers, body },
        Date.now(),
        daemon.log,
      );
      count(out.receiver, out.result);
      return await reply.code(out.status).send(out.body);
    } finally {
      inFlight--;
      daemon.metrics.webhookInFlight.set(inFlight);
    }
  });

  app.setNotFoundHandler(async (_req, reply) => {
    count(null, 'not-found');
    return reply.code(404).send({ error: 'not found' });
  });

  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    // A body cut off by its sender or by the deadline was counted as such when it ended.
    const cutOff = req.raw.destroyed && !req.raw.complete;
    if (!cutOff) count(null, status === 413 ? 'too-large' : status === 500 ? 'busy' : 'malformed');
    if (status === 500) daemon.log.error({ err: err.message }, 'webhook handling failed');
    return reply
      .code(status)
      .send({ error: status === 413 ? `body larger than ${MAX_WEBHOOK_BODY_BYTES} bytes` : err.message });
  });
  return app;
}

export function adminApp(daemon: AdminView, dashboard?: DashboardSetup, attach?: Attach): FastifyInstance {
  // The dashboard's event streams never go idle: closing the listener ends them.
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    ...(attach ? { serverFactory: attach } : {}),
  });
  if (dashboard) registerDashboard(app, daemon, dashboard);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) =>
    daemon.ready
      ? { status: 'ready', loadedAt: daemon.current.loadedAt.toISOString() }
      : reply
          .code(503)
          .send(
            daemon.stopping
              ? { status: 'stopping' }
              : !daemon.coordinator.healthy
                ? { status: 'database-unreachable' }
                : daemon.unwritable !== null
                  ? { status: 'store-unwritable', reason: daemon.unwritable }
                  : daemon.unready !== null
                    ? { status: 'configuration', reason: daemon.unready }
                    : { status: 'starting' },
          ),
  );
  app.get('/metrics', async (_req, reply) => {
    // Written piece by piece (chunked), each made as the response asks: no string or buffer of
    // the whole scrape (ServeMetrics.scrape).
    return reply
      .header('content-type', daemon.metrics.contentType)
      .send(Readable.from(daemon.metrics.scrape(), { highWaterMark: 2 }));
  });
  registerApi(app, daemon);
  return app;
}

export async function listen(app: FastifyInstance, addr: ListenAddress): Promise<string> {
  await app.listen({ host: addr.host, port: addr.port });
  const a = app.server.address();
  if (a && typeof a === 'object')
    return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  return String(a);
}
