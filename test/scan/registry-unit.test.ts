/** Pure parts of the registry client: references, challenges, links, rate-limit headers, redaction, credentials. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  parseRepositoryRef,
  parseImageReference,
  familiarName,
  ImageReferenceError,
} from '../../src/scan/registry/reference.js';
import { parseChallenge } from '../../src/scan/registry/auth.js';
import { parseNextLink, sameRepository } from '../../src/scan/registry/tags.js';
import { parseCreated } from '../../src/scan/registry/manifests.js';
import { parseRetryAfter, parseRateLimit, backoffMs, RegistryPool } from '../../src/scan/registry/pool.js';
import { Redactor } from '../../src/util/index.js';
import { credentialsFromSecret, credentialsFromDockerConfig } from '../../src/scan/registry/credentials.js';
import { dockerConfigSecret, opaqueSecret } from '../helpers/registry.js';

describe('parseRepositoryRef', () => {
  const cases: [string, string, string, string][] = [
    // input, registry, baseUrl, path
    ['nginx', 'docker.io', 'https://registry-1.docker.io', 'library/nginx'],
    ['bitnami/redis', 'docker.io', 'https://registry-1.docker.io', 'bitnami/redis'],
    ['docker.io/nginx', 'docker.io', 'https://registry-1.docker.io', 'library/nginx'],
    ['index.docker.io/library/nginx', 'docker.io', 'https://registry-1.docker.io', 'library/nginx'],
    ['registry-1.docker.io/org/app', 'docker.io', 'https://registry-1.docker.io', 'org/app'],
    ['ghcr.io/org/app', 'ghcr.io', 'https://ghcr.io', 'org/app'],
    ['ghcr.io/app', 'ghcr.io', 'https://ghcr.io', 'app'],
    [
      'registry.example.com:5443/a/b/c',
      'registry.example.com:5443',
      'https://registry.example.com:5443',
      'a/b/c',
    ],
    ['localhost/app', 'localhost', 'http://localhost', 'app'],
    ['localhost:5000/app', 'localhost:5000', 'http://localhost:5000', 'app'],
    ['127.0.0.1:5000/org/app', '127.0.0.1:5000', 'http://127.0.0.1:5000', 'org/app'],
    ['10.0.0.5:5000/org/app', '10.0.0.5:5000', 'https://10.0.0.5:5000', 'org/app'],
    ['[::1]:5000/app', '[::1]:5000', 'http://[::1]:5000', 'app'],
    ['Registry.Example/app', 'Registry.Example', 'https://Registry.Example', 'app'],
  ];
  for (const [input, registry, baseUrl, path] of cases) {
    test(input, () => {
      const r = parseRepositoryRef(input);
      assert.equal(r.registry, registry);
      assert.equal(r.baseUrl, baseUrl);
      assert.equal(r.path, path);
      assert.equal(r.canonical, `${registry}/${path}`);
      assert.equal(r.original, input);
    });
  }
  test('insecure makes any registry plain HTTP', () => {
    assert.equal(parseRepositoryRef('registry.lan/app', { insecure: true }).baseUrl, 'http://registry.lan');
  });
  test('familiar names', () => {
    assert.equal(familiarName(parseRepositoryRef('docker.io/library/nginx')), 'nginx');
    assert.equal(familiarName(parseRepositoryRef('bitnami/redis')), 'bitnami/redis');
    assert.equal(familiarName(parseRepositoryRef('ghcr.io/org/app')), 'ghcr.io/org/app');
  });
  for (const [bad, why] of [
    ['https://ghcr.io/org/app', /scheme/],
    ['ghcr.io/org/app:1.0', /has a tag/],
    ['ghcr.io/org/app@sha256:' + 'a'.repeat(64), /has a digest/],
    ['ghcr.io/Org/App', /lowercase/],
    ['', /empty/],
    ['ghcr.io/org//app', /not a valid image repository/],
  ] as const) {
    test(`rejects ${JSON.stringify(bad)}`, () => {
      assert.throws(
        () => parseRepositoryRef(bad),
        (e: unknown) => e instanceof ImageReferenceError && why.test(e.message),
      );
    });
  }
});

describe('parseImageReference', () => {
  test('name:tag@digest', () => {
    const d = 'sha256:' + 'b'.repeat(64);
    const r = parseImageReference(`ghcr.io/org/app:1.2.3@${d}`);
    assert.equal(r.repo.path, 'org/app');
    assert.equal(r.tag, '1.2.3');
    assert.equal(r.digest, d);
  });
  test('a port is not a tag', () => {
    const r = parseImageReference('localhost:5000/app');
    assert.equal(r.repo.registry, 'localhost:5000');
    assert.equal(r.tag, undefined);
  });
  test('Docker Hub short name with tag', () => {
    const r = parseImageReference('nginx:1.27');
    assert.equal(r.repo.canonical, 'docker.io/library/nginx');
    assert.equal(r.tag, '1.27');
  });
  test('bad digest and bad tag', () => {
    assert.throws(() => parseImageReference('app@sha256:xyz'), /invalid digest/);
    assert.throws(() => parseImageReference('app:-bad'), /invalid tag/);
  });
});

describe('protocol details', () => {
  test('WWW-Authenticate challenges', () => {
    assert.deepEqual(
      parseChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
      ),
      {
        scheme: 'bearer',
        realm: 'https://auth.docker.io/token',
        service: 'registry.docker.io',
      },
    );
    assert.deepEqual(parseChallenge('Basic realm="Registry Realm"'), { scheme: 'basic' });
    assert.deepEqual(parseChallenge(null), { scheme: 'none' });
  });
  test('Link rel="next", relative or absolute, among others', () => {
    assert.equal(parseNextLink('</v2/a/tags/list?n=10&last=b>; rel="next"'), '/v2/a/tags/list?n=10&last=b');
    assert.equal(
      parseNextLink(
        '<https://r.io/v2/a/tags/list?last=b>; rel="prev", <https://r.io/v2/a/tags/list?last=c>; rel=next',
      ),
      'https://r.io/v2/a/tags/list?last=c',
    );
    assert.equal(parseNextLink(null), undefined);
  });
  test('a tag list names the repository asked for (whole trailing components)', () => {
    assert.equal(sameRepository('library/nginx', 'library/nginx'), true);
    assert.equal(sameRepository('docker-local/org/app', 'org/app'), true);
    assert.equal(sameRepository('org/other', 'org/app'), false);
    assert.equal(sameRepository('xorg/app', 'org/app'), false);
  });
  test('Retry-After in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('12', now), 12_000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60_000);
    assert.equal(parseRetryAfter('soon', now), undefined);
  });
  test("Docker Hub's RateLimit headers", () => {
    const h = new Headers({ 'ratelimit-remaining': '0;w=21600', 'ratelimit-reset': '120' });
    assert.deepEqual(parseRateLimit(h, 0), { remaining: 0, resetInMs: 120_000 });
  });
  test('back-off grows, has jitter, and is capped', () => {
    const limits = { backoffBaseMs: 100, backoffMaxMs: 1000 };
    assert.equal(
      backoffMs(0, limits, () => 0),
      50,
    );
    assert.equal(
      backoffMs(0, limits, () => 1),
      100,
    );
    assert.equal(
      backoffMs(3, limits, () => 1),
      800,
    );
    assert.equal(
      backoffMs(10, limits, () => 1),
      1000,
    );
  });
  test('created times: zero and epoch times are no times', () => {
    assert.equal(parseCreated('0001-01-01T00:00:00Z'), null);
    assert.equal(parseCreated('1970-01-01T00:00:00Z'), null);
    assert.equal(parseCreated('garbage'), null);
    assert.equal(parseCreated('2024-01-01T00:00:00Z')?.toISOString(), '2024-01-01T00:00:00.000Z');
  });
  test('per-registry concurrency: a request waits for a free slot', async () => {
    const pool = new RegistryPool({ limits: { maxConcurrent: 2, requestsPerSecond: 1000 } });
    const h = pool.host('https://r.example');
    const noSleep = async (): Promise<void> => undefined;
    const r1 = await h.acquire(noSleep);
    const r2 = await h.acquire(noSleep);
    let third = false;
    const p3 = h.acquire(noSleep).then((r) => {
      third = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false, 'the third request waits');
    r1();
    const r3 = await p3;
    assert.equal(third, true);
    r2();
    r3();
  });
  test('per-registry rate: bursts pass, then each request waits its interval', async () => {
    const now = 1_000_000;
    const pool = new RegistryPool({ limits: { maxConcurrent: 100, requestsPerSecond: 4 }, now: () => now });
    const h = pool.host('https://r.example');
    const waits: number[] = [];
    const sleep = async (ms: number): Promise<void> => {
      waits.push(ms);
    };
    for (let i = 0; i < 6; i++) (await h.acquire(sleep))();
    assert.deepEqual(waits, [250, 500], 'four in a burst, then 250 ms apart');
  });
  test('the circuit breaker opens after the threshold and says until when', () => {
    let now = 1_000_000;
    const pool = new RegistryPool({
      limits: { breakerThreshold: 2, breakerCooldownMs: 10_000 },
      now: () => now,
    });
    const h = pool.host('https://r.example');
    h.recordFailure('503');
    h.checkBreaker();
    h.recordFailure('503');
    assert.throws(
      () => h.checkBreaker(),
      /failed 2 times in a row \(last: 503\).*until 1970-01-01T00:16:50\.000Z/,
    );
    now += 10_001;
    h.checkBreaker();
    h.recordFailure('503');
    assert.throws(() => h.checkBreaker(), /until 1970-01-01T00:17:10\.001Z/, 'the cool-down doubled');
    h.recordSuccess();
    h.checkBreaker();
  });
});

describe('redaction', () => {
  test('headers, token fields, URL parameters and known values', () => {
    const r = new Redactor();
    r.add('hunter2-password');
    const headers = r.headers(
      new Headers({
        authorization: 'Bearer abc',
        'set-cookie': 'x=y',
        'www-authenticate': 'Bearer realm="x"',
        location: 'https://s3/blob?X-Amz-Signature=deadbeef&a=1',
      }),
    );
    assert.equal(headers.authorization, '[redacted]');
    assert.equal(headers['set-cookie'], '[redacted]');
    assert.equal(headers['www-authenticate'], 'Bearer realm="x"');
    assert.doesNotMatch(headers.location!, /deadbeef/);
    assert.equal(r.text('{"token":"eyJ.abc","expires_in":60}'), '{"token":"[redacted]","expires_in":60}');
    assert.equal(
      r.text('said hunter2-password twice: hunter2-password'),
      'said [redacted] twice: [redacted]',
    );
    assert.doesNotMatch(r.url('https://u:p@r.io/token?access_token=zzz&scope=x'), /zzz|u:p/);
  });
});

describe('credentials', () => {
  test('from a dockerconfigjson Secret, matched by host', () => {
    const s = dockerConfigSecret('ghcr.io', 'bob', 'pw-123');
    assert.deepEqual(credentialsFromSecret(s, 'ghcr.io'), {
      username: 'bob',
      password: 'pw-123',
      source: 'Secret default/regcred',
    });
    assert.equal(credentialsFromSecret(s, 'quay.io'), null);
  });
  test('Docker Hub keys match docker.io', () => {
    const s = dockerConfigSecret('https://index.docker.io/v1/', 'bob', 'pw-123');
    assert.equal(credentialsFromSecret(s, 'docker.io')?.username, 'bob');
  });
  test('basic-auth Secret', () => {
    const s = opaqueSecret({ username: 'u', password: 'p' });
    assert.deepEqual(credentialsFromSecret(s, 'any.io'), {
      username: 'u',
      password: 'p',
      source: 'Secret default/certs',
    });
  });
  test('a Secret with neither is an error saying what to do', () => {
    assert.throws(
      () => credentialsFromSecret(opaqueSecret({ other: 'x' }), 'r.io'),
      /kubectl create secret docker-registry/,
    );
  });

  test('Docker config: credHelpers, then credsStore, then auths', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pawl-dockercfg-'));
    try {
      await writeFile(
        join(dir, 'config.json'),
        JSON.stringify({
          auths: {
            'plain.io': { auth: Buffer.from('p:pp').toString('base64') },
            'https://id.io': { identitytoken: 'idtok-1' },
          },
          credsStore: 'store',
          credHelpers: { 'helped.io': 'helper' },
        }),
      );
      const calls: string[] = [];
      const runHelper = async (
        helper: string,
        server: string,
      ): Promise<{ Username?: string; Secret?: string } | null> => {
        calls.push(`${helper}:${server}`);
        if (helper === 'helper') return { Username: 'h', Secret: 'hs' };
        if (server === 'docker.io' || server === 'https://index.docker.io/v1/')
          return { Username: '<token>', Secret: 'hub-identity' };
        return null;
      };
      assert.deepEqual(await credentialsFromDockerConfig('helped.io', { dir, runHelper }), {
        username: 'h',
        password: 'hs',
        source: 'docker-credential-helper',
      });
      assert.deepEqual(await credentialsFromDockerConfig('docker.io', { dir, runHelper }), {
        identityToken: 'hub-identity',
        source: 'docker-credential-store',
      });
      assert.deepEqual(await credentialsFromDockerConfig('plain.io', { dir, runHelper }), {
        username: 'p',
        password: 'pp',
        source: `docker config ${join(dir, 'config.json')}`,
      });
      assert.equal(
        (await credentialsFromDockerConfig('id.io', { dir, runHelper }))?.identityToken,
        'idtok-1',
      );
      assert.equal(await credentialsFromDockerConfig('none.io', { dir, runHelper }), null);
      assert.ok(calls.includes('store:https://index.docker.io/v1/'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  test('no Docker config: no credentials', async () => {
    assert.equal(await credentialsFromDockerConfig('r.io', { dir: '/nonexistent-pawl-dir' }), null);
  });
});

describe('registries on loopback', () => {
  test('are not rate limited: a registry on loopback is the user’s own', async () => {
    const pool = new RegistryPool({
      limits: { maxConcurrent: 100, requestsPerSecond: 4 },
      now: () => 1_000_000,
    });
    const waits: number[] = [];
    const sleep = async (ms: number): Promise<void> => {
      waits.push(ms);
    };
    const local = pool.host('http://127.0.0.1:5000');
    for (let i = 0; i < 50; i++) (await local.acquire(sleep))();
    assert.deepEqual(waits, []);
    const remote = pool.host('https://r.example');
    for (let i = 0; i < 6; i++) (await remote.acquire(sleep))();
    assert.deepEqual(waits, [250, 500]);
  });
});
