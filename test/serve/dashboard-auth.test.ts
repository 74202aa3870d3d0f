/**
 * The admin token (`--admin-token-file`): an exposed admin listener needs it; the API takes it as
 * a bearer token, the browser page through `POST /login`'s cookie; health checks stay open.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildWeb } from '../../scripts/build-web.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';
import { runCli } from '../helpers/world.js';

const TOKEN = 'admin-token-0123456789abcdef';

describe('an admin listener with a token', () => {
  let dir: string;
  let serve: ServeProcess;
  let base: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pawl-admin-'));
    await writeFile(join(dir, 'token'), `${TOKEN}\n`);
    await writeFile(join(dir, 'empty.yaml'), '# no objects yet\n');
    const webDir = await buildWeb(join(dir, 'web'));
    serve = await startServe({
      configDir: join(dir, 'empty.yaml'),
      stateDir: join(dir, 'state'),
      args: ['--admin-token-file', join(dir, 'token')],
      env: { PAWL_WEB_DIR: webDir },
    });
    base = `http://${serve.admin}`;
  });
  after(async () => {
    await serve?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('the API needs the bearer token; health checks do not', async () => {
    const none = await fetch(`${base}/api/v1/status`);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    assert.equal(
      (
        await fetch(`${base}/api/v1/status`, {
          headers: { authorization: 'Bearer wrong-token-0123456789abc' },
        })
      ).status,
      401,
    );
    assert.equal(
      (await fetch(`${base}/api/v1/status`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
      200,
    );
    assert.equal((await fetch(`${base}/api/v1/stream`)).status, 401);
    assert.equal((await fetch(`${base}/metrics`)).status, 401);
    assert.equal((await fetch(`${base}/assets/app.js`)).status, 401);
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
  });

  test('the page sends a browser to the login form; the right token sets a session cookie', async () => {
    const page = await fetch(`${base}/`, { redirect: 'manual' });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), '/login');
    const form = await fetch(`${base}/login`);
    assert.match(await form.text(), /<form method="post" action="\/login">/);

    const post = (token: string) =>
      fetch(`${base}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
    const wrong = await post('not-the-token-at-all');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('set-cookie'), null);

    const right = await post(TOKEN);
    assert.equal(right.status, 303);
    const cookie = right.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^pawl_admin=[0-9a-f]{64}; Path=\/; HttpOnly; SameSite=Strict$/);
    assert.ok(!cookie.includes(TOKEN), 'the cookie does not hold the token');
    const session = cookie.split(';')[0]!;
    const dash = await fetch(`${base}/api/v1/dashboard`, { headers: { cookie: session } });
    assert.equal(dash.status, 200);
    assert.deepEqual(((await dash.json()) as { markers: unknown[] }).markers, []);
    const index = await fetch(`${base}/`, { headers: { cookie: session } });
    assert.equal(index.status, 200);
    assert.match(await index.text(), /<script type="module" src="\/assets\/app.js">/);
    assert.equal(
      (await fetch(`${base}/api/v1/status`, { headers: { cookie: 'pawl_admin=' + '0'.repeat(64) } })).status,
      401,
    );
  });
});

describe('an exposed admin listener without a token', () => {
  test('is refused with exit 2 before anything listens', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pawl-admin-'));
    try {
      await writeFile(join(dir, 'empty.yaml'), '# nothing\n');
      const r = await runCli([
        'serve',
        '-c',
        dir,
        '--state-dir',
        join(dir, 'state'),
        '--listen',
        '127.0.0.1:0',
        '--admin-listen',
        '0.0.0.0:0',
      ]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /--admin-listen 0\.0\.0\.0:0 is not a loopback address.*--admin-token-file FILE/,
      );

      await writeFile(join(dir, 'short'), 'abc\n');
      const s = await runCli([
        'serve',
        '-c',
        dir,
        '--state-dir',
        join(dir, 'state'),
        '--listen',
        '127.0.0.1:0',
        '--admin-listen',
        '0.0.0.0:0',
        '--admin-token-file',
        join(dir, 'short'),
      ]);
      assert.equal(s.code, 2, s.stderr);
      assert.match(s.stderr, /at least 16 characters/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
