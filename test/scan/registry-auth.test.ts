/**
 * Credentials from the Docker config through a real `docker-credential-*` executable, and TLS
 * with a custom CA (certSecretRef), including a client certificate, against the real registry.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRegistry, opaqueSecret, dockerConfigSecret, type TestRegistry } from '../helpers/registry.js';
import {
  startRegistryProxy,
  makeTestCertificates,
  type TestCertificates,
} from '../helpers/registry-proxy.js';
import { pushImage } from '../helpers/push.js';
import { createRegistryClient, RegistryError } from '../../src/scan/registry/client.js';
import { RegistryPool } from '../../src/scan/registry/pool.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import type { RepositoryRef } from '../../src/scan/registry/types.js';
import { redactResponse } from '../../src/store/redact.js';
import { isSealedExchange } from '../../src/util/index.js';

const noSleep = async (): Promise<void> => undefined;

describe('credentials through a docker-credential helper (htpasswd registry)', () => {
  let reg: TestRegistry;
  let dir: string;
  const oldPath = process.env.PATH;

  before(async () => {
    reg = await startRegistry({ auth: 'htpasswd' });
    await pushImage(reg.url, 'org/app', 'v1', { auth: reg.user! });
    dir = await mkdtemp(join(tmpdir(), 'pawl-credhelper-'));
    const helper = join(dir, 'docker-credential-test');
    // A credential helper as Docker specifies them: `get`, the server on stdin, JSON out.
    await writeFile(
      helper,
      `#!/bin/sh\nread server\necho "$1 $server" >> "${join(dir, 'calls')}"\n` +
        `if [ "$1" = get ] && [ "$server" = "${reg.host}" ]; then\n` +
        `  printf '{"ServerURL":"%s","Username":"${reg.user!.username}","Secret":"${reg.user!.password}"}' "$server"\n` +
        `else\n  echo "credentials not found in native keychain"\n  exit 1\nfi\n`,
    );
    await chmod(helper, 0o755);
    await writeFile(join(dir, 'config.json'), JSON.stringify({ credHelpers: { [reg.host]: 'test' } }));
    process.env.PATH = `${dir}:${oldPath}`;
  });
  after(async () => {
    process.env.PATH = oldPath;
    await reg?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('lists tags with the helper’s credentials, asking it for the registry host', async () => {
    const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: dir });
    const list = await c.listTags(parseRepositoryRef(`${reg.host}/org/app`));
    assert.deepEqual(list.tags, ['v1']);
    const calls = await readFile(join(dir, 'calls'), 'utf8');
    assert.equal(calls.trim(), `get ${reg.host}`);
    assert.ok(!JSON.stringify(list.responses).includes(reg.user!.password));
  });

  test('a helper missing from PATH is a clear error', async () => {
    const other = await mkdtemp(join(tmpdir(), 'pawl-credhelper-'));
    try {
      await writeFile(join(other, 'config.json'), JSON.stringify({ credHelpers: { [reg.host]: 'absent' } }));
      const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: other });
      await assert.rejects(
        c.listTags(parseRepositoryRef(`${reg.host}/org/app`)),
        /docker-credential-absent is not on PATH/,
      );
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

describe('TLS with a custom CA (certSecretRef)', () => {
  let reg: TestRegistry;
  let certs: TestCertificates;

  before(async () => {
    reg = await startRegistry({ auth: 'none' });
    await pushImage(reg.url, 'org/app', 'v1');
    certs = await makeTestCertificates();
  });
  after(async () => {
    await reg?.stop();
    if (certs) await rm(certs.dir, { recursive: true, force: true });
  });

  function httpsRef(host: string): RepositoryRef {
    // Loopback hosts default to plain HTTP; this test needs the HTTPS path.
    return { ...parseRepositoryRef(`${host}/org/app`), baseUrl: `https://${host}` };
  }

  test('trusts the CA from ca.crt; without it the certificate is refused', async () => {
    const proxy = await startRegistryProxy(reg.url, {
      tls: { cert: certs.serverCert, key: certs.serverKey },
    });
    try {
      const ok = createRegistryClient({
        pool: new RegistryPool(),
        dockerConfig: false,
        caSecret: opaqueSecret({ 'ca.crt': certs.caCert }),
      });
      assert.deepEqual((await ok.listTags(httpsRef(proxy.host))).tags, ['v1']);
      const plain = createRegistryClient({
        pool: new RegistryPool({ limits: { maxRetries: 0 } }),
        dockerConfig: false,
        sleep: noSleep,
      });
      await assert.rejects(plain.listTags(httpsRef(proxy.host)), (err: unknown) => {
        assert.ok(err instanceof RegistryError);
        assert.match(err.message, /certificate|CERT/i);
        return true;
      });
    } finally {
      await proxy.stop();
    }
  });

  test('presents a client certificate from tls.crt/tls.key', async () => {
    const proxy = await startRegistryProxy(reg.url, {
      tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.caCert, requestClientCert: true },
    });
    try {
      const withCert = createRegistryClient({
        pool: new RegistryPool(),
        dockerConfig: false,
        caSecret: opaqueSecret({
          'ca.crt': certs.caCert,
          'tls.crt': certs.clientCert,
          'tls.key': certs.clientKey,
        }),
      });
      assert.deepEqual((await withCert.listTags(httpsRef(proxy.host))).tags, ['v1']);
      const without = createRegistryClient({
        pool: new RegistryPool({ limits: { maxRetries: 0 } }),
        dockerConfig: false,
        sleep: noSleep,
        caSecret: opaqueSecret({ 'ca.crt': certs.caCert }),
      });
      await assert.rejects(without.listTags(httpsRef(proxy.host)), RegistryError);
    } finally {
      await proxy.stop();
    }
  });

  test('a certSecretRef with tls.crt but no tls.key is refused up front', () => {
    assert.throws(
      () => createRegistryClient({ caSecret: opaqueSecret({ 'tls.crt': certs.clientCert }) }),
      /tls\.crt without tls\.key/,
    );
  });
});

describe('anonymous bearer tokens (token registry that lets anyone pull)', () => {
  let reg: TestRegistry;
  before(async () => {
    reg = await startRegistry({ auth: 'token', anonymousPull: true });
    await pushImage(reg.url, 'org/public', 'v1', { auth: reg.user! });
  });
  after(async () => {
    await reg?.stop();
  });
  test('lists tags with an anonymous token', async () => {
    const before = reg.tokenServer!.requests;
    const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: false });
    const list = await c.listTags(parseRepositoryRef(`${reg.host}/org/public`));
    assert.deepEqual(list.tags, ['v1']);
    assert.equal(reg.tokenServer!.requests - before, 1);
    assert.equal(list.requests, 3, 'ping, token, one page');
  });
});

describe('identity tokens (OAuth2 refresh-token grant)', () => {
  let reg: TestRegistry;
  const identity = 'identity-token-for-alice-0123456789';
  before(async () => {
    reg = await startRegistry({ auth: 'token', identityTokens: { [identity]: 'alice' } });
    await pushImage(reg.url, 'org/private', 'v1', { auth: reg.user! });
  });
  after(async () => {
    await reg?.stop();
  });
  test('an identitytoken in the Secret is exchanged at the token service', async () => {
    const secret = dockerConfigSecret(reg.host, 'ignored', 'ignored');
    secret.data['.dockerconfigjson'] = Buffer.from(
      JSON.stringify({ auths: { [reg.host]: { identitytoken: identity } } }),
    );
    const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: false, secret });
    const list = await c.listTags(parseRepositoryRef(`${reg.host}/org/private`));
    assert.deepEqual(list.tags, ['v1']);
    const recorded = JSON.stringify(list.responses);
    assert.ok(!recorded.includes(identity));
    for (const t of reg.tokenServer!.issued) assert.ok(!recorded.includes(t));
  });
  test('the client’s records are sealed: the store keeps what its whole second pass would', async () => {
    const secret = dockerConfigSecret(reg.host, 'ignored', 'ignored');
    secret.data['.dockerconfigjson'] = Buffer.from(
      JSON.stringify({ auths: { [reg.host]: { identitytoken: identity } } }),
    );
    const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: false, secret });
    const list = await c.listTags(parseRepositoryRef(`${reg.host}/org/private`));
    assert.ok(list.responses.length >= 3, 'ping, token, list');
    for (const r of list.responses) {
      assert.ok(Object.isFrozen(r) && Object.isFrozen(r.headers), r.url);
      assert.ok(isSealedExchange(r), r.url);
      const unsealed = { ...r, headers: { ...r.headers } };
      assert.ok(!isSealedExchange(unsealed));
      assert.deepEqual(redactResponse(r), redactResponse(unsealed), r.url);
    }
    const stored = JSON.stringify(list.responses.map(redactResponse));
    for (const t of [identity, ...reg.tokenServer!.issued]) assert.ok(!stored.includes(t));
  });
  test('a wrong identity token is refused with the Secret named', async () => {
    const secret = dockerConfigSecret(reg.host, 'ignored', 'ignored', 'badid');
    secret.data['.dockerconfigjson'] = Buffer.from(
      JSON.stringify({ auths: { [reg.host]: { identitytoken: 'not-a-valid-identity' } } }),
    );
    const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: false, secret });
    await assert.rejects(c.listTags(parseRepositoryRef(`${reg.host}/org/private`)), (err: unknown) => {
      assert.ok(err instanceof RegistryError);
      assert.match(err.message, /refused the credentials from Secret default\/badid/);
      assert.doesNotMatch(err.message, /not-a-valid-identity/);
      return true;
    });
  });
});
