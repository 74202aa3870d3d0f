/**
 * `npm run demo`: pawl's main job end to end on loopback. Starts Debian's docker-registry on a
 * free port and a smart-HTTP git server (git http-backend, Basic auth), pushes images, writes
 * Flux objects, and runs the real `pawl` CLI against them:
 *   1. `pawl run` pushes one commit that moves the marked image lines, and shows its diff;
 *   2. a person commits a newer tag by hand; `pawl run` keeps it (downgrade blocked);
 *   3. `pawl explain` says why.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRegistry } from '../test/helpers/registry.js';
import { pushTags } from '../test/helpers/push.js';
import { startGitServer } from '../test/helpers/git-server.js';

// This file runs as scripts/demo.ts in a checkout and bundled as dist/demo/demo.js in the npm
// package (the `pawl-demo` command): either way the package root is the nearest folder above
// with bin/pawl.js, which runs the compiled CLI or, in a checkout, the sources.
let pkgRoot = dirname(fileURLToPath(import.meta.url));
while (!existsSync(join(pkgRoot, 'bin', 'pawl.js'))) {
  const up = dirname(pkgRoot);
  if (up === pkgRoot) throw new Error('pawl-demo: cannot find bin/pawl.js above this script');
  pkgRoot = up;
}

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (s: string) => process.stdout.write(`\n${bold(`== ${s}`)}\n`);

const registry = await startRegistry({ auth: 'none' });
const git = await startGitServer({ users: { flux: 'demo-password' } });
const work = await mkdtemp(join(tmpdir(), 'pawl-demo-'));
try {
  const R = registry.host;
  step(`registry on ${registry.url}, git server on ${git.url}`);
  await pushTags(registry.url, 'demo/podinfo', ['6.0.0', '6.1.0', '6.2.0', '7.0.0-rc.1'], {
    createdFor: (_t, i) => new Date(Date.UTC(2024, i, 1)),
  });
  await pushTags(
    registry.url,
    'demo/worker',
    ['main-a1b2c3-1700000000', 'main-d4e5f6-1710000000', 'main-0a0b0c-1720000000'],
    {
      createdFor: (_t, i) => new Date(Date.UTC(2024, i, 1)),
    },
  );
  process.stdout.write(
    `pushed demo/podinfo: 6.0.0 6.1.0 6.2.0 7.0.0-rc.1\npushed demo/worker: main-a1b2c3-1700000000 main-d4e5f6-1710000000 main-0a0b0c-1720000000\n`,
  );

  const deploy = (podinfo: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ${R}/demo/podinfo:${podinfo} # {"$imagepolicy": "flux-system:podinfo"}

        # the worker sidecar follows main builds by timestamp
        - name: worker
          image: ${R}/demo/worker:main-a1b2c3-1700000000 # {"$imagepolicy": "flux-system:worker"}
`;
  await git.createBareRepo('fleet', {
    'apps/podinfo/deployment.yaml': deploy('6.0.0'),
    'apps/podinfo/kustomization.yaml': `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - deployment.yaml
images:
  - name: podinfo
    newName: ${R}/demo/podinfo # {"$imagepolicy": "flux-system:podinfo:name"}
    newTag: 6.0.0 # {"$imagepolicy": "flux-system:podinfo:tag"}
`,
  });

  const config = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: fleet, namespace: flux-system }
spec:
  interval: 1m
  url: ${git.cloneUrl('fleet')}
  ref: { branch: main }
  secretRef: { name: git-auth }
---
apiVersion: v1
kind: Secret
metadata: { name: git-auth, namespace: flux-system }
type: kubernetes.io/basic-auth
stringData: { username: flux, password: demo-password }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: podinfo, namespace: flux-system }
spec: { image: ${R}/demo/podinfo, interval: 1h }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: podinfo, namespace: flux-system }
spec:
  imageRepositoryRef: { name: podinfo }
  policy:
    semver: { range: '>=6.0.0' }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: worker, namespace: flux-system }
spec: { image: ${R}/demo/worker, interval: 1h }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: worker, namespace: flux-system }
spec:
  imageRepositoryRef: { name: worker }
  filterTags:
    pattern: '^main-[a-f0-9]+-(?P<ts>[0-9]+)$'
    extract: '$ts'
  policy:
    numerical: { order: asc }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: { name: fleet, namespace: flux-system }
spec:
  interval: 5m
  sourceRef: { kind: GitRepository, name: fleet }
  git:
    checkout: { ref: { branch: main } }
    commit:
      author: { name: pawl-bot, email: pawl@example.com }
      messageTemplate: |
        Automated image update

        {{ range .Changed.Changes -}}
        - {{ .OldValue }} -> {{ .NewValue }}
        {{ end -}}
    push: { branch: main }
  update: { path: ./apps, strategy: Setters }
`;
  await writeFile(join(work, 'flux.yaml'), config);
  // Asynchronous on purpose: the git server runs in this process and must
  // keep answering while pawl runs.
  const pawl = async (...args: string[]): Promise<void> => {
    process.stdout.write(`\n$ pawl ${args.join(' ')}\n`);
    const child = spawn(
      process.execPath,
      [
        join(pkgRoot, 'bin', 'pawl.js'),
        ...args,
        '-c',
        join(work, 'flux.yaml'),
        '--state-dir',
        join(work, 'state'),
      ],
      {
        stdio: 'inherit',
        cwd: work,
      },
    );
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    if (code !== 0 && code !== 1) throw new Error(`pawl ${args[0]} exited ${code}`);
  };

  step('validate the Flux objects');
  await pawl('validate');
  step('one pass: scan, select, guard, write, commit, push');
  await pawl('run');
  const [head] = await git.log('fleet', 'main');
  step(`the commit pawl pushed (${head!.sha.slice(0, 12)})`);
  const show = spawnSync(
    'git',
    ['--git-dir', git.repoPath('fleet'), 'show', '--stat', '--patch', '--format=%an <%ae>%n%n%B', 'main'],
    { encoding: 'utf8' },
  );
  process.stdout.write(show.stdout);

  step('a person deploys a newer build by hand; the policy still selects the older one');
  await pushTags(registry.url, 'demo/worker', ['main-ffffff-1730000000'], {
    createdFor: () => new Date(Date.UTC(2024, 9, 1)),
  });
  const current = await git.show('fleet', 'main', 'apps/podinfo/deployment.yaml');
  await git.commitFiles(
    'fleet',
    'main',
    {
      'apps/podinfo/deployment.yaml': current.replace(
        /worker:main-[a-f0-9]+-\d+/,
        'worker:main-ffffff-1730000000',
      ),
    },
    {
      message: 'Deploy my worker hotfix',
      author: { name: 'Dana Dev', email: 'dana@example.com' },
    },
  );
  process.stdout.write(
    'Dana committed worker:main-ffffff-1730000000; pawl last scanned before it existed.\n',
  );
  await pawl('run');
  step('why?');
  await pawl('explain', 'worker');
  step('done: nothing moved backwards');
} finally {
  await git.close();
  await registry.stop();
  await rm(work, { recursive: true, force: true });
}
