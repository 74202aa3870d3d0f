/**
 * Issue 23, items 1–4: objects that Flux applies from layouts seen in real fleets are read as
 * Flux applies them, and what pawl cannot read is said, not silently dropped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config/load.js';
import { formatProblem } from '../../src/util/errors.js';
import { writeTree } from '../helpers/fleet.js';
import { lineOf } from './fixtures.js';
import { markersOutsideAutomations } from '../../src/run/markers.js';

async function tree(
  t: { after: (fn: () => Promise<void>) => void },
  files: Record<string, string>,
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-first-day-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeTree(dir, files, (s) => s);
  execFileSync('git', ['init', '-q', dir]);
  return dir;
}

const said = (problems: Parameters<typeof formatProblem>[0][], dir: string): string[] =>
  problems.map((p) => formatProblem(p).replaceAll(`${dir}/`, ''));

const gitRepository = (name: string, url: string): string => `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: ${name}
  namespace: flux-system
spec:
  interval: 1m
  ref:
    branch: main
  url: ${url}
`;

const fluxKustomization = (
  name: string,
  path: string,
  source = 'flux-system',
): string => `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ${name}
  namespace: flux-system
spec:
  interval: 10m
  path: ${path}
  prune: true
  sourceRef:
    kind: GitRepository
    name: ${source}
`;

const policy = (range: string): string => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: web
  namespace: flux-system
spec:
  image: ghcr.io/org/web
  interval: 5m
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: web
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: web
  policy:
    semver:
      range: "${range}"
`;

const automation = (path: string): string => `apiVersion: image.toolkit.fluxcd.io/v1beta2
kind: ImageUpdateAutomation
metadata:
  name: images
  namespace: flux-system
spec:
  interval: 30m
  sourceRef:
    kind: GitRepository
    name: flux-system
  git:
    commit:
      author:
        name: pawl
        email: pawl@example.com
    push:
      branch: main
  update:
    path: ${path}
`;

const kustomization = (resources: string[]): string =>
  `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n${resources.map((r) => `  - ${r}`).join('\n')}\n`;

const URL = 'https://github.com/org/fleet';

test('item 1: a Flux Kustomization whose path is an unlisted subdirectory of a built -c directory is read', async (t) => {
  const dir = await tree(t, {
    // The cluster directory is built (it has a kustomization.yaml) and does not list apps/.
    'clusters/prod/kustomization.yaml': kustomization(['flux-system', 'apps.yaml']),
    'clusters/prod/flux-system/kustomization.yaml': kustomization(['gotk-sync.yaml']),
    'clusters/prod/flux-system/gotk-sync.yaml': `${gitRepository('flux-system', URL)}---\n${fluxKustomization('flux-system', './clusters/prod')}`,
    'clusters/prod/apps.yaml': fluxKustomization('apps', './clusters/prod/apps'),
    'clusters/prod/apps/web.yaml': policy('>=1.0.0'),
    'clusters/prod/apps/automation.yaml': automation('./clusters/prod/apps'),
  });
  const { config, problems } = await loadConfig([join(dir, 'clusters/prod')]);
  assert.deepEqual(
    said(problems, dir).filter((p) => !p.includes('warning')),
    [],
  );
  assert.deepEqual([...config.automations.keys()], ['flux-system/images']);
  assert.deepEqual([...config.imagePolicies.keys()], ['flux-system/web']);
});

test('item 2: a Flux Kustomization of another GitRepository is not read from this work tree, and that is said', async (t) => {
  const dir = await tree(t, {
    'clusters/production/flux-system/gotk-sync.yaml': `${gitRepository('flux-system', URL)}---\n${fluxKustomization('flux-system', './clusters/production')}`,
    'clusters/production/tenants.yaml': `${gitRepository('tenants', 'https://github.com/org/tenants')}---\n${fluxKustomization('tenants', './clusters/staging', 'tenants')}`,
    'clusters/production/web.yaml': policy('>=1.0.0'),
    'clusters/production/automation.yaml': automation('./clusters/production'),
    // Same names, other contents: read from here it would be "defined twice" and both dropped.
    'clusters/staging/web.yaml': policy('>=1.0.0-0'),
  });
  const { config, problems } = await loadConfig([join(dir, 'clusters/production')]);
  const out = said(problems, dir);
  assert.ok(!out.some((p) => p.includes('defined twice')), out.join('\n'));
  assert.deepEqual(config.imagePolicies.get('flux-system/web')?.spec.policy, {
    strategy: 'semver',
    range: '>=1.0.0',
  });
  const note = out.find((p) => p.includes('Kustomization flux-system/tenants'));
  assert.ok(note, out.join('\n'));
  assert.match(
    note,
    /^clusters\/production\/tenants\.yaml:\d+: warning: Kustomization flux-system\/tenants: spec\.path \.\/clusters\/staging is in GitRepository flux-system\/tenants \(https:\/\/github\.com\/org\/tenants\), another repository; pawl does not read it from this work tree/,
  );
});

test('item 3: a GitRepository not found, defined by a file that Flux does not apply, says which file and how to include it', async (t) => {
  const dir = await tree(t, {
    // flux bootstrap wrote flux-system/, but the cluster's kustomization does not list it.
    'clusters/prod/kustomization.yaml': kustomization(['apps']),
    'clusters/prod/flux-system/gotk-sync.yaml': `${gitRepository('flux-system', URL)}---\n${fluxKustomization('flux-system', './clusters/prod')}`,
    'clusters/prod/flux-system/kustomization.yaml': kustomization(['gotk-sync.yaml']),
    'clusters/prod/apps/kustomization.yaml': kustomization(['web.yaml', 'automation.yaml']),
    'clusters/prod/apps/web.yaml': policy('>=1.0.0'),
    'clusters/prod/apps/automation.yaml': automation('./clusters/prod/apps'),
  });
  const { problems } = await loadConfig([join(dir, 'clusters/prod')]);
  const out = said(problems, dir).filter((p) =>
    p.includes('GitRepository flux-system/flux-system not found'),
  );
  assert.equal(out.length, 1, said(problems, dir).join('\n'));
  assert.match(
    out[0]!,
    /clusters\/prod\/flux-system\/gotk-sync\.yaml defines it, but Flux does not apply that file from the -c paths: list flux-system under resources: in clusters\/prod\/kustomization\.yaml/,
  );
});

test('item 4: SOPS-encrypted Secrets that nothing names are not warned about; one that is named is an error', async (t) => {
  const sops = (name: string): string => `apiVersion: v1
kind: Secret
metadata:
  name: ${name}
  namespace: flux-system
data:
  password: ENC[AES256_GCM,data:abc,type:str]
sops:
  version: 3.8.1
`;
  const dir = await tree(t, {
    'secrets/unused-a.yaml': sops('unused-a'),
    'secrets/unused-b.yaml': sops('unused-b'),
    'secrets/registry.yaml': sops('registry'),
    'repo.yaml': policy('>=1.0.0').replace(
      '  interval: 5m',
      '  interval: 5m\n  secretRef:\n    name: registry',
    ),
  });
  const { problems } = await loadConfig([dir]);
  const out = said(problems, dir);
  assert.ok(!out.some((p) => p.includes('unused-')), out.join('\n'));
  assert.equal(out.filter((p) => p.includes('SOPS')).length, 1, out.join('\n'));
  assert.match(
    out.find((p) => p.includes('SOPS'))!,
    /^repo\.yaml:\d+: ImageRepository flux-system\/web: Secret flux-system\/registry is SOPS-encrypted/,
  );
});

// tsx from pawl's node_modules: the command runs in the tree's directory.
const TSX = import.meta.resolve('tsx');
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function pawl(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', TSX, join(ROOT, 'src/cli/main.ts'), ...args],
      { cwd, env: { ...process.env, PAWL_LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) =>
        done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

const MARKED = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: typo-in-name
          image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": "flux-system:wbe"}
        - name: typo-in-namespace
          image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": "flux-sytem:web"}
        - name: bare-name
          image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": "web"}
        - name: bad-suffix
          image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": "flux-system:web:tga"}
        - name: not-json
          image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": flux-system:web}
        - name: other-namespace
          image: ghcr.io/org/api:1.0.0 # {"$imagepolicy": "other:api"}
        - name: fine
          image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": "flux-system:web"}
`;

test('item 5: pawl validate names each marker that points nowhere, with file:line and a suggestion', async (t) => {
  const dir = await tree(t, {
    'clusters/prod/git.yaml': gitRepository('flux-system', URL),
    'clusters/prod/web.yaml': policy('>=1.0.0'),
    'clusters/prod/api.yaml': policy('>=1.0.0').replaceAll('flux-system', 'other').replaceAll('web', 'api'),
    'clusters/prod/automation.yaml': automation('./apps'),
    'apps/web.yaml': MARKED,
  });
  const { code, stdout } = await pawl(['validate', '-c', 'clusters/prod'], dir);
  assert.equal(code, 0, stdout);
  const at = (needle: string): string => `apps/web.yaml:${lineOf(MARKED, needle)}: warning: `;
  const lines = stdout.split('\n');
  const said = (needle: string, words: RegExp): void => {
    const hit = lines.find((l) => l.startsWith(at(needle)));
    assert.ok(hit, `nothing at ${at(needle)} in:\n${stdout}`);
    assert.match(hit, words);
  };
  said(
    'flux-system:wbe',
    /ImagePolicy flux-system\/wbe, which does not exist; did you mean flux-system\/web\?/,
  );
  said(
    'flux-sytem:web',
    /ImagePolicy flux-sytem\/web, which does not exist; did you mean flux-system\/web\?/,
  );
  said('"web"}', /"web" has no namespace; .*did you mean "flux-system:web"\?/);
  said('web:tga', /":tga" is not one of :tag, :name, :digest; did you mean "flux-system:web:tag"\?/);
  said('flux-system:web}', /not the JSON Flux reads/);
  said(
    'other:api',
    /ImagePolicy other\/api, but an automation applies only ImagePolicies of its own namespace/,
  );
  assert.ok(!lines.some((l) => l.startsWith(at('"flux-system:web"}'))), stdout);
  assert.match(stdout, /^valid: .*; 0 errors, 6 warnings$/m);
});

test("item 5: explain's list of markers that name the policy outside every automation's update.path", async (t) => {
  const marked = 'image: ghcr.io/org/web:1.0.0 # {"$imagepolicy": "flux-system:web"}\n';
  const dir = await tree(t, {
    'clusters/prod/git.yaml': gitRepository('flux-system', URL),
    'clusters/prod/web.yaml': policy('>=1.0.0'),
    'clusters/prod/automation.yaml': automation('./apps'),
    'apps/web.yaml': marked,
    'legacy/web.yaml': `# moved here by hand\n${marked}`,
  });
  const { config } = await loadConfig([join(dir, 'clusters/prod')]);
  assert.deepEqual(await markersOutsideAutomations(config, 'flux-system/web'), [
    { file: join(dir, 'legacy/web.yaml'), line: 2, setter: 'flux-system:web' },
  ]);
});
