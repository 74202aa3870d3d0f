/**
 * The registry client against Debian's real docker-registry in its three set-ups: anonymous,
 * htpasswd (Basic) and token auth, with the paginating proxy in front.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import {
  startRegistry,
  dockerConfigSecret,
  type TestRegistry,
  type RegistryAuth,
} from '../helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';
import { pushImage, seedTags, deleteTag, type PushAuth } from '../helpers/push.js';
import {
  createRegistryClient,
  RegistryError,
  type RegistryClientOptions,
} from '../../src/scan/registry/client.js';
import { RegistryPool } from '../../src/scan/registry/pool.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import type { BuildTime, BuildTimeCache, RegistryClient } from '../../src/scan/registry/types.js';

function captureLogger(): { log: pino.Logger; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return { log: pino({ level: 'debug' }, stream), text: () => chunks.join('') };
}

class MemoryCache implements BuildTimeCache {
  readonly map = new Map<string, BuildTime | null>();
  async get(d: string): Promise<BuildTime | null | undefined> {
    return this.map.get(d);
  }
  async set(d: string, v: BuildTime | null): Promise<void> {
    this.map.set(d, v);
  }
}

const TAGS = 5000;

for (const auth of ['none', 'htpasswd', 'token'] as RegistryAuth[]) {
  describe(`registry client against docker-registry (auth: ${auth})`, () => {
    let reg: TestRegistry;
    let proxy: RegistryProxy;
    let pushAuth: PushAuth | undefined;
    let v1Digest = '';
    const logs = captureLogger();
    const errors: string[] = [];
    const recorded: unknown[] = [];

    function client(extra: Partial<RegistryClientOptions> = {}): RegistryClient {
      return createRegistryClient({
        log: logs.log,
        pool: new RegistryPool({ limits: { requestsPerSecond: 10_000, pageSize: 1000 } }),
        dockerConfig: false,
        ...(reg.user ? { secret: dockerConfigSecret(proxy.host, reg.user.username, reg.user.password) } : {}),
        ...extra,
      });
    }

    before(async () => {
      reg = await startRegistry({ auth });
      pushAuth = reg.user;
      const o = pushAuth ? { auth: pushAuth } : {};
      const v1 = await pushImage(reg.url, 'org/app', 'v1.0.0', {
        created: new Date('2024-01-02T03:04:05Z'),
        ...o,
      });
      v1Digest = v1.digest;
      await pushImage(reg.url, 'org/app', 'v1.1.0', {
        created: new Date('2024-01-01T00:00:00Z'),
        labels: { 'org.opencontainers.image.created': '2024-05-05T00:00:00Z' },
        ...o,
      });
      await pushImage(reg.url, 'org/app', 'v2.0.0', {
        created: new Date('2024-01-01T00:00:00Z'),
        annotations: { 'org.opencontainers.image.created': '2024-06-01T00:00:00Z' },
        ...o,
      });
      await pushImage(reg.url, 'org/app', 'multi', {
        index: true,
        childCreated: [new Date('2024-02-01T00:00:00Z'), new Date('2024-03-01T00:00:00Z')],
        ...o,
      });
      await pushImage(reg.url, 'org/app', 'nodate', { ...o });
      const seed = await pushImage(reg.url, 'org/big', 'seed', {
        created: new Date('2024-01-01T00:00:00Z'),
        ...o,
      });
      await seedTags(
        reg.storageDir,
        'org/big',
        Array.from({ length: TAGS - 1 }, (_, i) => `1.0.${i}`),
        seed.digest,
      );
      proxy = await startRegistryProxy(reg.url, { pageSize: 100 });
    });
    after(async () => {
      await proxy?.stop();
      await reg?.stop();
    });

    test('lists the tags of a small repository in one page', async () => {
      const c = client();
      const list = await c.listTags(parseRepositoryRef(`${proxy.host}/org/app`));
      assert.deepEqual([...list.tags].sort(), ['multi', 'nodate', 'v1.0.0', 'v1.1.0', 'v2.0.0']);
      assert.equal(list.pages, 1);
      recorded.push(list.responses);
      assert.ok(list.responses.some((r) => r.url.includes('/tags/list') && r.status === 200));
    });

    test(`lists ${TAGS} tags through the paginating proxy: complete, one request per page plus authentication`, async () => {
      const c = client();
      proxy.resetCounts();
      const tokensBefore = reg.tokenServer?.requests ?? 0;
      const list = await c.listTags(parseRepositoryRef(`${proxy.host}/org/big`));
      assert.equal(list.tags.length, TAGS);
      assert.equal(new Set(list.tags).size, TAGS);
      assert.ok(list.tags.includes('seed') && list.tags.includes('1.0.4998'));
      const pages = Math.ceil(TAGS / 100);
      assert.equal(list.pages, pages);
      assert.equal(proxy.count('tags'), pages, 'exactly one tag-list request per page');
      const tokenRequests = (reg.tokenServer?.requests ?? 0) - tokensBefore;
      // authentication: the /v2/ ping, plus one token request with token auth
      assert.equal(proxy.count('ping'), 1);
      assert.equal(tokenRequests, auth === 'token' ? 1 : 0);
      assert.equal(list.requests, pages + 1 + tokenRequests);
      recorded.push(list.responses);
    });

    test('HEAD manifest: present with its digest, absent as exists false', async () => {
      const c = client();
      const ref = parseRepositoryRef(`${proxy.host}/org/app`);
      const there = await c.headManifest(ref, 'v1.0.0');
      assert.equal(there.exists, true);
      assert.equal(there.digest, v1Digest);
      assert.deepEqual(await c.headManifest(ref, 'no-such-tag'), { exists: false });
      assert.equal((await c.headManifest(ref, v1Digest)).exists, true);
      assert.ok(
        proxy.requests.some((q) => q.path.endsWith(`/manifests/${v1Digest}`)),
        'digests go into the path unescaped',
      );
      proxy.setMissingManifests('org/app', ['v1.0.0']);
      try {
        assert.deepEqual(await c.headManifest(ref, 'v1.0.0'), { exists: false });
      } finally {
        proxy.setMissingManifests('org/app', []);
      }
    });

    test('build times: config created, label when later, annotation first, newest index child, none', async () => {
      const cache = new MemoryCache();
      const c = client({ buildTimeCache: cache });
      const ref = parseRepositoryRef(`${proxy.host}/org/app`);
      const v1 = await c.buildTime(ref, 'v1.0.0');
      assert.equal(v1?.source, 'config');
      assert.equal(v1?.created.toISOString(), '2024-01-02T03:04:05.000Z');
      assert.equal(v1?.digest, v1Digest);
      const v11 = await c.buildTime(ref, 'v1.1.0');
      assert.equal(v11?.source, 'label');
      assert.equal(v11?.created.toISOString(), '2024-05-05T00:00:00.000Z');
      const v2 = await c.buildTime(ref, 'v2.0.0');
      assert.equal(v2?.source, 'annotation');
      assert.equal(v2?.created.toISOString(), '2024-06-01T00:00:00.000Z');
      const multi = await c.buildTime(ref, 'multi');
      // The attestation child says 2099: skipped; the newest platform child wins.
      assert.equal(multi?.source, 'index-child');
      assert.equal(multi?.created.toISOString(), '2024-03-01T00:00:00.000Z');
      assert.equal(await c.buildTime(ref, 'nodate'), null);

      // Cached by digest: asking again by digest makes no request at all; by tag, only a HEAD.
      proxy.resetCounts();
      const again = await c.buildTime(ref, v1Digest);
      assert.equal(again?.created.toISOString(), '2024-01-02T03:04:05.000Z');
      assert.equal(proxy.count('any'), 0);
      await c.buildTime(ref, 'multi');
      assert.equal(proxy.count('manifest-get'), 0);
      assert.equal(proxy.count('blob'), 0);
      assert.equal(proxy.count('manifest-head'), 1);
    });

    test('deleteTag removes one tag; another tag on the same image stays', async () => {
      const o = pushAuth ? { auth: pushAuth } : {};
      const a = await pushImage(reg.url, 'org/del', 'keep', {
        created: new Date('2024-01-01T00:00:00Z'),
        ...o,
      });
      const b = await pushImage(reg.url, 'org/del', 'drop', {
        created: new Date('2024-01-01T00:00:00Z'),
        ...o,
      });
      assert.equal(a.digest, b.digest);
      await deleteTag(reg.url, 'org/del', 'drop', o);
      const c = client();
      const ref = parseRepositoryRef(`${proxy.host}/org/del`);
      assert.deepEqual((await c.listTags(ref)).tags, ['keep']);
      assert.equal((await c.headManifest(ref, 'keep')).digest, a.digest);
      assert.deepEqual(await c.headManifest(ref, 'drop'), { exists: false });
    });

    if (auth !== 'none') {
      test('wrong credentials: an error naming the Secret, not the password', async () => {
        const c = client({
          secret: dockerConfigSecret(proxy.host, reg.user!.username, 'not-the-password', 'wrongcred'),
        });
        await assert.rejects(c.listTags(parseRepositoryRef(`${proxy.host}/org/app`)), (err: unknown) => {
          assert.ok(err instanceof RegistryError);
          assert.match(err.message, /Secret default\/wrongcred/);
          assert.doesNotMatch(err.message, /not-the-password/);
          errors.push(err.message);
          return true;
        });
      });

      test('no credentials: a clear error', async () => {
        const c = createRegistryClient({ pool: new RegistryPool(), dockerConfig: false });
        await assert.rejects(c.listTags(parseRepositoryRef(`${proxy.host}/org/app`)), (err: unknown) => {
          assert.ok(err instanceof RegistryError);
          assert.match(err.message, /anonymous|requires a user name and password/);
          errors.push(err.message);
          return true;
        });
      });
    }

    test('no password, token or Basic credential appears in logs, errors or recorded responses', () => {
      const haystack = [logs.text(), JSON.stringify(recorded), errors.join('\n')].join('\n');
      assert.ok(logs.text().includes('"status":200'), 'debug logs of requests were captured');
      for (const [user, password] of Object.entries(reg.users)) {
        assert.ok(!haystack.includes(password), 'password leaked');
        assert.ok(
          !haystack.includes(Buffer.from(`${user}:${password}`).toString('base64')),
          'Basic credential leaked',
        );
      }
      for (const token of reg.tokenServer?.issued ?? []) {
        assert.ok(!haystack.includes(token), 'token leaked');
        assert.ok(!haystack.includes(token.split('.')[2]!), 'token signature leaked');
      }
      if (auth === 'token') assert.match(JSON.stringify(recorded), /\[redacted\]/);
    });
  });
}
