/**
 * The registry client's undici transport against real HTTP servers on loopback: redirects as
 * fetch follows them, credentials kept from other origins, the body limit, a body cut short.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BodyTooLarge, fetchTransport, undiciTransport } from '../../src/scan/registry/transport.js';

async function server(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, res, body));
  });
  s.on('connection', () => connections++);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    connections: () => connections,
    close: () =>
      new Promise((r) => {
        s.closeAllConnections();
        s.close(() => r());
      }),
  };
}

const init = (method = 'GET', headers: Record<string, string> = {}) => ({
  method,
  headers,
  signal: AbortSignal.timeout(10_000),
  maxBytes: 1024,
});

test('follows a cross-origin redirect without the Authorization header, and reports the final URL', async () => {
  const seen: Record<string, string | undefined>[] = [];
  const storage = await server((req, res) => {
    seen.push({ where: 'storage', auth: req.headers.authorization, path: req.url });
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-multi': 'a' }).end('blob');
  });
  const registry = await server((req, res) => {
    seen.push({ where: 'registry', auth: req.headers.authorization, path: req.url });
    if (req.url === '/v2/app/blobs/sha256:1') res.writeHead(307, { location: '/v2/app/blobs/moved' }).end();
    else res.writeHead(302, { location: `${storage.url}/bucket/blob?sig=1` }).end();
  });
  try {
    const t = undiciTransport();
    const r = await t(`${registry.url}/v2/app/blobs/sha256:1`, init('GET', { authorization: 'Bearer t' }));
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), 'blob');
    assert.equal(r.url, `${storage.url}/bucket/blob?sig=1`);
    assert.equal(r.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual(seen, [
      { where: 'registry', auth: 'Bearer t', path: '/v2/app/blobs/sha256:1' },
      { where: 'registry', auth: 'Bearer t', path: '/v2/app/blobs/moved' },
      { where: 'storage', auth: undefined, path: '/bucket/blob?sig=1' },
    ]);
  } finally {
    await registry.close();
    await storage.close();
  }
});

test('a 303 after a POST becomes a GET without the body; a 4xx and a 300 are returned as they are', async () => {
  const seen: string[] = [];
  const s = await server((req, res, body) => {
    seen.push(`${req.method} ${req.url} ${body}`);
    if (req.url === '/token') res.writeHead(303, { location: '/answer' }).end();
    else if (req.url === '/choices') res.writeHead(300, { location: '/answer' }).end('pick one');
    else res.writeHead(404, 'Not Found', { 'content-type': 'application/json' }).end('{"errors":[]}');
  });
  try {
    const r = await undiciTransport()(`${s.url}/token`, {
      ...init('POST', { 'content-type': 'application/x-www-form-urlencoded' }),
      body: 'grant_type=password',
    });
    assert.equal(r.status, 404);
    assert.equal(r.statusText, 'Not Found');
    assert.equal(r.body.toString(), '{"errors":[]}');
    assert.deepEqual(seen, ['POST /token grant_type=password', 'GET /answer ']);
    // fetch follows 301, 302, 303, 307 and 308 only.
    const choices = await undiciTransport()(`${s.url}/choices`, init());
    assert.equal(choices.status, 300);
    assert.equal(choices.body.toString(), 'pick one');
  } finally {
    await s.close();
  }
});

test('a body over the limit fails with BodyTooLarge; a body cut short fails; HEAD reads no body', async () => {
  const s = await server((req, res) => {
    if (req.url === '/big') res.writeHead(200).end('x'.repeat(5000));
    else if (req.url === '/cut') {
      res.writeHead(200, { 'content-length': '100' });
      res.write('only part');
      setTimeout(() => res.socket?.destroy(), 20);
    } else res.writeHead(200, { 'content-length': '4', 'docker-content-digest': 'sha256:x' }).end();
  });
  try {
    const t = undiciTransport();
    await assert.rejects(t(`${s.url}/big`, init()), BodyTooLarge);
    await assert.rejects(t(`${s.url}/cut`, init()), (err: Error) => !(err instanceof BodyTooLarge));
    const h = await t(`${s.url}/head`, init('HEAD'));
    assert.equal(h.status, 200);
    assert.equal(h.body.length, 0);
    assert.equal(h.headers.get('docker-content-digest'), 'sha256:x');
  } finally {
    await s.close();
  }
});

test('HEAD requests keep their connection alive: candidates are checked over one socket', async () => {
  const s = await server((req, res) => {
    // A HEAD answers with the length the GET's body would have, as registries do.
    if (req.method === 'HEAD')
      res.writeHead(200, { 'content-length': '512', 'docker-content-digest': `sha256:${req.url}` }).end();
    else res.writeHead(200).end('{"tags":[]}');
  });
  try {
    const t = undiciTransport();
    for (const tag of ['1.0.0', '1.1.0', '1.2.0']) {
      const h = await t(`${s.url}/v2/app/manifests/${tag}`, init('HEAD'));
      assert.equal(h.status, 200);
      assert.equal(h.body.length, 0);
      assert.equal(h.headers.get('docker-content-digest'), `sha256:/v2/app/manifests/${tag}`);
    }
    const list = await t(`${s.url}/v2/app/tags/list`, init());
    assert.equal(list.body.toString(), '{"tags":[]}');
    assert.ok(
      s.connections() <= 2,
      `${s.connections()} connections for 4 requests: HEAD closed its connection`,
    );
  } finally {
    await s.close();
  }
});

test('response headers read as fetch reads them: case-insensitive, repeats joined, in name order', async () => {
  const s = await server((_req, res) => {
    res.setHeader('X-Multi', ['b', 'a']);
    res.setHeader('Docker-Content-Digest', 'sha256:1');
    res.setHeader('Content-Type', 'application/json');
    res.writeHead(200).end('{}');
  });
  try {
    const list = (h: { forEach(fn: (v: string, k: string) => void): void }) => {
      const out: [string, string][] = [];
      h.forEach((v, k) => out.push([k, v]));
      return out.filter(
        ([k]) => !['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k),
      );
    };
    const viaUndici = await undiciTransport()(`${s.url}/x`, init());
    const viaFetch = await fetchTransport(fetch)(`${s.url}/x`, init());
    assert.deepEqual(list(viaUndici.headers), list(viaFetch.headers));
    assert.deepEqual(list(viaUndici.headers), [
      ['content-type', 'application/json'],
      ['docker-content-digest', 'sha256:1'],
      ['x-multi', 'b, a'],
    ]);
    assert.equal(viaUndici.headers.get('X-MULTI'), 'b, a');
    assert.equal(viaUndici.headers.get('Docker-Content-Digest'), 'sha256:1');
    assert.equal(viaUndici.headers.get('absent'), null);
  } finally {
    await s.close();
  }
});

test("the caller's signal ends an exchange the server never answers, and the connection is dropped", async () => {
  let closed = 0;
  const s = await server((req) => {
    // Never answers; counts the sockets the client gives up.
    req.socket.on('close', () => closed++);
  });
  try {
    const t = undiciTransport();
    const ctl = new AbortController();
    const pending = t(`${s.url}/v2/app/tags/list`, { ...init(), signal: ctl.signal });
    // Abort once the request has reached the server, as a deadline would.
    await new Promise<void>((r) => {
      const poll = (): void => void (s.connections() > 0 ? setTimeout(r, 20) : setTimeout(poll, 5));
      poll();
    });
    ctl.abort(new Error('deadline'));
    await assert.rejects(pending, /deadline/);
    while (closed === 0) await new Promise((r) => setTimeout(r, 10));
    // An already aborted signal never reaches the server.
    const before = s.connections();
    const gone = new AbortController();
    gone.abort(new Error('gone'));
    await assert.rejects(t(`${s.url}/x`, { ...init(), signal: gone.signal }), /gone/);
    assert.equal(s.connections(), before);
  } finally {
    await s.close();
  }
});
