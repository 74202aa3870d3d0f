import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import {
  MAX_EVENT_IMAGES,
  MAX_JSON_DEPTH,
  MAX_WEBHOOK_BODY_BYTES,
  receiverHookPath,
  verifyWebhook,
  type EventImage,
  type ReceiverTarget,
  type ReceiverType,
  type WebhookVerdict,
} from '../../../src/serve/receivers/index.js';

type Headers = Record<string, string | string[] | undefined>;

const TOKEN = 'tok-7f3a9c2e';
const OTHER = 'tok-7f3a9c2f';

function target(type: ReceiverType, events: string[] = [], token = TOKEN): ReceiverTarget {
  return {
    namespace: 'apps',
    name: 'hook',
    type,
    token,
    events,
    resources: [{ kind: 'ImageRepository', name: 'app' }],
    suspend: false,
  };
}

function hmac(alg: 'sha1' | 'sha256' | 'sha512', key: string, body: Buffer): string {
  return createHmac(alg, key).update(body).digest('hex');
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

function verify(
  type: ReceiverType,
  headers: Headers,
  body: Buffer,
  events: string[] = [],
  token = TOKEN,
): WebhookVerdict {
  return verifyWebhook(target(type, events, token), { headers, body });
}

function images(v: WebhookVerdict): EventImage[] {
  assert.equal(v.status, 202, JSON.stringify(v));
  return v.status === 202 ? v.event.images : [];
}

// --- vendor payloads (shapes from each vendor's documentation) -----------------------------------

const GITHUB_PUSH = json({ ref: 'refs/heads/main', repository: { full_name: 'org/app' } });
const GITLAB_PUSH = json({ object_kind: 'push', ref: 'refs/heads/main' });
const BITBUCKET_PUSH = json({ eventKey: 'repo:refs_changed', changes: [] });

const harborBody = (type: string, resources: unknown[]): Buffer =>
  json({
    type,
    occur_at: 1586922308,
    operator: 'admin',
    event_data: {
      resources,
      repository: { name: 'app', namespace: 'team', repo_full_name: 'team/app', repo_type: 'private' },
    },
  });
const HARBOR_PUSH = harborBody('PUSH_ARTIFACT', [
  { digest: 'sha256:aa', tag: '1.2.3', resource_url: 'harbor.example.com/team/app:1.2.3' },
]);

const DOCKERHUB_PUSH = json({
  callback_url: 'https://registry.hub.docker.com/u/team/app/hook/2141b5bi5i5b02bec211i4eeih0242eg11000a/',
  push_data: { pushed_at: 1417566161, pusher: 'someone', tag: '1.2.3' },
  repository: {
    repo_name: 'team/app',
    name: 'app',
    namespace: 'team',
    repo_url: 'https://hub.docker.com/r/team/app',
  },
});

const QUAY_PUSH = json({
  repository: 'team/app',
  namespace: 'team',
  name: 'app',
  docker_url: 'quay.io/team/app',
  homepage: 'https://quay.io/repository/team/app',
  updated_tags: ['1.2.3', 'latest'],
});

const nexusBody = (action: string, component: unknown): Buffer =>
  json({
    timestamp: '2016-11-10T23:57:49.664+0000',
    nodeId: '52905B51-085CCABB-CEBBEAAD-16795588-FC927D93',
    initiator: 'admin/127.0.0.1',
    repositoryName: 'docker-hosted',
    action,
    component,
  });
const NEXUS_PUSH = nexusBody('CREATED', {
  id: 'x',
  componentId: 'y',
  format: 'docker',
  name: 'team/app',
  version: '1.2.3',
});

const acrBody = (action: string, tag?: string): Buffer =>
  json({
    id: 'cb8c3971-9adc-488b-bdd8-43cbb4974ff5',
    timestamp: '2017-11-17T16:52:01.343145347Z',
    action,
    target: {
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      digest: 'sha256:80f0d5c8786bb9e621a45ece0db56d11cdc624ad20da9fe62e9d25490f331d7d',
      repository: 'team/app',
      ...(tag ? { tag } : {}),
    },
    request: { id: '3cbb6949-7549-4fa1-86cd-a6d5451dffc7', host: 'myregistry.azurecr.io', method: 'PUT' },
  });
const ACR_PUSH = acrBody('push', '1.2.3');

const registryEvent = (action: string, target: Record<string, unknown>, method = 'PUT'): unknown => ({
  id: `ev-${action}-${String(target.tag ?? target.digest)}`,
  timestamp: '2026-11-30T09:00:00Z',
  action,
  target: { repository: 'team/app', url: 'http://127.0.0.1:5000/v2/team/app/manifests/x', ...target },
  request: { id: 'r1', addr: '127.0.0.1:40000', host: '127.0.0.1:5000', method, useragent: 'test' },
  actor: {},
  source: { addr: 'host:5000', instanceID: 'i' },
});
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const DISTRIBUTION_PUSH = json({
  events: [
    registryEvent('push', { mediaType: 'application/octet-stream', digest: 'sha256:b1' }),
    registryEvent('push', { mediaType: MANIFEST, digest: 'sha256:m1', tag: '1.2.3' }),
  ],
});

interface TypeCase {
  type: ReceiverType;
  /** A valid body that triggers work. */
  body: Buffer;
  /** Headers that authenticate `body` with `token`. */
  sign(body: Buffer, token: string): Headers;
  /** Headers carrying no credential at all (undefined: the secret path is the only credential). */
  unsigned?: Headers;
  /** Whether the body is read (malformed bodies are 400). */
  readsBody: boolean;
  /** Valid JSON of the wrong shape. */
  wrongShape?: unknown;
  images: EventImage[];
  event?: string;
  delivery?: string;
}

const img = (registry: string | undefined, path: string, tag: string): EventImage => ({
  repository: registry ? `${registry}/${path}` : path,
  path,
  ...(registry ? { registry } : {}),
  tag,
});

const CASES: TypeCase[] = [
  { type: 'generic', body: Buffer.from('anything'), sign: () => ({}), readsBody: false, images: [] },
  {
    type: 'generic-hmac',
    body: Buffer.from('{"any":"body"}'),
    sign: (b, t) => ({ 'x-signature': `sha256=${hmac('sha256', t, b)}` }),
    unsigned: {},
    readsBody: false,
    images: [],
  },
  {
    type: 'github',
    body: GITHUB_PUSH,
    sign: (b, t) => ({
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': 'd-1',
      'x-hub-signature-256': `sha256=${hmac('sha256', t, b)}`,
    }),
    unsigned: { 'content-type': 'application/json', 'x-github-event': 'push' },
    readsBody: true,
    wrongShape: ['a', 'list'],
    images: [],
    event: 'push',
    delivery: 'd-1',
  },
  {
    type: 'gitlab',
    body: GITLAB_PUSH,
    sign: (_b, t) => ({
      'content-type': 'application/json',
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-token': t,
    }),
    unsigned: { 'content-type': 'application/json', 'x-gitlab-event': 'Push Hook' },
    readsBody: true,
    wrongShape: 42,
    images: [],
    event: 'Push Hook',
  },
  {
    type: 'bitbucket',
    body: BITBUCKET_PUSH,
    sign: (b, t) => ({
      'content-type': 'application/json; charset=UTF-8',
      'x-event-key': 'repo:refs_changed',
      'x-request-id': 'bb-1',
      'x-hub-signature': `sha256=${hmac('sha256', t, b)}`,
    }),
    unsigned: { 'content-type': 'application/json', 'x-event-key': 'repo:refs_changed' },
    readsBody: true,
    wrongShape: 'a string',
    images: [],
    event: 'repo:refs_changed',
    delivery: 'bb-1',
  },
  {
    type: 'harbor',
    body: HARBOR_PUSH,
    sign: (_b, t) => ({ 'content-type': 'application/json', authorization: t }),
    unsigned: { 'content-type': 'application/json' },
    readsBody: true,
    wrongShape: { type: 'PUSH_ARTIFACT', event_data: 'nope' },
    images: [img('harbor.example.com', 'team/app', '1.2.3')],
    event: 'PUSH_ARTIFACT',
  },
  {
    type: 'dockerhub',
    body: DOCKERHUB_PUSH,
    sign: () => ({ 'content-type': 'application/json' }),
    readsBody: true,
    wrongShape: { repository: { repo_name: 'team/app' }, push_data: 'x' },
    images: [img('docker.io', 'team/app', '1.2.3')],
    event: 'push',
  },
  {
    type: 'quay',
    body: QUAY_PUSH,
    sign: () => ({ 'content-type': 'application/json' }),
    readsBody: true,
    wrongShape: { docker_url: 'quay.io/team/app', updated_tags: 'latest' },
    images: [img('quay.io', 'team/app', '1.2.3'), img('quay.io', 'team/app', 'latest')],
    event: 'repo_push',
  },
  {
    type: 'nexus',
    body: NEXUS_PUSH,
    sign: (b, t) => ({
      'content-type': 'application/json; charset=UTF-8',
      'x-nexus-webhook-id': 'rm:repository:component',
      'x-nexus-webhook-delivery': 'nx-1',
      'x-nexus-webhook-signature': hmac('sha1', t, b),
    }),
    unsigned: { 'content-type': 'application/json' },
    readsBody: true,
    wrongShape: { action: 'CREATED' },
    images: [img(undefined, 'team/app', '1.2.3')],
    event: 'rm:repository:component',
    delivery: 'nx-1',
  },
  {
    type: 'acr',
    body: ACR_PUSH,
    sign: () => ({ 'content-type': 'application/json' }),
    readsBody: true,
    wrongShape: { action: 'push', target: ['x'] },
    images: [img('myregistry.azurecr.io', 'team/app', '1.2.3')],
    event: 'push',
    delivery: 'cb8c3971-9adc-488b-bdd8-43cbb4974ff5',
  },
  {
    type: 'distribution',
    body: DISTRIBUTION_PUSH,
    sign: (_b, t) => ({
      'content-type': 'application/vnd.docker.distribution.events.v1+json',
      authorization: `Bearer ${t}`,
    }),
    unsigned: { 'content-type': 'application/vnd.docker.distribution.events.v1+json' },
    readsBody: true,
    wrongShape: { events: { not: 'a list' } },
    images: [img('127.0.0.1:5000', 'team/app', '1.2.3')],
    event: 'push',
    delivery: 'ev-push-1.2.3',
  },
];

const NOT_UTF8 = Buffer.concat([
  Buffer.from('{"events":"'),
  Buffer.from([0xff, 0xfe, 0xc3]),
  Buffer.from('"}'),
]);

describe('verifyWebhook: every type', () => {
  for (const c of CASES) {
    describe(c.type, () => {
      test('a correctly signed event is accepted with its images', () => {
        const v = verify(c.type, c.sign(c.body, TOKEN), c.body);
        assert.deepEqual(images(v), c.images);
        assert.ok(v.status === 202);
        assert.equal(v.event.receiver, 'apps/hook');
        assert.equal(v.event.type, c.type);
        assert.equal(v.event.event, c.event);
        assert.equal(v.event.delivery, c.delivery);
      });

      if (c.unsigned) {
        test('a missing credential is 401', () => {
          const v = verify(c.type, c.unsigned!, c.body);
          assert.equal(v.status, 401, JSON.stringify(v));
        });
        test('a credential made with another token is 403', () => {
          const v = verify(c.type, c.sign(c.body, OTHER), c.body);
          assert.equal(v.status, 403, JSON.stringify(v));
        });
        test('a signature of another body is 403 (or the header is the token, which does not sign)', () => {
          const other = Buffer.concat([c.body, Buffer.from(' ')]);
          const v = verify(c.type, c.sign(c.body, TOKEN), other);
          const headerIsToken = ['gitlab', 'harbor', 'distribution'].includes(c.type);
          assert.equal(v.status, headerIsToken ? 202 : 403, JSON.stringify(v));
        });
        test('a bad credential is refused before the body is read', () => {
          const v = verify(c.type, c.sign(Buffer.from('not json'), OTHER), Buffer.from('not json'));
          assert.equal(v.status, 403, JSON.stringify(v));
        });
      } else {
        test('the secret path is the only credential: no header is needed', () => {
          assert.equal(verify(c.type, {}, c.body).status, 202);
        });
      }

      if (c.readsBody) {
        const bodies: [string, Buffer][] = [
          ['not JSON', Buffer.from('{"events": [')],
          ['the wrong shape', json(c.wrongShape)],
          ['not UTF-8', NOT_UTF8],
          ['empty', Buffer.alloc(0)],
        ];
        for (const [what, body] of bodies) {
          test(`a body that is ${what} is 400`, () => {
            const v = verify(c.type, c.sign(body, TOKEN), body);
            assert.equal(v.status, 400, JSON.stringify(v));
          });
        }
        test(`a body nested ${MAX_JSON_DEPTH} levels deep is read; one level deeper is 400`, () => {
          // The event itself with one more field, arrays nested inside its outer object: at the
          // limit the event must still be accepted, one above it refused for its depth alone.
          const nested = (levels: number): Buffer =>
            Buffer.from(
              c.body
                .toString('utf8')
                .replace(/^\s*\{/, `{"pawlNested":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)},`),
            );
          // The limit docs/receivers.md promises, not whatever the constant says.
          assert.equal(MAX_JSON_DEPTH, 32);
          const at = nested(MAX_JSON_DEPTH);
          assert.equal(verify(c.type, c.sign(at, TOKEN), at).status, 202);
          const over = nested(MAX_JSON_DEPTH + 1);
          const v = verify(c.type, c.sign(over, TOKEN), over);
          assert.equal(v.status, 400);
          assert.match(JSON.stringify(v), new RegExp(`nested deeper than ${MAX_JSON_DEPTH} levels`));
        });
      }

      test('a replayed event is verified again and gives the same verdict (the daemon coalesces it)', () => {
        const headers = c.sign(c.body, TOKEN);
        const first = verify(c.type, headers, c.body);
        const again = verify(c.type, headers, c.body);
        assert.equal(first.status, 202);
        assert.deepEqual(again, first);
      });

      test('a body over the limit is 413, whatever it says', () => {
        const big = Buffer.alloc(MAX_WEBHOOK_BODY_BYTES + 1, 0x20);
        assert.equal(verify(c.type, c.sign(big, TOKEN), big).status, 413);
      });

      test('an empty token verifies nothing', () => {
        assert.equal(verify(c.type, c.sign(c.body, ''), c.body, [], '').status, 403);
      });
    });
  }
});

describe('verifyWebhook: signatures in detail', () => {
  const body = Buffer.from('{"a":1}');
  test('generic-hmac accepts sha1, sha256 and sha512, and refuses other prefixes', () => {
    for (const alg of ['sha1', 'sha256', 'sha512'] as const) {
      assert.equal(
        verify('generic-hmac', { 'X-Signature': `${alg}=${hmac(alg, TOKEN, body)}` }, body).status,
        202,
      );
      assert.equal(
        verify('generic-hmac', { 'X-Signature': `${alg}=${hmac(alg, TOKEN, body).toUpperCase()}` }, body)
          .status,
        202,
        'hex digits in either case, as Go reads them',
      );
    }
    for (const bad of [
      `md5=${hmac('sha1', TOKEN, body)}`,
      hmac('sha256', TOKEN, body),
      `sha256=${hmac('sha256', TOKEN, body).slice(2)}`,
      `sha256=${hmac('sha256', TOKEN, body)}00`,
      `sha256=${'zz'.repeat(32)}`,
      `sha1=${hmac('sha256', TOKEN, body)}`,
      'sha256=',
      '',
    ]) {
      assert.equal(verify('generic-hmac', { 'x-signature': bad }, body).status, 403, bad);
    }
  });

  test('github prefers X-Hub-Signature-256 and falls back to the SHA-1 X-Hub-Signature, as go-github', () => {
    const base = { 'content-type': 'application/json', 'x-github-event': 'push' };
    const sha1 = `sha1=${hmac('sha1', TOKEN, GITHUB_PUSH)}`;
    assert.equal(verify('github', { ...base, 'x-hub-signature': sha1 }, GITHUB_PUSH).status, 202);
    const v = verify(
      'github',
      {
        ...base,
        'x-hub-signature': sha1,
        'x-hub-signature-256': `sha256=${hmac('sha256', OTHER, GITHUB_PUSH)}`,
      },
      GITHUB_PUSH,
    );
    assert.equal(v.status, 403, 'a wrong SHA-256 signature is not rescued by a right SHA-1 one');
  });

  test('github reads a form-encoded payload and refuses other content types', () => {
    const form = Buffer.from(`payload=${encodeURIComponent('{"zen":"x"}')}`);
    const sign = (ct: string | undefined, b: Buffer): Headers => ({
      ...(ct ? { 'content-type': ct } : {}),
      'x-github-event': 'push',
      'x-hub-signature-256': `sha256=${hmac('sha256', TOKEN, b)}`,
    });
    assert.equal(verify('github', sign('application/x-www-form-urlencoded', form), form).status, 202);
    assert.equal(verify('github', sign('text/plain', GITHUB_PUSH), GITHUB_PUSH).status, 400);
    assert.equal(verify('github', sign(undefined, GITHUB_PUSH), GITHUB_PUSH).status, 400);
    const noPayload = Buffer.from('other=1');
    assert.equal(
      verify('github', sign('application/x-www-form-urlencoded', noPayload), noPayload).status,
      400,
    );
  });

  test('header names are case-insensitive; one header sent twice with different values is 400', () => {
    const sig = `sha256=${hmac('sha256', TOKEN, body)}`;
    assert.equal(verify('generic-hmac', { 'X-SIGNATURE': sig }, body).status, 202);
    assert.equal(verify('generic-hmac', { 'x-signature': [sig, sig] }, body).status, 202);
    assert.equal(verify('generic-hmac', { 'x-signature': [sig, 'sha256=00'] }, body).status, 400);
    assert.equal(verify('generic-hmac', { 'x-signature': sig, 'X-Signature': 'sha1=00' }, body).status, 400);
  });

  test('distribution wants the Bearer scheme (any case) and the token after it', () => {
    const h = (v: string): Headers => ({ authorization: v });
    assert.equal(verify('distribution', h(`bearer ${TOKEN}`), DISTRIBUTION_PUSH).status, 202);
    assert.equal(verify('distribution', h(TOKEN), DISTRIBUTION_PUSH).status, 403);
    assert.equal(verify('distribution', h(`Basic ${TOKEN}`), DISTRIBUTION_PUSH).status, 403);
    assert.equal(verify('distribution', h(`Bearer ${TOKEN}x`), DISTRIBUTION_PUSH).status, 403);
    assert.equal(verify('distribution', h('Bearer '), DISTRIBUTION_PUSH).status, 403);
    // The scheme is the header's first word: a token after other text is not a Bearer credential.
    assert.equal(verify('distribution', h(`Token Bearer ${TOKEN}`), DISTRIBUTION_PUSH).status, 403);
    assert.equal(verify('distribution', h(`xbearer ${TOKEN}`), DISTRIBUTION_PUSH).status, 403);
  });

  test('harbor compares the whole Authorization header with the token, as Flux', () => {
    assert.equal(verify('harbor', { authorization: TOKEN }, HARBOR_PUSH).status, 202);
    assert.equal(verify('harbor', { authorization: `Bearer ${TOKEN}` }, HARBOR_PUSH).status, 403);
  });
});

describe('verifyWebhook: events that are verified but trigger nothing (200)', () => {
  const ghHeaders = (event: string, b: Buffer): Headers => ({
    'content-type': 'application/json',
    'x-github-event': event,
    'x-hub-signature-256': `sha256=${hmac('sha256', TOKEN, b)}`,
  });
  const ignored = (v: WebhookVerdict, pattern: RegExp): void => {
    assert.equal(v.status, 200, JSON.stringify(v));
    assert.match(v.status === 200 ? v.ignored : '', pattern);
  };

  test('github: ping is answered whatever spec.events says; other events are filtered by spec.events', () => {
    const ping = json({ zen: 'Design for failure.', hook_id: 1 });
    ignored(verify('github', ghHeaders('ping', ping), ping, ['push']), /^GitHub ping$/);
    // With no spec.events every event is allowed: ping is still only answered.
    ignored(verify('github', ghHeaders('ping', ping), ping, []), /^GitHub ping$/);
    ignored(
      verify('github', ghHeaders('issues', GITHUB_PUSH), GITHUB_PUSH, ['push']),
      /"issues" is not in spec\.events/,
    );
    assert.equal(
      verify('github', ghHeaders('push', GITHUB_PUSH), GITHUB_PUSH, ['Push']).status,
      202,
      'case-insensitive',
    );
    assert.equal(
      verify('github', ghHeaders('Push', GITHUB_PUSH), GITHUB_PUSH, ['push']).status,
      202,
      'case-insensitive, either side (strings.EqualFold in Flux)',
    );
    assert.equal(
      verify('github', ghHeaders('issues', GITHUB_PUSH), GITHUB_PUSH, []).status,
      202,
      'no list: all',
    );
  });

  test('github: a wrong signature on a ping is still 403', () => {
    const ping = json({ zen: 'x' });
    const h = { ...ghHeaders('ping', ping), 'x-hub-signature-256': `sha256=${hmac('sha256', OTHER, ping)}` };
    assert.equal(verify('github', h, ping).status, 403);
  });

  test('gitlab and bitbucket filter by their event header', () => {
    const gl = { 'x-gitlab-token': TOKEN, 'x-gitlab-event': 'Tag Push Hook' };
    ignored(verify('gitlab', gl, GITLAB_PUSH, ['Push Hook']), /"Tag Push Hook" is not in spec\.events/);
    const bb = (key: string): Headers => ({
      'content-type': 'application/json',
      'x-event-key': key,
      'x-hub-signature': `sha256=${hmac('sha256', TOKEN, BITBUCKET_PUSH)}`,
    });
    ignored(
      verify('bitbucket', bb('pr:opened'), BITBUCKET_PUSH, ['repo:refs_changed']),
      /not in spec\.events/,
    );
    ignored(verify('bitbucket', bb('diagnostics:ping'), BITBUCKET_PUSH, ['repo:refs_changed']), /ping/);
  });

  test('harbor: pulls and deletes add no tag; a push by digest names no tag', () => {
    const h = { authorization: TOKEN };
    const res = [{ digest: 'sha256:aa', tag: '1.2.3', resource_url: 'harbor.example.com/team/app:1.2.3' }];
    ignored(verify('harbor', h, harborBody('PULL_ARTIFACT', res)), /PULL_ARTIFACT adds no tag/);
    ignored(verify('harbor', h, harborBody('DELETE_ARTIFACT', res)), /DELETE_ARTIFACT adds no tag/);
    const byDigest = [{ digest: 'sha256:aa', resource_url: 'harbor.example.com/team/app@sha256:aa' }];
    ignored(verify('harbor', h, harborBody('PUSH_ARTIFACT', byDigest)), /names no image tag/);
  });

  test('harbor: a replication brings tags the event does not list: accepted, naming no image', () => {
    for (const type of ['REPLICATION', 'replication']) {
      const v = verify('harbor', { authorization: TOKEN }, harborBody(type, []));
      assert.equal(v.status, 202, JSON.stringify(v));
      assert.deepEqual(images(v), []);
    }
  });

  test('harbor: without resource_url the repository is repo_full_name, with no registry', () => {
    const v = verify('harbor', { authorization: TOKEN }, harborBody('PUSH_ARTIFACT', [{ tag: 'v2' }]));
    assert.deepEqual(images(v), [img(undefined, 'team/app', 'v2')]);
  });

  test('distribution: pulls (GET and HEAD), deletes and pushes without a tag trigger nothing', () => {
    const h = { authorization: `Bearer ${TOKEN}` };
    const body = json({
      events: [
        registryEvent('pull', { mediaType: MANIFEST, digest: 'sha256:m1', tag: '1.2.3' }, 'GET'),
        registryEvent('pull', { mediaType: MANIFEST, digest: 'sha256:m1', tag: '1.2.3' }, 'HEAD'),
        registryEvent('push', { mediaType: MANIFEST, digest: 'sha256:m2' }),
        registryEvent('push', { mediaType: 'application/octet-stream', digest: 'sha256:b1' }),
        registryEvent('delete', { digest: 'sha256:m1' }, 'DELETE'),
      ],
    });
    ignored(verify('distribution', h, body), /no push of a tag \(2 pull, 2 push without a tag, 1 delete\)/);
    ignored(verify('distribution', h, json({ events: [] })), /no events/);
  });

  test('distribution: several tags in one envelope, repeats folded', () => {
    const body = json({
      events: [
        registryEvent('push', { mediaType: MANIFEST, digest: 'sha256:m1', tag: '1.2.3' }),
        registryEvent('push', { mediaType: MANIFEST, digest: 'sha256:m1', tag: '1.2.3' }),
        registryEvent('push', { mediaType: MANIFEST, digest: 'sha256:m2', tag: '1.2.4' }),
        registryEvent('push', { mediaType: MANIFEST, digest: 'sha256:m2', tag: 'bad tag!' }),
      ],
    });
    const v = verify('distribution', { authorization: `Bearer ${TOKEN}` }, body);
    assert.deepEqual(
      images(v).map((i) => i.tag),
      ['1.2.3', '1.2.4'],
    );
  });

  test('distribution: one envelope names at most MAX_EVENT_IMAGES images (the first ones)', () => {
    const pushes = (n: number): Buffer =>
      json({
        events: Array.from({ length: n }, (_, i) =>
          registryEvent('push', { mediaType: MANIFEST, digest: `sha256:m${i}`, tag: `1.0.${i}` }),
        ),
      });
    const h = { authorization: `Bearer ${TOKEN}` };
    const atLimit = images(verify('distribution', h, pushes(MAX_EVENT_IMAGES)));
    assert.equal(atLimit.length, MAX_EVENT_IMAGES);
    const over = images(verify('distribution', h, pushes(MAX_EVENT_IMAGES + 1)));
    assert.equal(over.length, MAX_EVENT_IMAGES);
    assert.equal(over.at(-1)?.tag, `1.0.${MAX_EVENT_IMAGES - 1}`);
    assert.equal(images(verify('distribution', h, pushes(1000))).length, MAX_EVENT_IMAGES);
  });

  test('acr: delete, quarantine and chart pushes add no image tag; a push by digest names none', () => {
    ignored(verify('acr', {}, acrBody('delete', '1.2.3')), /ACR delete adds no image tag/);
    ignored(verify('acr', {}, acrBody('chart_push', '1.2.3')), /chart_push/);
    ignored(verify('acr', {}, acrBody('push')), /names no image tag/);
  });

  test('nexus: deletes, non-Docker formats and blobs trigger nothing; a manifest asset names its tag', () => {
    const sign = (b: Buffer): Headers => ({ 'x-nexus-webhook-signature': hmac('sha1', TOKEN, b) });
    const del = nexusBody('DELETED', { format: 'docker', name: 'team/app', version: '1.2.3' });
    ignored(verify('nexus', sign(del), del), /DELETED/);
    const npm = nexusBody('CREATED', { format: 'npm', name: 'concrete', version: '1.0.0' });
    ignored(verify('nexus', sign(npm), npm), /not a tagged Docker image/);
    const asset = (name: string): Buffer =>
      json({ repositoryName: 'docker-hosted', action: 'CREATED', asset: { format: 'docker', name } });
    const blob = asset('v2/-/blobs/sha256:0123');
    ignored(verify('nexus', sign(blob), blob), /not a tagged Docker image/);
    const manifest = asset('v2/team/app/manifests/2.0.0');
    assert.deepEqual(images(verify('nexus', sign(manifest), manifest)), [
      img(undefined, 'team/app', '2.0.0'),
    ]);
  });

  test('quay: a notification without updated_tags is not a push', () => {
    ignored(
      verify('quay', {}, json({ docker_url: 'quay.io/team/app', build_id: 'b' })),
      /names no image tag/,
    );
  });

  test('dockerhub: official images are library/NAME on docker.io; callback_url is only read, never called', () => {
    const body = json({
      push_data: { tag: '1.27' },
      repository: { repo_name: 'nginx' },
      callback_url: 'http://10.0.0.1/',
    });
    assert.deepEqual(images(verify('dockerhub', {}, body)), [img('docker.io', 'library/nginx', '1.27')]);
  });
});

describe('receiverHookPath', () => {
  test("equals Flux's /hook/ + sha256(token + name + namespace)", () => {
    // Computed independently: printf '%s' 'e2b8…2a19github-receiverflux-system' | sha256sum
    assert.equal(
      receiverHookPath('e2b8a1f3c0d94c7b9f8e6a5d4c3b2a19', 'github-receiver', 'flux-system'),
      '/hook/48802470307e3d5c96577e454ce4c227fb946d1bc61efcca66d8a193ae57cad8',
    );
  });
  test('differs when any of token, name or namespace differs', () => {
    const base = receiverHookPath('t', 'n', 'ns');
    assert.notEqual(receiverHookPath('t2', 'n', 'ns'), base);
    assert.notEqual(receiverHookPath('t', 'n2', 'ns'), base);
    assert.notEqual(receiverHookPath('t', 'n', 'ns2'), base);
  });
});

describe('verifyWebhook: no request makes it throw', () => {
  const TYPES: ReceiverType[] = CASES.map((c) => c.type);
  const NAMES = [
    'content-type',
    'authorization',
    'x-signature',
    'x-hub-signature',
    'x-hub-signature-256',
    'x-github-event',
    'x-gitlab-token',
    'x-gitlab-event',
    'x-event-key',
    'x-nexus-webhook-signature',
    '__proto__',
    'constructor',
  ];
  const headerValue = fc.oneof(
    fc.string(),
    fc.constantFrom(
      `Bearer ${TOKEN}`,
      TOKEN,
      'sha256=',
      'sha1=zz',
      'application/json',
      'application/x-www-form-urlencoded',
    ),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.constant(undefined),
  );
  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 512 }).map((a) => Buffer.from(a)),
    fc.json().map((s) => Buffer.from(s)),
    fc.constantFrom(...CASES.map((c) => c.body)),
    fc
      .jsonValue()
      .map((v) =>
        json({ events: [v], event_data: v, target: v, push_data: v, repository: v, component: v, asset: v }),
      ),
  );
  test('random headers and bodies for every type give a verdict (fixed seed)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TYPES),
        fc.dictionary(fc.constantFrom(...NAMES), headerValue, { maxKeys: 6 }),
        bodies,
        fc.array(fc.string(), { maxLength: 2 }),
        (type, headers, body, events) => {
          const v = verifyWebhook(target(type, events), { headers, body });
          assert.ok([200, 202, 400, 401, 403].includes(v.status));
        },
      ),
      { seed: 20261130, numRuns: 3000 },
    );
  });
});
