import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { startKube, type TestKube } from '../helpers/kube.js';

let kube: TestKube;
before(async () => {
  kube = await startKube();
});
after(async () => {
  await kube?.close();
});

const policy = (group: string, name: string): string => `
apiVersion: ${group}
kind: ImagePolicy
metadata: {name: ${name}, namespace: default}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=1.0.0"}}
  guard: {downgrades: Allow, staleScan: {confirmations: 2, window: 10m}}
`;

test('a pawl ImagePolicy keeps its guard through the API server', async () => {
  await kube.kubectl(['apply', '-f', '-'], policy('image.pawl.dev/v1alpha1', 'ours'));
  const { stdout } = await kube.kubectl(['get', 'imagepolicies.image.pawl.dev', 'ours', '-o', 'json']);
  const spec = (JSON.parse(stdout) as { spec: { guard: unknown } }).spec;
  assert.deepEqual(spec.guard, {
    downgrades: 'Allow',
    compare: 'Policy',
    manualEdits: 'Respect',
    staleScan: { confirmations: 2, window: '10m' },
    verifyCandidate: true,
  });
});

test('a Flux ImagePolicy with guard is refused by strict validation, and pruned with a warning otherwise', async () => {
  await assert.rejects(
    kube.kubectl(['apply', '-f', '-'], policy('image.toolkit.fluxcd.io/v1', 'flux')),
    (err: { stderr?: string }) => /unknown field "spec.guard"/.test(err.stderr ?? ''),
  );
  const { stderr } = await kube.kubectl(
    ['apply', '--validate=warn', '-f', '-'],
    policy('image.toolkit.fluxcd.io/v1', 'flux'),
  );
  assert.match(stderr, /unknown field "spec.guard"/);
  const { stdout } = await kube.kubectl([
    'get',
    'imagepolicies.image.toolkit.fluxcd.io',
    'flux',
    '-o',
    'json',
  ]);
  assert.equal((JSON.parse(stdout) as { spec: { guard?: unknown } }).spec.guard, undefined);
});

test('pawl ImagePolicy newestBuild is accepted; the printer columns are Flux', async () => {
  await kube.kubectl(
    ['apply', '-f', '-'],
    `apiVersion: image.pawl.dev/v1alpha1
kind: ImagePolicy
metadata: {name: newest, namespace: default}
spec:
  imageRepositoryRef: {name: app}
  policy: {newestBuild: {}}
`,
  );
  const { stdout } = await kube.kubectl([
    'get',
    'imagepolicies.image.pawl.dev',
    'newest',
    '-o',
    'jsonpath={.spec.policy}',
  ]);
  assert.deepEqual(JSON.parse(stdout), { newestBuild: {} });
  const table = await kube.kubectl(['get', 'imagepolicies.image.pawl.dev']);
  assert.match(table.stdout.split('\n')[0]!, /^NAME\s+IMAGE\s+TAG\s+READY\s+STATUS\s+AGE/);
});

test('a pawl ImageUpdateAutomation keeps spec.git.push.pullRequest through the API server', async () => {
  await kube.kubectl(
    ['apply', '-f', '-'],
    `apiVersion: image.pawl.dev/v1alpha1
kind: ImageUpdateAutomation
metadata: {name: proposes, namespace: default}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit: {author: {email: pawl@example.com}}
    push:
      branch: 'pawl/{{ .AutomationObject.Name }}'
      pullRequest: {provider: gitea, secretRef: {name: forge-token}, title: 'Update', labels: [images]}
  update: {path: ./}
`,
  );
  const { stdout } = await kube.kubectl([
    'get',
    'imageupdateautomations.image.pawl.dev',
    'proposes',
    '-o',
    'jsonpath={.spec.git.push.pullRequest}',
  ]);
  assert.deepEqual(JSON.parse(stdout), {
    provider: 'gitea',
    secretRef: { name: 'forge-token' },
    title: 'Update',
    labels: ['images'],
    draft: false,
  });
});

test('the committed CRDs are what scripts/pawl-crds.ts writes', async () => {
  const root = resolve(import.meta.dirname, '..', '..');
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/pawl-crds.ts', '--check'], {
    cwd: root,
    env: {
      ...process.env,
      PAWL_FLUX_CRDS:
        process.env.PAWL_FLUX_CRDS ?? resolve(root, '..', 'shared', 'conformance', 'flux', 'crds'),
    },
  });
});

test('a pawl ImagePolicy keeps its gates (verify, minimumAge, window, digest.platform) through the API server', async () => {
  await kube.kubectl(
    ['apply', '-f', '-'],
    `
apiVersion: image.pawl.dev/v1alpha1
kind: ImagePolicy
metadata: {name: gated, namespace: default}
spec:
  imageRepositoryRef: {name: app}
  policy: {semver: {range: ">=1.0.0"}}
  digestReflectionPolicy: IfNotPresent
  digest: {platform: linux/arm64}
  verify: {provider: cosign, secretRef: {name: cosign-keys}}
  guard: {minimumAge: 1h, window: {schedule: "0 9 * * 1-5", timeZone: Europe/Berlin, duration: 8h}}
`,
  );
  const { stdout } = await kube.kubectl(['get', 'imagepolicies.image.pawl.dev', 'gated', '-o', 'json']);
  const spec = (JSON.parse(stdout) as { spec: Record<string, { [k: string]: unknown }> }).spec;
  assert.deepEqual(spec.verify, { provider: 'cosign', secretRef: { name: 'cosign-keys' } });
  assert.deepEqual(spec.digest, { platform: 'linux/arm64' });
  assert.equal(spec.guard!.minimumAge, '1h');
  assert.deepEqual(spec.guard!.window, {
    schedule: '0 9 * * 1-5',
    timeZone: 'Europe/Berlin',
    duration: '8h',
  });
});
