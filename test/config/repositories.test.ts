/**
 * Standard repository layouts load (issue 10, item 2): kustomize bases and overlays built with
 * real kustomize, Flux postBuild substitutions, one pawl per cluster directory, identical copies
 * of the bootstrap objects, patch files, and Secrets that are not in Git.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { substituteDocuments, substituteText } from '../../src/config/substitute.js';
import { kustomizeWords } from '../../src/config/inputs.js';
import { formatProblem } from '../../src/util/errors.js';
import { STAGING_POLICY_PATCH, fleetFiles, writeTree } from '../helpers/fleet.js';
import { lineOf } from './fixtures.js';

const REGISTRY = '127.0.0.1:5000';
const GIT_URL = 'https://git.example.com/fleet.git';
const ENV_SECRET = {
  PAWL_SECRET_FLUX_SYSTEM_FLUX_SYSTEM_USERNAME: 'flux',
  PAWL_SECRET_FLUX_SYSTEM_FLUX_SYSTEM_PASSWORD: 'hunter2-not-real',
};

async function fleet(t: { after: (fn: () => Promise<void>) => void }, files = fleetFiles()): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-fleet-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeTree(dir, files, (s) =>
    s.replaceAll('{{REGISTRY}}', REGISTRY).replaceAll('{{GIT_URL}}', GIT_URL),
  );
  // A Git work tree: Flux Kustomization paths are relative to its root.
  execFileSync('git', ['init', '-q', dir]);
  return dir;
}

const errorsOf = (problems: Parameters<typeof formatProblem>[0][], dir: string) =>
  problems.filter((p) => p.severity === 'error').map((p) => formatProblem(p).replaceAll(`${dir}/`, ''));

describe('a multi-cluster fleet repository', () => {
  test("-c clusters/production reads what Flux applies for that cluster, with that cluster's substitutions", async (t) => {
    const dir = await fleet(t);
    const { config, problems, skipped } = await loadConfig([join(dir, 'clusters/production')], {
      secrets: { env: ENV_SECRET },
    });
    // The one broken automation, at its line; nothing else is wrong.
    const legacy = fleetFiles()['clusters/production/legacy-automation.yaml']!;
    assert.deepEqual(errorsOf(problems, dir), [
      `clusters/production/legacy-automation.yaml:${lineOf(legacy, 'messageTemplate')}: ImageUpdateAutomation flux-system/legacy: spec.git.commit.messageTemplate: cannot be rendered: template uses removed '.Updated' field. Please use '.Changed' instead. See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template`,
    ]);
    assert.deepEqual(
      skipped.map((s) => `${s.kind} ${s.namespace}/${s.name}`),
      ['ImageUpdateAutomation flux-system/legacy'],
    );
    assert.deepEqual([...config.automations.keys()], ['flux-system/production']);
    // ./apps/production was followed from the apps Kustomization and built with its base.
    const podinfo = config.imagePolicies.get('flux-system/podinfo')!;
    assert.deepEqual(podinfo.spec.policy, { strategy: 'semver', range: '>=1.0.0 <2.0.0' });
    assert.deepEqual(podinfo.metadata.labels, { cluster: 'production' });
    // `${worker_order:=asc}` with no value given: the default.
    assert.deepEqual(config.imagePolicies.get('flux-system/worker')!.spec.policy, {
      strategy: 'numerical',
      order: 'asc',
    });
    // A built object names the file it came from.
    assert.deepEqual(podinfo.source, {
      file: join(dir, 'apps/base/podinfo/image-policy.yaml'),
      line: 1,
      via: join(dir, 'apps/production'),
    });
    assert.equal(config.imageRepositories.get('flux-system/podinfo')!.spec.image, `${REGISTRY}/apps/podinfo`);
    // The bootstrap Secret is not in Git: it came from the environment.
    assert.equal(
      config.secrets.get('flux-system/flux-system')!.data.password!.toString(),
      'hunter2-not-real',
    );
    assert.equal(config.gitRepositories.get('flux-system/flux-system')!.spec.url, GIT_URL);
  });

  test('the repository root: identical bootstrap copies are one object; a real conflict names both builds', async (t) => {
    const dir = await fleet(t);
    const { config, problems } = await loadConfig([dir], { secrets: { env: ENV_SECRET } });
    const errors = errorsOf(problems, dir).filter((e) => !e.includes('legacy'));
    assert.ok(!errors.some((e) => /GitRepository .* defined twice/.test(e)), errors.join('\n'));
    assert.equal(config.gitRepositories.size, 1);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0]!,
      /ImagePolicy flux-system\/podinfo is defined twice, differently \(here as built from .*apps\/staging\) \(also at apps\/base\/podinfo\/image-policy\.yaml:1 as built from .*apps\/production\); neither is used/,
    );
    assert.equal(config.imagePolicies.has('flux-system/podinfo'), false);
  });

  test('a patch file is not an object; a bad value set by a patch is reported at the patch', async (t) => {
    const dir = await fleet(t);
    const ok = await loadConfig([join(dir, 'clusters/staging')], { secrets: { env: ENV_SECRET } });
    assert.deepEqual(errorsOf(ok.problems, dir), []);
    assert.deepEqual(ok.config.imagePolicies.get('flux-system/podinfo')!.spec.policy, {
      strategy: 'semver',
      range: '>=1.0.0-0',
    });

    const files = {
      ...fleetFiles(),
      'apps/staging/policy-patch.yaml': STAGING_POLICY_PATCH.replace('>=1.0.0-0', 'not a range'),
    };
    const bad = await fleet(t, files);
    const { problems } = await loadConfig([join(bad, 'clusters/staging')], { secrets: { env: ENV_SECRET } });
    const errors = errorsOf(problems, bad);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0]!,
      new RegExp(
        `^apps/staging/policy-patch\\.yaml:${lineOf(STAGING_POLICY_PATCH, 'range:')}: ImagePolicy flux-system/podinfo: spec\\.policy\\.semver\\.range`,
      ),
    );
  });

  test("kustomize's errors name the directory and say what kustomize said; the rest loads", async (t) => {
    const files = {
      ...fleetFiles(),
      'apps/staging/kustomization.yaml': fleetFiles()['apps/staging/kustomization.yaml']!.replace(
        '  - ../base/podinfo\n',
        '  - ../base/podinfo\n  - missing.yaml\n',
      ),
    };
    const dir = await fleet(t, files);
    const { config, problems } = await loadConfig([join(dir, 'clusters/staging')], {
      secrets: { env: ENV_SECRET },
    });
    const errors = errorsOf(problems, dir);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(
      errors[0]!,
      /^apps\/staging\/kustomization\.yaml: kustomize could not build .*apps\/staging: .*missing\.yaml/,
    );
    assert.doesNotMatch(errors[0]!, /run\.go|command failed|Warning/);
    // What did not build is unknown; everything else is there (as when Flux's apps
    // Kustomization fails: the cluster's own objects still apply).
    assert.equal(config.imagePolicies.size, 0);
    assert.deepEqual([...config.automations.keys()], ['flux-system/staging']);
    assert.equal(config.gitRepositories.size, 1);
  });
});

test('a substitution that breaks the YAML (an unquoted range) names the object, which is skipped with what needs it', async (t) => {
  const files = fleetFiles();
  files['clusters/production/apps.yaml'] = files['clusters/production/apps.yaml']!.replace(
    `podinfo_range: "\\">=1.0.0 <2.0.0\\""`,
    'podinfo_range: ">=1.0.0 <2.0.0"',
  );
  assert.match(files['clusters/production/apps.yaml']!, /podinfo_range: ">=1\.0\.0 <2\.0\.0"$/m);
  const dir = await fleet(t, files);
  const { config, problems, skipped } = await loadConfig([join(dir, 'clusters/production')], {
    secrets: { env: ENV_SECRET },
  });
  const errors = errorsOf(problems, dir).filter((e) => !e.includes('legacy'));
  assert.ok(errors.length > 0);
  for (const e of errors) {
    assert.match(
      e,
      /^apps\/production\/kustomization\.yaml: ImagePolicy flux-system\/podinfo: not valid YAML as kustomize built it \(ImagePolicy flux-system\/podinfo\), after Flux's postBuild substitution if any: /,
    );
  }
  assert.deepEqual(
    skipped.map((s) => [s.name, s.reason, s.dependsOn]),
    [
      ['legacy', 'invalid', null],
      ['podinfo', 'invalid', null],
      ['production', 'dependency', 'ImagePolicy flux-system/podinfo'],
    ],
  );
  // The rest of the build is there.
  assert.ok(config.imagePolicies.has('flux-system/worker'));
});

describe('Secrets that are not in Git', () => {
  test('a missing Secret fails only what needs it, saying where pawl looked', async (t) => {
    const dir = await fleet(t);
    const secrets = join(dir, '..', `${dir.split('/').pop()}-secrets`);
    t.after(() => rm(secrets, { recursive: true, force: true }));
    const { config, problems, skipped } = await loadConfig([join(dir, 'clusters/production')], {
      secrets: { dir: secrets, env: {} },
    });
    const sync = fleetFiles()['clusters/production/flux-system/gotk-sync.yaml']!;
    const missing = errorsOf(problems, dir).filter((e) => e.includes('not found'));
    assert.deepEqual(missing, [
      `clusters/production/flux-system/gotk-sync.yaml:${lineOf(sync, '    name: flux-system')}: GitRepository flux-system/flux-system: Secret flux-system/flux-system not found; pawl looked in the -c files, in ${secrets}/flux-system/flux-system/ (--secrets-dir), and in environment variables PAWL_SECRET_FLUX_SYSTEM_FLUX_SYSTEM_<KEY>. Give pawl the Secret with --secrets-dir or the environment (see docs/configuration.md)`,
    ]);
    assert.deepEqual(
      skipped.map((s) => [s.name, s.reason, s.dependsOn]),
      [
        ['legacy', 'invalid', null],
        ['flux-system', 'invalid', null],
        ['production', 'dependency', 'GitRepository flux-system/flux-system'],
      ],
    );
    // Scanning needs no Git credentials: the image objects are all there.
    assert.equal(config.imagePolicies.size, 2);
    assert.equal(config.imageRepositories.size, 2);

    // Laid out as Kubernetes mounts it (keys are symlinks into ..data).
    const mount = join(secrets, 'flux-system', 'flux-system');
    await mkdir(join(mount, '..2024_01_01'), { recursive: true });
    await writeFile(join(mount, '..2024_01_01', 'username'), 'flux');
    await writeFile(join(mount, '..2024_01_01', 'password'), 'from-the-mount');
    execFileSync('ln', ['-s', '..2024_01_01', join(mount, '..data')]);
    execFileSync('ln', ['-s', '..data/username', join(mount, 'username')]);
    execFileSync('ln', ['-s', '..data/password', join(mount, 'password')]);
    const found = await loadConfig([join(dir, 'clusters/production')], {
      secrets: { dir: secrets, env: ENV_SECRET },
    });
    assert.deepEqual(
      found.skipped.map((s) => s.name),
      ['legacy'],
    );
    // --secrets-dir is tried before the environment.
    assert.equal(
      found.config.secrets.get('flux-system/flux-system')!.data.password!.toString(),
      'from-the-mount',
    );
    assert.equal(found.config.secrets.get('flux-system/flux-system')!.source.file, mount);
  });

  test('a SOPS-encrypted Secret is absent: found elsewhere it is used; a GitRepository nobody uses only warns', async (t) => {
    const files = fleetFiles();
    files['clusters/production/image-repository-private.yaml'] = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: private
  namespace: flux-system
spec:
  image: ${REGISTRY}/apps/private
  interval: 5m
  secretRef:
    name: registry-token
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: unused
  namespace: flux-system
spec:
  interval: 5m
  url: https://git.example.com/other.git
  secretRef:
    name: other-credentials
`;
    const dir = await fleet(t, files);
    const docker = JSON.stringify({ auths: { [REGISTRY]: { auth: Buffer.from('u:p').toString('base64') } } });
    const withToken = await loadConfig([join(dir, 'clusters/production')], {
      secrets: { env: { ...ENV_SECRET, PAWL_SECRET_FLUX_SYSTEM_REGISTRY_TOKEN_DOCKERCONFIGJSON: docker } },
    });
    assert.ok(withToken.config.imageRepositories.has('flux-system/private'));
    assert.equal(
      withToken.config.secrets.get('flux-system/registry-token')!.type,
      'kubernetes.io/dockerconfigjson',
    );
    const unused = withToken.problems.find((p) => p.object === 'GitRepository flux-system/unused')!;
    assert.equal(unused.severity, 'warning');
    assert.match(
      unused.message,
      /Secret flux-system\/other-credentials not found; .*No ImageUpdateAutomation uses this GitRepository/,
    );

    const without = await loadConfig([join(dir, 'clusters/production')], { secrets: { env: ENV_SECRET } });
    const err = errorsOf(without.problems, dir).find((e) => e.includes('private'))!;
    assert.match(
      err,
      /ImageRepository flux-system\/private: Secret flux-system\/registry-token is SOPS-encrypted in the -c files and pawl cannot decrypt it; pawl looked in the -c files, in no --secrets-dir \(none given\), and in environment variables PAWL_SECRET_FLUX_SYSTEM_REGISTRY_TOKEN_<KEY>/,
    );
    // Only the repository is skipped, and the policies that use it (none here): the automation runs.
    assert.deepEqual(
      without.skipped.map((s) => s.name),
      ['private', 'legacy'],
    );
    assert.ok(without.config.automations.has('flux-system/production'));
  });
});

test('substitution: Flux forms, defaults, escapes, opt-out, and lines kept', () => {
  const vars = { cluster: 'prod', empty: '' };
  assert.equal(
    substituteText(
      'a ${cluster} ${missing} ${missing:=d1} ${empty:=d2} ${empty=d3} ${empty-d4} ${missing:-d5} $cluster $${cluster}',
      vars,
      { unset: 'empty' },
    ),
    'a prod  d1 d2   d5 $cluster ${cluster}',
  );
  assert.equal(substituteText('${missing} ${cluster}', vars, { unset: 'keep' }), '${missing} prod');
  const text =
    'a: ${cluster}\n---\nmetadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\nb: ${cluster}\n---\nc: ${cluster}\n';
  const out = substituteDocuments(text, vars, { unset: 'empty' });
  assert.equal(out, text.replace('a: ${cluster}', 'a: prod').replace('c: ${cluster}', 'c: prod'));
  assert.equal(out.split('\n').length, text.split('\n').length);
});

test("kustomize's words: klog decoration and deprecation notes dropped, the message kept", () => {
  assert.equal(
    kustomizeWords(
      '# Warning: \'patchesStrategicMerge\' is deprecated.\nE1130 10:35:13.149891   10731 run.go:72] "command failed" err="accumulating resources: accumulation err=\'open \\"x.yaml\\"\': no such file"\n',
    ),
    'accumulating resources: accumulation err=\'open "x.yaml"\': no such file',
  );
  assert.equal(
    kustomizeWords('Error: must build at directory: not a valid directory\n'),
    'must build at directory: not a valid directory',
  );
});
