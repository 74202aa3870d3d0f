import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { adminClient } from '../../src/cli/admin.js';
import type { CommandContext } from '../../src/cli/context.js';
import { UsageError } from '../../src/util/index.js';
import { silentLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';

const TOKEN = 'the-admin-token-0123456789';

function ctx(): CommandContext {
  return {
    options: { config: [], stateDir: '.pawl', logLevel: 'silent', json: false, strict: false },
    log: silentLogger,
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    redactor: new Redactor(),
  };
}

test('the admin token goes as a Bearer header; a missing or wrong one is named with what to do', async () => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    const ok = req.headers.authorization === `Bearer ${TOKEN}`;
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? [] : { error: 'this admin listener needs its token' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), 'pawl-admin-'));
  try {
    const none = await adminClient(ctx(), {}, url);
    await assert.rejects(none.get('/api/v1/repositories'), (err: unknown) => {
      assert.ok(err instanceof UsageError);
      assert.match(err.message, /needs its admin token: give --token-file FILE .* or set PAWL_ADMIN_TOKEN/);
      return true;
    });
    await writeFile(join(dir, 'wrong'), 'not-it-0123456789\n');
    const wrong = await adminClient(ctx(), { tokenFile: join(dir, 'wrong') }, url);
    await assert.rejects(wrong.get('/api/v1/repositories'), /refused the admin token/);
    await writeFile(join(dir, 'token'), `${TOKEN}\n`);
    const c = ctx();
    const right = await adminClient(c, { tokenFile: join(dir, 'token') }, url.replace('http://', ''));
    assert.deepEqual(await right.get('/api/v1/repositories'), []);
    assert.equal(seen.at(-1)!.authorization, `Bearer ${TOKEN}`);
    assert.equal(c.redactor.text(`x ${TOKEN} y`).includes(TOKEN), false, 'the token is redacted');
    await assert.rejects(
      adminClient(ctx(), { tokenFile: join(dir, 'missing') }, url),
      /--token-file .*missing/,
    );
  } finally {
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
});
