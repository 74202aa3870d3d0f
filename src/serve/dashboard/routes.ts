/**
 * The dashboard on the admin listener (docs/dashboard.md): the built page and its assets, the
 * two JSON views it needs beyond the API (overview, repository timeline), a server-sent event
 * stream of scans and passes, and the admin token check for an exposed listener.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorMessage, type Logger } from '../../util/index.js';
import type { DaemonView } from '../view.js';
import type { DashboardSource } from './types.js';
import { overview } from './overview.js';
import { timeline } from './timeline.js';
import { bundleWebSources } from './web-build.js';

/**
 * Where the page comes from:
 * - `built`: a directory holding the built page (index.html and the app.js it loads) —
 *   `PAWL_WEB_DIR` or the daemon's `webDir`, else `dist/web/` beside the bundle
 *   (`dist/cli/pawl.cjs`, or whichever file a later build puts this code in,
 *   so the folders above it are searched);
 * - `sources`: run from a checkout's sources (tsx), web/ is bundled in memory on the first
 *   request, so the page always matches the code beside it;
 * - `missing`: neither; `/` says how to build it.
 * web/ itself holds index.html too, but not the app.js it loads: it is never served as built.
 */
export type WebSource =
  { kind: 'built'; dir: string } | { kind: 'sources'; dir: string } | { kind: 'missing'; looked: string[] };

export function locateWeb(
  env: NodeJS.ProcessEnv = process.env,
  moduleUrl: string = import.meta.url,
): WebSource {
  if (env.PAWL_WEB_DIR) return builtOrMissing([resolve(env.PAWL_WEB_DIR)]);
  const here = dirname(fileURLToPath(moduleUrl));
  if (moduleUrl.endsWith('.ts')) {
    const sources = resolve(here, '..', '..', '..', 'web');
    if (existsSync(join(sources, 'app.ts'))) return { kind: 'sources', dir: sources };
  }
  const candidates: string[] = [];
  for (let up = 0, dir = here; up < 4; up++, dir = dirname(dir))
    candidates.push(join(dir, 'web'), join(dir, 'dist', 'web'));
  return builtOrMissing(candidates);
}

function isBuilt(dir: string): boolean {
  return existsSync(join(dir, 'index.html')) && existsSync(join(dir, 'app.js'));
}

function builtOrMissing(candidates: string[]): WebSource {
  const dir = candidates.find(isBuilt);
  return dir ? { kind: 'built', dir } : { kind: 'missing', looked: candidates };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

function assetsOf(files: Map<string, Buffer>): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [n, body] of files) {
    const type = TYPES[extname(n)];
    if (type) assets.set(n, { type, body, gzip: gzipSync(body, { level: 9 }) });
  }
  return assets;
}

async function readBuilt(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const n of await readdir(dir)) if (TYPES[extname(n)]) files.set(n, await readFile(join(dir, n)));
  return files;
}

const SECURITY_HEADERS = {
  // Everything the page loads comes from this listener; nothing from another host.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function sendAsset(req: FastifyRequest, reply: FastifyReply, a: Asset): FastifyReply {
  reply.headers({
    ...SECURITY_HEADERS,
    'content-type': a.type,
    'cache-control': 'no-cache',
    vary: 'accept-encoding',
  });
  if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')))
    return reply.header('content-encoding', 'gzip').send(a.gzip);
  return reply.send(a.body);
}

export const SESSION_COOKIE = 'pawl_admin';

/**
 * The admin token check. The API takes `Authorization: Bearer TOKEN`; the browser page gets an
 * HttpOnly, SameSite=Strict cookie from `POST /login` holding an HMAC of the token (never the
 * token itself), which EventSource sends too (it cannot set headers).
 */
export class AdminAuth {
  readonly #token: Buffer;
  readonly #session: Buffer;
  constructor(token: string) {
    this.#token = Buffer.from(token);
    this.#session = Buffer.from(createHmac('sha256', token).update('pawl dashboard session').digest('hex'));
  }
  get sessionValue(): string {
    return this.#session.toString();
  }
  static async fromFile(file: string): Promise<AdminAuth> {
    let token: string;
    try {
      token = (await readFile(file, 'utf8')).trim();
    } catch (err) {
      throw new Error(`--admin-token-file ${file}: cannot read it (${errorMessage(err)})`);
    }
    if (token.length < 16)
      throw new Error(
        `--admin-token-file ${file}: the token must be at least 16 characters (it has ${token.length})`,
      );
    return new AdminAuth(token);
  }
  tokenMatches(given: string): boolean {
    const g = Buffer.from(given);
    return g.length === this.#token.length && timingSafeEqual(g, this.#token);
  }
  allows(req: FastifyRequest): boolean {
    const h = req.headers.authorization;
    if (h?.startsWith('Bearer ') && this.tokenMatches(h.slice(7).trim())) return true;
    const cookie = String(req.headers.cookie ?? '')
      .split(';')
      .map((c) => c.trim())
      .find((c) => c.startsWith(`${SESSION_COOKIE}=`));
    if (!cookie) return false;
    const v = Buffer.from(cookie.slice(SESSION_COOKIE.length + 1));
    return v.length === this.#session.length && timingSafeEqual(v, this.#session);
  }
}

const OPEN_PATHS = new Set(['/healthz', '/readyz', '/login', '/assets/login.css']);

const LOGIN_PAGE = (failed: boolean) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>pawl — sign in</title><link rel="stylesheet" href="/assets/login.css"></head>
<body><main class="login"><h1>pawl</h1><p>This admin listener needs its token
(the contents of <code>--admin-token-file</code>).</p>
<form method="post" action="/login"><label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
${failed ? '<p class="error" role="alert">That token is not right.</p>' : ''}
<button type="submit">Sign in</button></form></main></body></html>`;

function loginCss(): string {
  return `:root{color-scheme:light dark;font:16px/1.5 system-ui,sans-serif}body{margin:0;display:grid;place-items:center;min-height:100vh;background:Canvas;color:CanvasText}
.login{max-width:24rem;padding:2rem}input{display:block;width:100%;box-sizing:border-box;font:inherit;padding:.5rem;margin:.25rem 0 1rem}
button{font:inherit;padding:.5rem 1rem}.error{color:#c0392b}code{white-space:nowrap}`;
}

export interface DashboardOptions {
  /** A directory holding the built page; default: `locateWeb()`. */
  webDir?: string;
  auth?: AdminAuth | null;
}

export interface DashboardSetup {
  web: WebSource;
  /** The page's files, gzipped: read before the listener starts, or bundled on first use. */
  assets(): Promise<Map<string, Asset>>;
  auth: AdminAuth | null;
}

/** Reads a built page once (and gzips it) before the listener starts; sources wait for a request. */
export async function prepareDashboard(opts: DashboardOptions = {}): Promise<DashboardSetup> {
  const web = opts.webDir ? builtOrMissing([resolve(opts.webDir)]) : locateWeb();
  const auth = opts.auth ?? null;
  if (web.kind !== 'sources') {
    // Read and compressed on the first request for them (the dashboard is built lazily,
    // listener.ts), not at start; a failed read is tried again on the next one.
    let reading: Promise<Map<string, Asset>> | undefined;
    const built = web.kind === 'built' ? web.dir : null;
    const assets = () =>
      (reading ??= (
        built ? readBuilt(built).then(assetsOf) : Promise.resolve(new Map<string, Asset>())
      ).catch((err: unknown) => {
        reading = undefined;
        throw err;
      }));
    return { web, auth, assets };
  }
  // A failed bundle (a syntax error while editing web/) is tried again on the next request.
  let bundling: Promise<Map<string, Asset>> | undefined;
  const assets = () =>
    (bundling ??= bundleWebSources(web.dir).then(assetsOf, (err: unknown) => {
      bundling = undefined;
      throw err;
    }));
  return { web, auth, assets };
}

/** The URL a person opens: a wildcard listener is reached on loopback from the same host. */
export function dashboardUrl(adminAt: string): string {
  const m = /^(.*):(\d+)$/.exec(adminAt);
  const host = m?.[1] ?? adminAt;
  const port = m?.[2] ?? '';
  const shown = host === '0.0.0.0' || host === '[::]' || host === '' ? 'localhost' : host;
  return `http://${shown}${port ? `:${port}` : ''}/`;
}

/** One line at start: where the page is and where it comes from, or how to build it. */
export function logDashboard(log: Logger, setup: DashboardSetup, adminAt: string): void {
  const url = dashboardUrl(adminAt);
  const web = setup.web;
  if (web.kind === 'built') log.info({ url, web: web.dir }, `dashboard at ${url}`);
  else if (web.kind === 'sources')
    log.info({ url, web: web.dir }, `dashboard at ${url} (bundled from ${web.dir} on the first request)`);
  else
    log.warn(
      { url, looked: web.looked },
      `the dashboard is not built (npm run build); ${url} serves the JSON API only`,
    );
}

function source(daemon: DaemonView): DashboardSource {
  return {
    config: daemon.current.config,
    store: daemon.store,
    dryRun: daemon.dryRun,
    lastPass: daemon.lastPass,
    repositoriesOf: daemon.current.repositoriesOf,
    configuration: {
      refused: !daemon.lastReload.applied,
      at: daemon.lastReload.at,
      problems: daemon.lastReload.applied ? daemon.current.errors : daemon.lastReload.problems,
    },
    configPaths: daemon.configPaths,
    now: new Date(),
  };
}

/** Admin-listener hooks and routes; call before the API routes are registered. */
export function registerDashboard(app: FastifyInstance, daemon: DaemonView, setup: DashboardSetup): void {
  const { auth, web } = setup;
  /** The page's files, or the reply already sent when there are none to serve. */
  const pageFiles = async (reply: FastifyReply): Promise<Map<string, Asset> | null> => {
    try {
      return await setup.assets();
    } catch (err) {
      daemon.log.error(
        { web: web.kind === 'missing' ? null : web.dir, err: errorMessage(err) },
        'dashboard: cannot bundle the page',
      );
      await reply
        .code(500)
        .type('text/plain; charset=utf-8')
        .send(`The dashboard cannot be bundled: ${errorMessage(err)}`);
      return null;
    }
  };

  if (auth) {
    app.addHook('onRequest', async (req, reply) => {
      const path = req.url.split('?')[0]!;
      if (OPEN_PATHS.has(path) || auth.allows(req)) return;
      if (req.method === 'GET' && (path === '/' || path === '/index.html'))
        return reply.code(303).header('location', '/login').send();
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="pawl"')
        .send({ error: 'this admin listener needs its token: Authorization: Bearer TOKEN' });
    });
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 4096 },
      (_r, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    app.get('/assets/login.css', async (_req, reply) =>
      reply.type('text/css; charset=utf-8').send(loginCss()),
    );
    app.get('/login', async (_req, reply) =>
      reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(LOGIN_PAGE(false)),
    );
    app.post('/login', async (req, reply) => {
      const token = (req.body as { token?: unknown } | null)?.token;
      if (typeof token !== 'string' || !auth.tokenMatches(token.trim()))
        return reply
          .code(401)
          .headers(SECURITY_HEADERS)
          .type('text/html; charset=utf-8')
          .send(LOGIN_PAGE(true));
      return reply
        .code(303)
        .header(
          'set-cookie',
          `${SESSION_COOKIE}=${auth.sessionValue}; Path=/; HttpOnly; SameSite=Strict${req.protocol === 'https' ? '; Secure' : ''}`,
        )
        .header('location', '/')
        .send();
    });
  }

  app.get('/', async (req, reply) => {
    const assets = await pageFiles(reply);
    if (!assets) return reply;
    const index = assets.get('index.html');
    if (!index)
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send(
          `The dashboard is not built: run \`npm run build\` (looked in ${web.kind === 'missing' ? web.looked.join(', ') : web.dir}), or set PAWL_WEB_DIR to a built page. The JSON API is at /api/v1/.`,
        );
    return sendAsset(req, reply, index);
  });
  app.get<{ Params: { file: string } }>('/assets/:file', async (req, reply) => {
    const assets = await pageFiles(reply);
    if (!assets) return reply;
    const a = req.params.file !== 'index.html' ? assets.get(req.params.file) : undefined;
    if (!a) return reply.code(404).send({ error: 'not found' });
    return sendAsset(req, reply, a);
  });

  app.get('/api/v1/dashboard', async () => overview(source(daemon)));

  app.get<{ Params: { namespace: string; name: string }; Querystring: { limit?: string } }>(
    '/api/v1/repositories/:namespace/:name/timeline',
    async (req, reply) => {
      const n = Number(req.query.limit ?? 200);
      const limit = Number.isInteger(n) && n > 0 ? Math.min(n, 1000) : 200;
      const t = await timeline(source(daemon), `${req.params.namespace}/${req.params.name}`, limit);
      if (!t)
        return reply.code(404).send({
          error: `ImageRepository ${req.params.namespace}/${req.params.name} is not in the running configuration`,
        });
      return t;
    },
  );

  const streams = new Set<() => void>();
  app.addHook('onClose', async () => {
    for (const end of [...streams]) end();
  });
  app.get('/api/v1/stream', (req, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    const send = (event: string, data: unknown) =>
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.write('retry: 2000\n\n');
    send('hello', { at: new Date().toISOString() });
    const offScan = daemon.events.onScan((e) =>
      send('scan', {
        repository: e.report.name,
        at: e.at.toISOString(),
        tags: e.report.tags,
        error: e.report.error,
        trigger: e.trigger,
      }),
    );
    const offPass = daemon.events.onReport((e) => {
      const a = e.report.automations[0];
      send('pass', {
        automation: e.automation,
        at: e.endedAt.toISOString(),
        result: a?.result ?? null,
        commit: a?.commit ?? null,
        changes: a?.changes.length ?? 0,
        error: a?.error ?? null,
      });
    });
    // Proxies drop quiet connections; a comment line keeps this one open.
    const beat = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
    beat.unref();
    const end = () => {
      clearInterval(beat);
      offScan();
      offPass();
      streams.delete(end);
      if (!res.writableEnded) res.end();
    };
    streams.add(end);
    req.raw.on('close', end);
  });
}
