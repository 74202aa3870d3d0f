/**
 * `npm run demo`: pawl's main job end to end on loopback. Starts Debian's docker-registry on a
 * free port and a smart-HTTP git server (git http-backend, Basic auth), pushes images, writes
 * Flux objects, and runs the real `pawl` CLI against them:
 *   1. `pawl run` pushes one commit that moves the marked image lines, and shows its diff;
 *   2. a person commits a newer tag by hand; `pawl run` keeps it (downgrade blocked);
 *   3. `pawl explain` says why;
 *   4. `pawl serve` runs as a daemon, the registry notifies it of a push (a `distribution`
 *      Receiver), and the new tag is on the Git remote moments later.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startRegistry } from '../test/helpers/registry.js';
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

// The registry notifies the daemon of step 4 (on a port chosen now) with a bearer token.
const hookPort = await freePort();
const HOOK_TOKEN = 'demo-webhook-token';
const hookPath = `/hook/${createHash('sha256').update(`${HOOK_TOKEN}registryflux-system`).digest('hex')}`;
const registry = await startRegistry({
  auth: 'none',
  notifications: [
    {
      name: 'pawl',
      url: `http://127.0.0.1:${hookPort}${hookPath}`,
      headers: { Authorization: [`Bearer ${HOOK_TOKEN}`] },
      ignore: { actions: ['pull'] },
    },
  ],
});
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
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: { name: registry, namespace: flux-system }
spec:
  type: distribution
  resources:
    - { apiVersion: image.toolkit.fluxcd.io/v1, kind: ImageRepository, name: podinfo }
  secretRef: { name: webhook-token }
---
apiVersion: v1
kind: Secret
metadata: { name: webhook-token, namespace: flux-system }
stringData: { token: ${HOOK_TOKEN} }
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

  step('pawl serve: the registry notifies the daemon of a push, and the tag reaches Git');
  const admin = await freePort();
  process.stdout.write(
    `$ pawl serve --listen 127.0.0.1:${hookPort} --admin-listen 127.0.0.1:${admin}\n` +
      `  (the registry's notifications.endpoints: http://127.0.0.1:${hookPort}/hook/…, Authorization: Bearer …)\n`,
  );
  const daemon = spawn(
    process.execPath,
    [
      join(pkgRoot, 'bin', 'pawl.js'),
      'serve',
      '-c',
      join(work, 'flux.yaml'),
      '--state-dir',
      join(work, 'state'),
      '--listen',
      `127.0.0.1:${hookPort}`,
      '--admin-listen',
      `127.0.0.1:${admin}`,
      '--log-level',
      // PAWL_DEMO_LOG_LEVEL=debug: what a failed demo prints then says more.
      process.env.PAWL_DEMO_LOG_LEVEL ?? 'info',
    ],
    { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const seen: Record<string, unknown>[] = [];
  let buffered = '';
  daemon.stderr.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        seen.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        process.stdout.write(`${line}\n`);
      }
    }
  });
  const until = async (what: string, pred: () => boolean): Promise<void> => {
    const deadline = Date.now() + 60_000;
    while (!pred()) {
      if (daemon.exitCode !== null) throw new Error(`pawl serve exited (${daemon.exitCode}) before ${what}`);
      if (Date.now() > deadline) throw new Error(`pawl serve: no ${what} within 60 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  try {
    await until('first pass', () => seen.some((r) => r.msg === 'pass'));
    // The registry queued its notifications of the pushes above while nothing listened, and
    // delivers them now (they change nothing); wait until that backlog has drained.
    let quietSince = Date.now();
    let count = 0;
    await until('the backlog of notifications', () => {
      const n = seen.filter((r) => r.msg === 'webhook accepted').length;
      if (n !== count) [count, quietSince] = [n, Date.now()];
      return Date.now() - quietSince > 1500 && seen.filter((r) => r.msg === 'pass').length >= 1;
    });
    process.stdout.write(
      `the daemon is up; its passes found everything up to date (${count} queued notifications of earlier pushes changed nothing)\n`,
    );
    const mark = seen.length;
    const before = (await git.log('fleet', 'main'))[0]!.sha;
    await pushTags(registry.url, 'demo/podinfo', ['6.3.0'], {
      createdFor: () => new Date(Date.UTC(2024, 11, 1)),
    });
    const pushed = performance.now();
    process.stdout.write('pushed demo/podinfo:6.3.0 to the registry\n');
    let after = before;
    await until('commit on the remote', () => {
      const r = spawnSync('git', ['--git-dir', git.repoPath('fleet'), 'rev-parse', 'main'], {
        encoding: 'utf8',
      });
      after = r.stdout.trim();
      return after !== before;
    });
    const ms = Math.round(performance.now() - pushed);
    await until('the pass log', () =>
      seen.slice(mark).some((r) => r.msg === 'pass' && r.result === 'pushed'),
    );
    const notified = seen.slice(mark).filter((r) => r.msg === 'webhook accepted').length;
    const pass = seen.slice(mark).find((r) => r.msg === 'pass' && r.result === 'pushed')!;
    process.stdout.write(
      `  daemon: notifications accepted: ${notified}; ` +
        `pass of ${String(pass.automation)}: ${String(pass.result)} ${String(pass.commit).slice(0, 12)} (${String(pass.ms)} ms)\n`,
    );
    process.stdout.write(
      `commit ${after.slice(0, 12)} is on the remote ${ms} ms after the registry answered the push\n`,
    );
    const show = spawnSync(
      'git',
      ['--git-dir', git.repoPath('fleet'), 'show', '--stat', '--format=%s', 'main'],
      {
        encoding: 'utf8',
      },
    );
    process.stdout.write(show.stdout);
  } catch (err) {
    // Say what the daemon did, so that a failed demo can be understood from its output alone.
    const last = seen.slice(-80).map((r) => JSON.stringify(r).slice(0, 400));
    process.stderr.write(`the daemon's last records:\n${last.join('\n')}\n`);
    process.stderr.write(`the registry's last words:\n${registry.output().slice(-6000)}\n`);
    throw err;
  } finally {
    daemon.kill('SIGTERM');
    await new Promise((r) => daemon.once('exit', r));
  }
  step('done: nothing moved backwards');
} finally {
  await git.close();
  await registry.stop();
  await rm(work, { recursive: true, force: true });
}
