import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/load.js';
import type { Config, Receiver } from '../../../src/config/types.js';
import {
  handleWebhook,
  receiverHookPath,
  receiverRoutes,
  resolveTriggers,
  type EventImage,
  type ReceivedEvent,
} from '../../../src/serve/receivers/index.js';
import { configDir } from '../../config/fixtures.js';

const repo = (
  name: string,
  image: string,
  extra = '',
  labels = '',
  ns = 'apps',
): string => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: ${name}
  namespace: ${ns}
${labels ? `  labels: ${labels}\n` : ''}spec:
  image: ${image}
  interval: 5m
${extra}`;

const policy = (
  name: string,
  repoName: string,
  body: string,
  ns = 'apps',
): string => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: ${name}
  namespace: ${ns}
spec:
  imageRepositoryRef:
    name: ${repoName}
${body}`;

const FILES = [
  repo('app', 'ghcr.io/org/app', '', '{team: a}'),
  repo('web', '127.0.0.1:5000/team/web', '', '{team: a, tier: front}'),
  repo('hub', 'nginx', '', '{team: b}'),
  repo('paused', 'ghcr.io/org/paused', '  suspend: true\n', '{team: b}'),
  repo('nexusapp', 'nexus.example.com:8082/team/app'),
  repo('nopolicy', 'ghcr.io/org/nopolicy'),
  repo('app', 'ghcr.io/org/app', '', '', 'other'),
  policy('app', 'app', '  policy:\n    semver:\n      range: ">=1.0.0 <2.0.0"\n'),
  policy(
    'app-rc',
    'app',
    '  filterTags:\n    pattern: "^rc-(?P<n>.*)$"\n    extract: "$n"\n  policy:\n    numerical:\n      order: asc\n',
  ),
  policy('web', 'web', '  policy:\n    semver:\n      range: ">=1.0.0"\n'),
  policy(
    'hub',
    'hub',
    '  filterTags:\n    pattern: "^1\\\\.27"\n  policy:\n    alphabetical:\n      order: asc\n',
  ),
  policy('nexusapp', 'nexusapp', '  filterTags:\n    pattern: "^main-"\n  policy:\n    newestBuild: {}\n'),
  policy('paused', 'paused', '  policy:\n    semver:\n      range: ">=0.0.0"\n'),
  policy('app', 'app', '  policy:\n    semver:\n      range: ">=1.0.0"\n', 'other'),
  `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec:
  url: https://github.com/org/fleet
  interval: 1m
  ref: {branch: main}
`,
  `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata: {name: front, namespace: apps}
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit:
      author: {name: pawl, email: pawl@example.com}
    push: {branch: main}
  update: {path: ./clusters/prod}
  policySelector:
    matchLabels: {}
    matchExpressions:
      - {key: unused, operator: DoesNotExist}
`,
  `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: hook, namespace: apps}
spec:
  type: distribution
  secretRef: {name: hook-token}
  resources:
    - {kind: ImageRepository, name: app}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-token, namespace: apps}
stringData: {token: s3cret-token}
`,
];

let config: Config;
let cleanup: () => Promise<void>;

before(async () => {
  const dir = await configDir({ 'all.yaml': FILES.join('---\n') });
  cleanup = dir.cleanup;
  const loaded = await loadConfig([dir.dir]);
  const errors = loaded.problems.filter((p) => p.severity === 'error');
  assert.deepEqual(errors, [], 'the fixture configuration is valid');
  config = loaded.config;
});
after(() => cleanup());

function receiver(resources: Receiver['spec']['resources']): Receiver {
  const r = config.receivers.get('apps/hook')!;
  return { ...r, spec: { ...r.spec, resources } };
}

function event(images: EventImage[]): ReceivedEvent {
  return { receiver: 'apps/hook', type: 'distribution', images };
}

const image = (registry: string | undefined, path: string, tag?: string): EventImage => ({
  repository: registry ? `${registry}/${path}` : path,
  path,
  ...(registry ? { registry } : {}),
  ...(tag ? { tag } : {}),
});

const ghcrApp = (tag: string): EventImage => image('ghcr.io', 'org/app', tag);

describe('resolveTriggers: which repositories an event makes due', () => {
  test('a pushed tag some policy could select triggers its repository', () => {
    const t = resolveTriggers(
      event([ghcrApp('1.4.0')]),
      receiver([{ kind: 'ImageRepository', name: 'app' }]),
      config,
    );
    assert.deepEqual(t, {
      repositories: ['apps/app'],
      automations: [],
      tags: ['apps/app:1.4.0'],
      skipped: [],
    });
  });

  test('the tags awaited are only those some policy could select, once each', () => {
    const t = resolveTriggers(
      event([ghcrApp('1.4.0'), ghcrApp('latest'), ghcrApp('1.4.0'), ghcrApp('1.5.0')]),
      receiver([{ kind: 'ImageRepository', name: 'app' }]),
      config,
    );
    assert.deepEqual(t.tags, ['apps/app:1.4.0', 'apps/app:1.5.0']);
  });

  test('a tag outside every policy (semver range, filter, numerical parse) triggers nothing, saying why', () => {
    const r = receiver([{ kind: 'ImageRepository', name: 'app' }]);
    for (const tag of ['2.0.0', 'latest', 'rc-x']) {
      const t = resolveTriggers(event([ghcrApp(tag)]), r, config);
      assert.deepEqual(t.repositories, [], tag);
      assert.deepEqual(t.skipped, [`ImageRepository apps/app: no ImagePolicy of it could select tag ${tag}`]);
    }
  });

  test('filterTags with extract is applied: rc-12 is selectable by the numerical policy', () => {
    const t = resolveTriggers(
      event([ghcrApp('rc-12')]),
      receiver([{ kind: 'ImageRepository', name: 'app' }]),
      config,
    );
    assert.deepEqual(t.repositories, ['apps/app']);
  });

  test("the repository's exclusionList is applied (Flux's default drops .sig tags)", () => {
    const r = receiver([{ kind: 'ImageRepository', name: 'hub' }]);
    assert.deepEqual(
      resolveTriggers(event([image('docker.io', 'library/nginx', '1.27.3')]), r, config).repositories,
      ['apps/hub'],
    );
    assert.deepEqual(
      resolveTriggers(event([image('docker.io', 'library/nginx', '1.27.3.sig')]), r, config).repositories,
      [],
    );
  });

  test('newestBuild: any tag passing filterTags could be the newest build', () => {
    const r = receiver([{ kind: 'ImageRepository', name: 'nexusapp' }]);
    // Nexus names no registry: the path alone must match.
    assert.deepEqual(
      resolveTriggers(event([image(undefined, 'team/app', 'main-abc')]), r, config).repositories,
      ['apps/nexusapp'],
    );
    assert.deepEqual(
      resolveTriggers(event([image(undefined, 'team/app', 'feature-abc')]), r, config).repositories,
      [],
    );
  });

  test('an event about another image triggers nothing, naming both', () => {
    const t = resolveTriggers(
      event([image('ghcr.io', 'org/other', '1.0.0')]),
      receiver([{ kind: 'ImageRepository', name: 'app' }]),
      config,
    );
    assert.deepEqual(t.repositories, []);
    assert.deepEqual(t.skipped, [
      'ImageRepository apps/app: the event is about ghcr.io/org/other:1.0.0, not ghcr.io/org/app',
    ]);
  });

  test('references are compared normalised: Docker Hub aliases and library/, host case, loopback names', () => {
    const hub = receiver([{ kind: 'ImageRepository', name: 'hub' }]);
    for (const registry of ['docker.io', 'index.docker.io', 'registry-1.docker.io']) {
      for (const path of ['library/nginx', 'nginx']) {
        assert.deepEqual(
          resolveTriggers(event([image(registry, path, '1.27.0')]), hub, config).repositories,
          ['apps/hub'],
        );
      }
    }
    const web = receiver([{ kind: 'ImageRepository', name: 'web' }]);
    for (const registry of ['127.0.0.1:5000', 'localhost:5000', 'LOCALHOST:5000']) {
      assert.deepEqual(
        resolveTriggers(event([image(registry, 'team/web', '1.0.0')]), web, config).repositories,
        ['apps/web'],
      );
    }
    assert.deepEqual(
      resolveTriggers(event([image('localhost:5001', 'team/web', '1.0.0')]), web, config).repositories,
      [],
    );
    assert.deepEqual(
      resolveTriggers(event([image('ghcr.io', 'team/web', '1.0.0')]), web, config).repositories,
      [],
    );
  });

  test('an event that names no image (forges, generic) triggers every named repository', () => {
    const t = resolveTriggers(
      event([]),
      receiver([
        { kind: 'ImageRepository', name: 'app' },
        { kind: 'ImageRepository', name: 'web' },
      ]),
      config,
    );
    assert.deepEqual(t.repositories, ['apps/app', 'apps/web']);
  });

  test('an image named without a tag rescans its repository', () => {
    const t = resolveTriggers(
      event([image('ghcr.io', 'org/app')]),
      receiver([{ kind: 'ImageRepository', name: 'app' }]),
      config,
    );
    assert.deepEqual(t.repositories, ['apps/app']);
    assert.deepEqual(t.tags, [], 'no tag to wait for');
  });
});

describe('resolveTriggers: resources as Flux reads them', () => {
  test('"*" with matchLabels selects by labels in the namespace; {} selects every object', () => {
    const byLabel = resolveTriggers(
      event([]),
      receiver([{ kind: 'ImageRepository', name: '*', matchLabels: { team: 'a' } }]),
      config,
    );
    assert.deepEqual(byLabel.repositories, ['apps/app', 'apps/web']);
    const twoLabels = resolveTriggers(
      event([]),
      receiver([{ kind: 'ImageRepository', name: '*', matchLabels: { team: 'a', tier: 'front' } }]),
      config,
    );
    assert.deepEqual(twoLabels.repositories, ['apps/web']);
    const all = resolveTriggers(
      event([]),
      receiver([{ kind: 'ImageRepository', name: '*', matchLabels: {} }]),
      config,
    );
    assert.deepEqual(all.repositories, [
      'apps/app',
      'apps/hub',
      'apps/nexusapp',
      'apps/nopolicy',
      'apps/web',
    ]);
    assert.deepEqual(all.skipped, ['ImageRepository apps/paused: suspended']);
  });

  test('"*" matching nothing, or without matchLabels, is skipped with the reason', () => {
    const none = resolveTriggers(
      event([]),
      receiver([{ kind: 'ImageRepository', name: '*', matchLabels: { team: 'z' } }]),
      config,
    );
    assert.deepEqual(none, {
      repositories: [],
      automations: [],
      tags: [],
      skipped: ['ImageRepository apps/*: none has the labels team=z'],
    });
    const bare = resolveTriggers(event([]), receiver([{ kind: 'ImageRepository', name: '*' }]), config);
    assert.deepEqual(bare.skipped, ['ImageRepository apps/*: name "*" needs matchLabels']);
  });

  test('a name selects that object and its matchLabels are ignored, as in Flux', () => {
    const t = resolveTriggers(
      event([]),
      receiver([{ kind: 'ImageRepository', name: 'app', matchLabels: { team: 'z' } }]),
      config,
    );
    assert.deepEqual(t.repositories, ['apps/app']);
  });

  test("the namespace defaults to the Receiver's; another may be named", () => {
    const t = resolveTriggers(
      event([ghcrApp('2.5.0')]),
      receiver([{ kind: 'ImageRepository', name: 'app', namespace: 'other' }]),
      config,
    );
    assert.deepEqual(t.repositories, ['other/app'], 'other/app has the wider range');
  });

  test('an ImagePolicy maps to its repository', () => {
    const t = resolveTriggers(
      event([image('127.0.0.1:5000', 'team/web', '3.0.0')]),
      receiver([{ kind: 'ImagePolicy', name: 'web' }]),
      config,
    );
    assert.deepEqual(t.repositories, ['apps/web']);
  });

  test('an ImageUpdateAutomation or its GitRepository maps to the repositories of its policies', () => {
    for (const resource of [
      { kind: 'ImageUpdateAutomation', name: 'front' },
      { kind: 'GitRepository', name: 'fleet' },
    ]) {
      const all = resolveTriggers(event([]), receiver([resource]), config);
      assert.deepEqual(
        all.repositories,
        ['apps/app', 'apps/hub', 'apps/nexusapp', 'apps/web'],
        resource.kind,
      );
      assert.deepEqual(all.automations, ['apps/front']);
      assert.deepEqual(all.skipped, ['ImageRepository apps/paused: suspended']);
      const one = resolveTriggers(
        event([image('localhost:5000', 'team/web', '1.1.0')]),
        receiver([resource]),
        config,
      );
      assert.deepEqual(one.repositories, ['apps/web']);
      assert.deepEqual(one.automations, ['apps/front']);
      const none = resolveTriggers(
        event([image('localhost:5000', 'team/web', 'nope')]),
        receiver([resource]),
        config,
      );
      assert.deepEqual(none.automations, []);
      assert.ok(
        none.skipped.includes('ImageUpdateAutomation apps/front: none of its repositories is triggered'),
      );
    }
  });

  test('missing objects, kinds pawl does not act on, suspended and policy-less repositories are skipped', () => {
    const t = resolveTriggers(
      event([image('ghcr.io', 'org/nopolicy', '1.0.0'), image('ghcr.io', 'org/paused', '1.0.0')]),
      receiver([
        { kind: 'ImageRepository', name: 'missing' },
        { kind: 'HelmRelease', name: 'x' },
        { kind: 'ImageRepository', name: 'paused' },
        { kind: 'ImageRepository', name: 'nopolicy' },
      ]),
      config,
    );
    assert.deepEqual(t.repositories, []);
    assert.deepEqual(t.skipped, [
      'ImageRepository apps/missing: not found',
      'HelmRelease apps/x: pawl does not act on HelmRelease',
      'ImageRepository apps/nopolicy: no ImagePolicy uses it',
      'ImageRepository apps/paused: suspended',
    ]);
  });
});

describe('receiverRoutes', () => {
  test("each Receiver is routed by Flux's path from its Secret's token", () => {
    const routes = receiverRoutes(config);
    assert.deepEqual(routes.problems, []);
    const path = receiverHookPath('s3cret-token', 'hook', 'apps');
    const route = routes.byPath.get(path);
    assert.ok(route, `routed at ${path}`);
    assert.equal(route.target.token, 's3cret-token');
    assert.equal(route.target.type, 'distribution');
    assert.equal(route.receiver, config.receivers.get('apps/hook'));
    assert.equal(routes.byPath.size, 1);
  });

  test('a Receiver whose Secret has an empty token is not served, and the message does not quote it', () => {
    const secrets = new Map(config.secrets);
    const s = secrets.get('apps/hook-token')!;
    secrets.set('apps/hook-token', { ...s, data: { token: Buffer.alloc(0) } });
    const routes = receiverRoutes({ ...config, secrets });
    assert.equal(routes.byPath.size, 0);
    assert.deepEqual(routes.problems, [
      { receiver: 'apps/hook', message: 'Secret apps/hook-token has an empty "token"' },
    ]);
  });
});

describe('handleWebhook: path to work', () => {
  const push = (tag: string): Buffer =>
    Buffer.from(
      JSON.stringify({
        events: [
          {
            id: 'e1',
            action: 'push',
            target: { repository: 'org/app', tag, mediaType: 'application/vnd.oci.image.manifest.v1+json' },
            request: { host: 'ghcr.io', method: 'PUT' },
          },
        ],
      }),
    );
  const path = (): string => receiverHookPath('s3cret-token', 'hook', 'apps');
  const auth = { authorization: 'Bearer s3cret-token' };

  test('a verified push is 202 with the triggers it resolves to; a query string is ignored', () => {
    const routes = receiverRoutes(config);
    const out = handleWebhook(routes, config, { path: `${path()}?x=1`, headers: auth, body: push('1.5.0') });
    assert.equal(out.status, 202, JSON.stringify(out));
    assert.ok(out.status === 202);
    assert.equal(out.receiver, 'apps/hook');
    assert.deepEqual(out.triggers, {
      repositories: ['apps/app'],
      automations: [],
      tags: ['apps/app:1.5.0'],
      skipped: [],
    });
  });

  test('unknown paths are 404, a suspended Receiver 503, a wrong token 403 naming the Receiver', () => {
    const routes = receiverRoutes(config);
    assert.equal(
      handleWebhook(routes, config, { path: '/hook/00', headers: auth, body: push('1.5.0') }).status,
      404,
    );
    assert.equal(
      handleWebhook(routes, config, { path: path().toUpperCase(), headers: auth, body: push('1.5.0') })
        .status,
      404,
    );
    const wrong = handleWebhook(routes, config, {
      path: path(),
      headers: { authorization: 'Bearer nope' },
      body: push('1.5.0'),
    });
    assert.deepEqual(wrong, {
      status: 403,
      error: "the bearer token does not match the receiver's token",
      receiver: 'apps/hook',
    });
    const receivers = new Map(config.receivers);
    const r = receivers.get('apps/hook')!;
    receivers.set('apps/hook', { ...r, spec: { ...r.spec, suspend: true } });
    const paused = { ...config, receivers };
    const out = handleWebhook(receiverRoutes(paused), paused, {
      path: path(),
      headers: auth,
      body: push('1.5.0'),
    });
    assert.equal(out.status, 503);
  });
});
