/**
 * A programmable HTTP(S) proxy in front of the real test registry. Registry 2.8 ignores `?n=` on
 * tag lists, so the proxy paginates them itself (`n`/`last` + `Link` headers); it counts requests
 * by kind, injects faults (status codes, hangs, truncated or malformed bodies, resets), serves a
 * stale tag list instead of the real one, and can make HEAD/GET of chosen manifests answer 404.
 * Authentication is the upstream's: headers pass through both ways.
 *
 * With `referrersApi` it also answers the OCI Referrers API (`GET /v2/<name>/referrers/<digest>`)
 * — the one thing it fakes: Debian's docker-registry 2.8 predates the API, so there is no real
 * registry on the machine to test that path against. It answers from what was pushed through
 * it, as a registry with the API does: every manifest PUT whose JSON has a `subject` is indexed.
 */
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
  type Server,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';

const exec = promisify(execFile);

export type RequestKind = 'ping' | 'tags' | 'manifest-head' | 'manifest-get' | 'blob' | 'referrers' | 'other';

export type FaultAction =
  /** Answer with this status (body: a registry error JSON unless given). */
  | { status: number; retryAfter?: string; headers?: Record<string, string>; body?: string | Buffer }
  /** Never answer (the client's timeout must fire); `onHang` is told when a request hangs. */
  | { hang: true; onHang?: () => void }
  /** 200 with a Content-Length for the whole body, half of it sent, then the socket destroyed. */
  | { truncate: true }
  /** 200 with a complete HTTP body that is cut-off JSON. */
  | { malformed: true }
  /** Destroy the socket without answering. */
  | { reset: true };

export interface Fault {
  /** Which requests it applies to; default 'tags'. 'any' matches everything. */
  kind?: RequestKind | 'any';
  /** Repository path (`org/app`); default any. */
  repo?: string;
  /** Tags only: the 1-based page number it hits; default any page. */
  page?: number;
  /** How many matching requests it hits; default 1; `Infinity` for a persistent fault. */
  times?: number;
  action: FaultAction;
}

export interface ProxyOptions {
  /** Tag-list page size; undefined: the whole list in one answer unless the client asks `n`. */
  pageSize?: number;
  /** How `Link` next URLs are written: relative path (default), absolute, or pointing at another origin. */
  linkStyle?: 'relative' | 'absolute' | 'cross-origin';
  /** Serve HTTPS with this certificate (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer; requestClientCert?: boolean };
  /** Answer the Referrers API from the manifests with a `subject` pushed through the proxy. */
  referrersApi?: boolean;
}

export interface ProxyRequest {
  method: string;
  path: string;
  kind: RequestKind;
  repo?: string;
  page?: number;
  status: number;
  /** Whether the request carried an Authorization header (never its value). */
  authorized: boolean;
}

export interface RegistryProxy {
  /** `http(s)://127.0.0.1:PORT` */
  url: string;
  /** `127.0.0.1:PORT` */
  host: string;
  /** Every request seen, in order. */
  requests: ProxyRequest[];
  /** Number of requests of a kind (optionally for one repository). */
  count(kind: RequestKind | 'any', repo?: string): number;
  resetCounts(): void;
  addFault(fault: Fault): void;
  clearFaults(): void;
  /** Serve this tag list for a repository instead of the registry's (null: back to real). */
  setTagList(repo: string, tags: string[] | null): void;
  /** HEAD/GET manifest of these tags (or digests) answers 404 (empty list: pass through again). */
  setMissingManifests(repo: string, references: string[]): void;
  setPageSize(size: number | undefined): void;
  stop(): Promise<void>;
}

interface Route {
  kind: RequestKind;
  repo?: string;
  reference?: string;
}

function route(method: string, pathname: string): Route {
  if (pathname === '/v2/' || pathname === '/v2') return { kind: 'ping' };
  let m = /^\/v2\/(.+)\/tags\/list$/.exec(pathname);
  if (m) return { kind: 'tags', repo: m[1]! };
  m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(pathname);
  if (m) return { kind: method === 'HEAD' ? 'manifest-head' : 'manifest-get', repo: m[1]!, reference: m[2]! };
  m = /^\/v2\/(.+)\/referrers\/([^/]+)$/.exec(pathname);
  if (m) return { kind: 'referrers', repo: m[1]!, reference: m[2]! };
  m = /^\/v2\/(.+)\/blobs\/(.+)$/.exec(pathname);
  if (m) return { kind: 'blob', repo: m[1]! };
  return { kind: 'other' };
}

function errorBody(status: number): string {
  const code = status === 429 ? 'TOOMANYREQUESTS' : status === 404 ? 'MANIFEST_UNKNOWN' : 'UNAVAILABLE';
  return JSON.stringify({ errors: [{ code, message: `injected by test proxy (${status})` }] });
}

export async function startRegistryProxy(upstream: string, opts: ProxyOptions = {}): Promise<RegistryProxy> {
  const up = new URL(upstream);
  const requests: ProxyRequest[] = [];
  let faults: (Fault & { left: number })[] = [];
  const overrides = new Map<string, string[]>();
  const missing = new Map<string, Set<string>>();
  let pageSize = opts.pageSize;
  const sockets = new Set<Socket>();
  let selfUrl = '';
  /** `repo@subject` → the referrer descriptors pushed for it (referrersApi). */
  const referrers = new Map<string, Record<string, unknown>[]>();

  const takeFault = (r: Route, page: number | undefined): FaultAction | undefined => {
    for (const f of faults) {
      if (f.left <= 0) continue;
      const kind = f.kind ?? 'tags';
      if (kind !== 'any' && kind !== r.kind) continue;
      if (f.repo !== undefined && f.repo !== r.repo) continue;
      if (f.page !== undefined && f.page !== page) continue;
      f.left--;
      return f.action;
    }
    return undefined;
  };

  const forwardHeaders = (req: IncomingMessage): Record<string, string> => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || k === 'host' || k === 'connection') continue;
      headers[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    headers.host = up.host;
    return headers;
  };

  /** Buffered upstream call (for tag lists, which the proxy rewrites). */
  const fetchUpstream = (
    req: IncomingMessage,
    path: string,
  ): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const u = httpRequest(
        { host: up.hostname, port: up.port, method: 'GET', path, headers: forwardHeaders(req) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 502,
              headers: res.headers as Record<string, string | string[]>,
              body: Buffer.concat(chunks),
            }),
          );
          res.on('error', reject);
        },
      );
      u.on('error', reject);
      u.end();
    });

  const applyFault = (res: ServerResponse, action: FaultAction, record: ProxyRequest): void => {
    if ('hang' in action) {
      record.status = 0;
      action.onHang?.();
      return;
    }
    if ('reset' in action) {
      record.status = 0;
      res.socket?.destroy();
      return;
    }
    if ('truncate' in action) {
      const body = JSON.stringify({
        name: record.repo ?? '',
        tags: Array.from({ length: 50 }, (_, i) => `t${i}`),
      });
      record.status = 200;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      res.write(body.slice(0, Math.floor(body.length / 2)));
      setTimeout(() => res.socket?.destroy(), 10);
      return;
    }
    if ('malformed' in action) {
      const body = JSON.stringify({ name: record.repo ?? '', tags: ['a', 'b', 'c'] }).slice(0, 20);
      record.status = 200;
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    record.status = action.status;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...action.headers };
    if (action.retryAfter !== undefined) headers['retry-after'] = action.retryAfter;
    res.writeHead(action.status, headers).end(action.body ?? errorBody(action.status));
  };

  const handleTags = async (
    req: IncomingMessage,
    res: ServerResponse,
    r: Route,
    url: URL,
    record: ProxyRequest,
  ): Promise<void> => {
    const upstreamRes = await fetchUpstream(req, `/v2/${r.repo}/tags/list`);
    if (upstreamRes.status !== 200) {
      // Authentication challenges pass through untouched; faults hit authenticated requests.
      record.status = upstreamRes.status;
      res.writeHead(upstreamRes.status, upstreamRes.headers).end(upstreamRes.body);
      return;
    }
    const parsed = JSON.parse(upstreamRes.body.toString('utf8')) as { name: string; tags: string[] | null };
    const all = [...(overrides.get(r.repo!) ?? parsed.tags ?? [])].sort();
    const nParam = url.searchParams.get('n');
    const asked = nParam !== null && Number(nParam) > 0 ? Number(nParam) : undefined;
    const size =
      asked !== undefined && pageSize !== undefined ? Math.min(asked, pageSize) : (asked ?? pageSize);
    const last = url.searchParams.get('last');
    const after = last === null ? 0 : all.findIndex((t) => t > last);
    const start = after < 0 ? all.length : after;
    record.page = size === undefined ? 1 : Math.floor(start / size) + 1;
    const fault = takeFault(r, record.page);
    if (fault) {
      applyFault(res, fault, record);
      return;
    }
    const slice = size === undefined ? all.slice(start) : all.slice(start, start + size);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'docker-distribution-api-version': 'registry/2.0',
    };
    if (size !== undefined && start + size < all.length && slice.length > 0) {
      const next = `/v2/${r.repo}/tags/list?n=${size}&last=${encodeURIComponent(slice[slice.length - 1]!)}`;
      const style = opts.linkStyle ?? 'relative';
      const href =
        style === 'relative'
          ? next
          : style === 'absolute'
            ? `${selfUrl}${next}`
            : `http://elsewhere.example.invalid${next}`;
      headers.link = `<${href}>; rel="next"`;
    }
    record.status = 200;
    res.writeHead(200, headers).end(JSON.stringify({ name: parsed.name, tags: slice }));
  };

  const pipeThrough = (req: IncomingMessage, res: ServerResponse, record: ProxyRequest): void => {
    const u = httpRequest(
      { host: up.hostname, port: up.port, method: req.method, path: req.url, headers: forwardHeaders(req) },
      (ures) => {
        record.status = ures.statusCode ?? 502;
        res.writeHead(ures.statusCode ?? 502, ures.headers);
        ures.pipe(res);
      },
    );
    u.on('error', () => {
      record.status = 502;
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(u);
  };

  /** A manifest PUT: buffered, forwarded, and on success indexed under its subject. */
  const indexThenForward = (
    req: IncomingMessage,
    res: ServerResponse,
    r: Route,
    record: ProxyRequest,
  ): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const u = httpRequest(
        { host: up.hostname, port: up.port, method: 'PUT', path: req.url, headers: forwardHeaders(req) },
        (ures) => {
          record.status = ures.statusCode ?? 502;
          if (record.status === 201) {
            try {
              const m = JSON.parse(body.toString('utf8')) as {
                mediaType?: string;
                artifactType?: string;
                config?: { mediaType?: string };
                subject?: { digest?: string };
                annotations?: Record<string, string>;
              };
              if (m.subject?.digest) {
                const key = `${r.repo}@${m.subject.digest}`;
                const list = referrers.get(key) ?? [];
                list.push({
                  mediaType: m.mediaType,
                  digest: `sha256:${createHash('sha256').update(body).digest('hex')}`,
                  size: body.length,
                  artifactType: m.artifactType ?? m.config?.mediaType,
                  ...(m.annotations ? { annotations: m.annotations } : {}),
                });
                referrers.set(key, list);
              }
            } catch {
              // not JSON: nothing to index, as a registry would have refused it anyway
            }
          }
          res.writeHead(ures.statusCode ?? 502, ures.headers);
          ures.pipe(res);
        },
      );
      u.on('error', () => {
        record.status = 502;
        if (!res.headersSent) res.writeHead(502).end();
      });
      u.end(body);
    });
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const method = req.method ?? 'GET';
    const r = route(method, url.pathname);
    const record: ProxyRequest = {
      method,
      path: url.pathname + url.search,
      kind: r.kind,
      ...(r.repo !== undefined ? { repo: r.repo } : {}),
      status: 0,
      authorized: req.headers.authorization !== undefined,
    };
    requests.push(record);
    if (r.kind === 'tags') {
      handleTags(req, res, r, url, record).catch(() => {
        record.status = 502;
        if (!res.headersSent) res.writeHead(502).end();
      });
      return;
    }
    const fault = takeFault(r, undefined);
    if (fault) {
      req.resume();
      applyFault(res, fault, record);
      return;
    }
    if (opts.referrersApi && r.kind === 'referrers') {
      // Authentication as upstream's: ask it for the subject first, then answer the list.
      fetchUpstream(req, `/v2/${r.repo}/manifests/${r.reference}`).then(
        (u) => {
          record.status = u.status === 401 ? 401 : 200;
          if (u.status === 401) {
            res.writeHead(401, u.headers).end(u.body);
            return;
          }
          const manifests = referrers.get(`${r.repo}@${decodeURIComponent(r.reference!)}`) ?? [];
          res.writeHead(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' }).end(
            JSON.stringify({
              schemaVersion: 2,
              mediaType: 'application/vnd.oci.image.index.v1+json',
              manifests,
            }),
          );
        },
        () => res.writeHead(502).end(),
      );
      return;
    }
    if (opts.referrersApi && method === 'PUT' && r.kind === 'manifest-get') {
      indexThenForward(req, res, r, record);
      return;
    }
    if (
      (r.kind === 'manifest-head' || r.kind === 'manifest-get') &&
      missing.get(r.repo!)?.has(decodeURIComponent(r.reference!))
    ) {
      // Still ask upstream first, so authentication behaves exactly as it would.
      fetchUpstream(req, url.pathname).then(
        (u) => {
          if (u.status === 401) {
            record.status = 401;
            res.writeHead(401, u.headers).end(u.body);
            return;
          }
          record.status = 404;
          res
            .writeHead(404, { 'content-type': 'application/json' })
            .end(method === 'HEAD' ? undefined : errorBody(404));
        },
        () => res.writeHead(502).end(),
      );
      return;
    }
    pipeThrough(req, res, record);
  };

  const server: Server = opts.tls
    ? createHttpsServer(
        {
          cert: opts.tls.cert,
          key: opts.tls.key,
          ...(opts.tls.ca ? { ca: opts.tls.ca } : {}),
          ...(opts.tls.requestClientCert ? { requestCert: true, rejectUnauthorized: true } : {}),
        },
        handler,
      )
    : createHttpServer(handler);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref(); // a forgotten stop() must not hang the test process
  const port = (server.address() as AddressInfo).port;
  selfUrl = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  return {
    url: selfUrl,
    host: `127.0.0.1:${port}`,
    requests,
    count(kind, repo) {
      return requests.filter(
        (q) => (kind === 'any' || q.kind === kind) && (repo === undefined || q.repo === repo),
      ).length;
    },
    resetCounts() {
      requests.length = 0;
    },
    addFault(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    clearFaults() {
      faults = [];
    },
    setTagList(repo, tags) {
      if (tags === null) overrides.delete(repo);
      else overrides.set(repo, [...tags]);
    },
    setMissingManifests(repo, references) {
      if (references.length === 0) missing.delete(repo);
      else missing.set(repo, new Set(references));
    },
    setPageSize(size) {
      pageSize = size;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TestCertificates {
  dir: string;
  /** PEM strings. */
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** A throwaway CA (openssl) with a server certificate for 127.0.0.1/localhost and a client certificate. */
export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-tls-'));
  const f = (n: string): string => join(dir, n);
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
    '/CN=pawl-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
  ]);
  await writeFile(
    f('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  await writeFile(f('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const who of ['server', 'client']) {
    const cn = who === 'server' ? '127.0.0.1' : 'pawl-test-client';
    await exec('openssl', [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-subj',
      `/CN=${cn}`,
      '-keyout',
      f(`${who}.key`),
      '-out',
      f(`${who}.csr`),
    ]);
    await exec('openssl', [
      'x509',
      '-req',
      '-sha256',
      '-days',
      '2',
      '-in',
      f(`${who}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-extfile',
      f(`${who}.ext`),
      '-out',
      f(`${who}.crt`),
    ]);
  }
  const read = (n: string): Promise<string> => readFile(f(n), 'utf8');
  return {
    dir,
    caCert: await read('ca.crt'),
    serverCert: await read('server.crt'),
    serverKey: await read('server.key'),
    clientCert: await read('client.crt'),
    clientKey: await read('client.key'),
  };
}
