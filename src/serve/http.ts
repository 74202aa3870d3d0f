/**
 * The daemon's two listeners. `--listen` serves only `POST /hook/…` (what a registry or forge
 * must reach); `--admin-listen` serves metrics, health and the read-only JSON API (docs/api.md),
 * so exposing the webhooks never exposes the state.
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Daemon } from './daemon.js';
import { registerApi } from './api.js';
import { registerDashboard, type DashboardSetup } from './dashboard.js';
import type { WebhookResult } from './metrics.js';
import { acceptWebhook, MAX_WEBHOOK_BODY_BYTES, ReplayGuard } from './webhooks.js';

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
  /** Webhook requests handled at once; more are answered 503 (they are retried by senders). */
  maxInFlight?: number;
}

export function receiverApp(daemon: Daemon, opts: ReceiverServerOptions = {}): FastifyInstance {
  const maxInFlight = opts.maxInFlight ?? 64;
  const replays = new ReplayGuard();
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_WEBHOOK_BODY_BYTES,
    // Slow senders must not hold sockets forever.
    requestTimeout: 10_000,
    connectionTimeout: 10_000,
    return503OnClosing: true,
  });
  let inFlight = 0;
  const count = (receiver: string | null, result: WebhookResult) =>
    daemon.metrics.webhooks.inc({ receiver: receiver ?? '', result });

  app.removeAllContentTypeParsers();
  // Every body stays bytes: signatures are computed over exactly what was sent.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', async (req, reply) => {
    if (daemon.stopping) {
      count(null, 'busy');
      return reply.code(503).send({ error: 'pawl is stopping' });
    }
    if (inFlight >= maxInFlight) {
      count(null, 'busy');
      return reply.code(503).header('retry-after', '1').send({ error: 'too many webhook requests at once' });
    }
    inFlight++;
    (req as { counted?: boolean }).counted = true;
  });
  app.addHook('onResponse', async (req) => {
    if ((req as { counted?: boolean }).counted) inFlight--;
  });

  app.post('/hook/*', async (req, reply) => {
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
    return reply.code(out.status).send(out.body);
  });

  app.setNotFoundHandler(async (_req, reply) => {
    count(null, 'not-found');
    return reply.code(404).send({ error: 'not found' });
  });

  app.setErrorHandler(async (err: FastifyError, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    count(null, status === 413 ? 'too-large' : status === 500 ? 'busy' : 'malformed');
    if (status === 500) daemon.log.error({ err: err.message }, 'webhook handling failed');
    return reply
      .code(status)
      .send({ error: status === 413 ? `body larger than ${MAX_WEBHOOK_BODY_BYTES} bytes` : err.message });
  });
  return app;
}

export function adminApp(daemon: Daemon, dashboard?: DashboardSetup): FastifyInstance {
  // The dashboard's event streams never go idle: closing the listener ends them.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  if (dashboard) registerDashboard(app, daemon, dashboard);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) =>
    daemon.ready
      ? { status: 'ready', loadedAt: daemon.current.loadedAt.toISOString() }
      : reply.code(503).send({
          status: daemon.stopping
            ? 'stopping'
            : daemon.coordinator.healthy
              ? 'starting'
              : 'database-unreachable',
        }),
  );
  app.get('/metrics', async (_req, reply) => {
    const text = await daemon.metrics.registry.metrics();
    return reply.header('content-type', daemon.metrics.registry.contentType).send(text);
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
