import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import type { AutomationReport } from '../../src/run/index.js';
import type { ScanReport } from '../../src/scan/index.js';
import {
  KubeApiError,
  KubeClient,
  RESOURCES,
  StatusWriter,
  fromKubeconfig,
  imagePolicyStatus,
  imageRepositoryStatus,
  imageUpdateAutomationStatus,
  latestTags,
  canonicalImageName,
} from '../../src/kube/index.js';
import { startKube, type TestKube } from '../helpers/kube.js';

let kube: TestKube;
let client: KubeClient;

before(async () => {
  kube = await startKube();
  client = new KubeClient(fromKubeconfig(kube.kubeconfig));
  await kube.kubectl(
    ['apply', '-f', '-'],
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: default}
spec: {image: registry.example/app, interval: 5m}
---
apiVersion: image.pawl.dev/v1alpha1
kind: ImagePolicy
metadata: {name: app, namespace: default}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=1.0.0"}}
  guard: {downgrades: Block}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: app, namespace: default}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: flux-system}
  git:
    commit: {author: {name: pawl, email: pawl@example.com}}
    push: {branch: main}
  update: {path: ./apps, strategy: Setters}
`,
  );
});
after(async () => {
  await client?.close();
  await kube?.close();
});

const scan: ScanReport = {
  name: 'default/app',
  image: 'registry.example/app',
  tags: 3,
  scanned: true,
  suspended: false,
  anomalies: [],
  error: null,
  added: [],
  removed: [],
  requests: 1,
};

test('ImageRepository status is accepted by Flux CRD, and kubectl wait sees Ready', async () => {
  const writer = new StatusWriter(client);
  const written = await writer.write(RESOURCES.flux.ImageRepository, 'default', 'app', (state) =>
    imageRepositoryStatus(state, {
      image: 'registry.example/app',
      exclusionList: ['^.*\\.sig$'],
      report: scan,
      tags: ['1.0.0', '1.2.0', '1.10.0'],
      scanTime: new Date('2026-12-01T10:00:00.123Z'),
    }),
  );
  assert.ok(written);
  await kube.kubectl([
    'wait',
    '--for=condition=Ready',
    'imagerepositories.image.toolkit.fluxcd.io/app',
    '--timeout=60s',
  ]);
  const { stdout } = await kube.kubectl([
    'get',
    'imagerepositories.image.toolkit.fluxcd.io',
    'app',
    '-o',
    'json',
  ]);
  const status = (JSON.parse(stdout) as { status: Record<string, unknown> }).status;
  assert.deepEqual(status.lastScanResult, {
    tagCount: 3,
    scanTime: '2026-12-01T10:00:00Z',
    latestTags: ['1.2.0', '1.10.0', '1.0.0'],
  });
  assert.equal(status.canonicalImageName, 'registry.example/app');
  assert.deepEqual(status.observedExclusionList, ['^.*\\.sig$']);
  assert.equal(status.observedGeneration, 1);
  const ready = (status.conditions as { type: string; reason: string; message: string }[]).find(
    (c) => c.type === 'Ready',
  );
  assert.equal(ready?.reason, 'Succeeded');
  assert.equal(ready?.message, 'successful scan: found 3 tags');
});

test('ImagePolicy latestRef holds the candidate; the guard kept value is in the Ready message', async () => {
  const writer = new StatusWriter(client);
  const kept = {
    current: '1.10.0',
    reason: 'downgrade-blocked',
    detail: '1.2.0 is lower than 1.10.0, written before',
  };
  await writer.write(RESOURCES.pawl.ImagePolicy, 'default', 'app', (state) =>
    imagePolicyStatus(state, { image: 'registry.example/app', candidate: '1.2.0', error: null, kept }),
  );
  const tag = await kube.kubectl([
    'get',
    'imagepolicies.image.pawl.dev',
    'app',
    '-o',
    'jsonpath={.status.latestRef.tag}',
  ]);
  assert.equal(tag.stdout, '1.2.0');
  await kube.kubectl(['wait', '--for=condition=Ready', 'imagepolicies.image.pawl.dev/app', '--timeout=60s']);
  // The next candidate: latestRef moves, the old one becomes observedPreviousRef.
  const after = await writer.write(RESOURCES.pawl.ImagePolicy, 'default', 'app', (state) =>
    imagePolicyStatus(state, { image: 'registry.example/app', candidate: '1.11.0', error: null }),
  );
  const status = (after as unknown as { status: Record<string, unknown> }).status;
  assert.deepEqual(status.latestRef, { name: 'registry.example/app', tag: '1.11.0' });
  assert.deepEqual(status.observedPreviousRef, { name: 'registry.example/app', tag: '1.2.0' });
  const ready = (status.conditions as { type: string; message: string }[]).find((c) => c.type === 'Ready');
  assert.equal(
    ready?.message,
    'Latest image tag for registry.example/app resolved to 1.11.0 (previously registry.example/app:1.2.0)',
  );
  // The same status again is no write: the object keeps its resourceVersion.
  const before = writer.counts.patched;
  const again = await writer.write(RESOURCES.pawl.ImagePolicy, 'default', 'app', (state) =>
    imagePolicyStatus(state, { image: 'registry.example/app', candidate: '1.11.0', error: null }),
  );
  assert.equal(again?.metadata.resourceVersion, after?.metadata.resourceVersion);
  assert.equal(writer.counts.patched, before);
  assert.equal(writer.counts.unchanged, 1);
  const rv = await kube.kubectl([
    'get',
    'imagepolicies.image.pawl.dev',
    'app',
    '-o',
    'jsonpath={.metadata.resourceVersion}',
  ]);
  assert.equal(rv.stdout, after?.metadata.resourceVersion);
  // spec is not touched by a status write.
  const spec = await kube.kubectl([
    'get',
    'imagepolicies.image.pawl.dev',
    'app',
    '-o',
    'jsonpath={.spec.guard.downgrades}',
  ]);
  assert.equal(spec.stdout, 'Block');
});

test('a failed policy is Ready=False with Flux reason, and Reconciling', async () => {
  const writer = new StatusWriter(client);
  const o = await writer.write(RESOURCES.pawl.ImagePolicy, 'default', 'app', (state) =>
    imagePolicyStatus(state, {
      image: 'registry.example/app',
      candidate: null,
      error: 'ImageRepository default/app has not been scanned yet',
      dependencyNotReady: true,
    }),
  );
  const conds = (
    o as unknown as { status: { conditions: { type: string; status: string; reason: string }[] } }
  ).status.conditions;
  assert.deepEqual(
    conds.map((c) => [c.type, c.status, c.reason]),
    [
      ['Ready', 'False', 'DependencyNotReady'],
      ['Reconciling', 'True', 'ProgressingWithRetry'],
    ],
  );
});

test('ImageUpdateAutomation status after a push, then an up-to-date pass keeps lastPushCommit', async () => {
  const writer = new StatusWriter(client);
  const report: AutomationReport = {
    name: 'default/app',
    result: 'pushed',
    commit: '0123456789abcdef0123456789abcdef01234567',
    branch: 'main',
    changes: [],
    kept: [],
    error: null,
  };
  const policies = { app: { name: 'registry.example/app', tag: '1.11.0' } };
  await writer.write(RESOURCES.flux.ImageUpdateAutomation, 'default', 'app', (state) =>
    imageUpdateAutomationStatus(state, { report, runTime: new Date('2026-12-01T11:00:00Z'), policies }),
  );
  await kube.kubectl([
    'wait',
    '--for=condition=Ready',
    'imageupdateautomations.image.toolkit.fluxcd.io/app',
    '--timeout=60s',
  ]);
  const o = await writer.write(RESOURCES.flux.ImageUpdateAutomation, 'default', 'app', (state) =>
    imageUpdateAutomationStatus(state, {
      report: { ...report, result: 'up-to-date', commit: null },
      runTime: new Date('2026-12-01T11:05:00Z'),
      policies,
    }),
  );
  const status = (o as unknown as { status: Record<string, unknown> }).status;
  assert.equal(status.lastPushCommit, report.commit);
  assert.equal(status.lastPushTime, '2026-12-01T11:00:00Z');
  assert.equal(status.lastAutomationRunTime, '2026-12-01T11:05:00Z');
  assert.deepEqual(status.observedPolicies, policies);
  const ready = (status.conditions as { type: string; message: string }[]).find((c) => c.type === 'Ready');
  assert.equal(ready?.message, 'repository up-to-date');
});

test("the API server refuses a status outside Flux's schema (the check above is real)", async () => {
  await assert.rejects(
    client.patchStatus(RESOURCES.flux.ImageRepository, 'default', 'app', {
      lastScanResult: { tagCount: 'many' },
    }),
    (err: unknown) => err instanceof KubeApiError && err.status === 422,
  );
});

test('a conflicting write is computed again from the object as it is now', async () => {
  let calls = 0;
  const writer = new StatusWriter(client);
  const o = await writer.write(RESOURCES.flux.ImageRepository, 'default', 'app', (state) => {
    calls++;
    if (calls === 1) {
      // Someone else changes the object between pawl's read and its write.
      execFileSync(['annotate', '--overwrite', 'imagerepositories.image.toolkit.fluxcd.io/app', 'x=1']);
    }
    return imageRepositoryStatus(state, {
      image: 'registry.example/app',
      exclusionList: [],
      report: scan,
      tags: [],
    });
  });
  assert.equal(calls, 2);
  assert.ok(o);
});

test('pure parts: Flux ordering of latestTags, canonical names, transition times kept', () => {
  assert.deepEqual(latestTags(['a', 'c', 'b']), ['c', 'b', 'a']);
  assert.equal(latestTags(Array.from({ length: 20 }, (_, i) => `t${i}`)).length, 10);
  assert.equal(canonicalImageName('nginx'), 'index.docker.io/library/nginx');
  const previous = {
    conditions: [
      {
        type: 'Ready' as const,
        status: 'True' as const,
        observedGeneration: 1,
        lastTransitionTime: '2026-01-01T00:00:00Z',
        reason: 'Succeeded',
        message: 'x',
      },
    ],
  };
  const s = imageRepositoryStatus(
    { generation: 2, previous, now: new Date('2026-12-01T00:00:00Z') },
    { image: 'nginx', exclusionList: [], report: scan, tags: [] },
  )!;
  const ready = (s.conditions as { lastTransitionTime: string; observedGeneration: number }[])[0]!;
  assert.equal(ready.lastTransitionTime, '2026-01-01T00:00:00Z');
  assert.equal(ready.observedGeneration, 2);
  assert.equal(
    imageRepositoryStatus(
      { generation: 1, now: new Date() },
      { image: 'x', exclusionList: [], report: { ...scan, suspended: true } },
    ),
    undefined,
  );
});

/** kubectl, synchronously: the conflicting change must land before compute returns. */
function execFileSync(args: string[]): void {
  const r = spawnSync('kubectl', args, { env: { ...process.env, KUBECONFIG: kube.kubeconfig } });
  if (r.status !== 0) throw new Error(String(r.stderr));
}
