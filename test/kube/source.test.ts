import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LoadResult } from '../../src/config/index.js';
import {
  KubeClient,
  KubeSource,
  ResourceExpiredError,
  fromKubeconfig,
  RESOURCES,
} from '../../src/kube/index.js';
import { startKube, type TestKube } from '../helpers/kube.js';

let kube: TestKube;
let client: KubeClient;

before(async () => {
  kube = await startKube();
  client = new KubeClient(fromKubeconfig(kube.kubeconfig));
});
after(async () => {
  await client?.close();
  await kube?.close();
});

const repo = (name: string, image: string, ns = 'default', group = 'image.toolkit.fluxcd.io/v1'): string => `
apiVersion: ${group}
kind: ImageRepository
metadata: {name: ${name}, namespace: ${ns}}
spec: {image: ${image}, interval: 5m}
`;
const policy = (name: string, range: string, extra = '', group = 'image.pawl.dev/v1alpha1'): string => `
apiVersion: ${group}
kind: ImagePolicy
metadata: {name: ${name}, namespace: default}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: "${range}"}}
${extra}
`;

/** The next Config the source announces that satisfies `ok` (or the current one, if it does). */
function until(source: KubeSource, ok: (r: LoadResult) => boolean): Promise<LoadResult> {
  return new Promise((resolve) => {
    const now = source.current();
    if (now && ok(now)) return resolve(now);
    const off = source.onChange((r) => {
      if (!ok(r)) return;
      off();
      resolve(r);
    });
  });
}

test('objects applied with kubectl are seen, and changes while watching take effect, a broken object alone', async () => {
  await kube.kubectl(
    ['apply', '-f', '-'],
    repo('app', 'registry.example/app') + '---' + policy('app', '>=1.0.0'),
  );
  const relists: string[] = [];
  const source = new KubeSource({
    client,
    debounceMs: 20,
    onRelist: (r, why) => relists.push(`${r.plural}:${why}`),
  });
  try {
    const first = await source.start();
    assert.equal(first.config.imageRepositories.get('default/app')?.spec.image, 'registry.example/app');
    const pol = first.config.imagePolicies.get('default/app');
    assert.equal(pol?.apiVersion, 'image.pawl.dev/v1alpha1');
    assert.deepEqual(pol?.spec.policy, { strategy: 'semver', range: '>=1.0.0' });
    assert.equal(pol?.source.file, 'default/app');
    assert.ok(relists.includes('imagepolicies:initial'));

    // Changed: the new range is seen.
    await kube.kubectl(['apply', '-f', '-'], policy('app', '>=2.0.0'));
    await until(source, (r) => {
      const p = r.config.imagePolicies.get('default/app')?.spec.policy;
      return p?.strategy === 'semver' && p.range === '>=2.0.0';
    });

    // Created: a second policy, and one the loader refuses (a semver range that is not one):
    // that one is a problem for itself, named by namespace/name, and the others stay.
    await kube.kubectl(['apply', '-f', '-'], policy('other', '^1') + '---' + policy('broken', 'not a range'));
    const withBroken = await until(source, (r) =>
      r.problems.some((p) => p.object === 'ImagePolicy default/broken'),
    );
    assert.ok(withBroken.config.imagePolicies.has('default/other'));
    assert.ok(withBroken.config.imagePolicies.has('default/app'));
    assert.ok(!withBroken.config.imagePolicies.has('default/broken'));
    const problem = withBroken.problems.find((p) => p.object === 'ImagePolicy default/broken')!;
    assert.equal(problem.location.file, 'default/broken');
    assert.match(problem.message, /not a valid semver range/);

    // Deleted.
    await kube.kubectl(['delete', 'imagepolicies.image.pawl.dev', 'other']);
    await until(source, (r) => !r.config.imagePolicies.has('default/other'));
  } finally {
    await source.stop();
  }
});

test('a Secret named by an ImageRepository is read; others are not', async () => {
  await kube.kubectl(['create', 'secret', 'generic', 'unrelated', '--from-literal=x=y']);
  await kube.kubectl(
    ['apply', '-f', '-'],
    `apiVersion: v1
kind: Secret
metadata: {name: regcred, namespace: default}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths":{"registry.example":{"username":"u","password":"p"}}}'
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: private, namespace: default}
spec: {image: registry.example/private, interval: 5m, secretRef: {name: regcred}}
`,
  );
  const source = new KubeSource({ client, debounceMs: 20 });
  try {
    const { config } = await source.start();
    assert.ok(config.secrets.has('default/regcred'));
    assert.ok(!config.secrets.has('default/unrelated'));
    assert.equal(config.imageRepositories.get('default/private')?.spec.secretRef, 'regcred');
  } finally {
    await source.stop();
  }
});

test('--watch-namespace and --watch-label-selector narrow what is read', async () => {
  await kube.kubectl(['create', 'namespace', 'team-b']);
  await kube.kubectl(['apply', '-f', '-'], repo('b', 'registry.example/b', 'team-b'));
  await kube.kubectl(['label', 'imagerepositories.image.toolkit.fluxcd.io', '-n', 'team-b', 'b', 'pawl=yes']);
  const inB = new KubeSource({ client, namespace: 'team-b' });
  const labelled = new KubeSource({ client, labelSelector: 'pawl=yes' });
  try {
    const b = await inB.start();
    assert.deepEqual([...b.config.imageRepositories.keys()], ['team-b/b']);
    const l = await labelled.start();
    assert.deepEqual([...l.config.imageRepositories.keys()], ['team-b/b']);
  } finally {
    await inB.stop();
    await labelled.stop();
  }
});

test('a watch from a compacted resourceVersion is 410 Gone', async () => {
  const watch = client.watch(RESOURCES.pawl.ImagePolicy, { resourceVersion: '1' });
  await assert.rejects(watch.next(), ResourceExpiredError);
});

test('restarting the API server mid-watch loses no change; an expired watch relists', async () => {
  await kube.kubectl(
    ['apply', '-f', '-'],
    repo('app', 'registry.example/app') + '---' + policy('app', '>=3.0.0'),
  );
  const errors: string[] = [];
  const relists: string[] = [];
  let watchFailed!: () => void;
  const failed = new Promise<void>((r) => (watchFailed = r));
  const source = new KubeSource({
    client,
    debounceMs: 20,
    // The backoff's wait is skipped, each retry waits for a tick: the server is back when the
    // test brought it back, not after a time that happens to be long enough.
    sleep: () => new Promise((r) => setImmediate(r)),
    onWatchError: (r) => {
      errors.push(r.plural);
      watchFailed();
    },
    onRelist: (r, why) => relists.push(`${r.plural}:${why}`),
  });
  try {
    await source.start();
    await until(source, (r) => {
      const p = r.config.imagePolicies.get('default/app')?.spec.policy;
      return p?.strategy === 'semver' && p.range === '>=3.0.0';
    });
    // A write elsewhere: the restarted server's watch cache begins after the versions pawl's
    // quiet watches (ImageUpdateAutomations, say) last saw, so those answer 410 and are relisted.
    await kube.kubectl(['create', 'configmap', 'bump']);
    await kube.stop();
    await failed;
    await kube.start();
    // Changed after the restart, and created while pawl's watches were still reconnecting.
    await kube.kubectl(['apply', '-f', '-'], policy('app', '>=4.0.0') + '---' + policy('late', '^4'));
    const r = await until(source, (x) => {
      const p = x.config.imagePolicies.get('default/app')?.spec.policy;
      return p?.strategy === 'semver' && p.range === '>=4.0.0' && x.config.imagePolicies.has('default/late');
    });
    assert.ok(r.config.imageRepositories.has('default/app'));
    assert.ok(errors.length > 0);
    assert.ok(
      relists.some((r) => r.endsWith(':expired')),
      `no relist after the restart: ${relists.join(', ')}`,
    );
  } finally {
    await source.stop();
  }
});
