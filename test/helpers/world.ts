/**
 * An end-to-end world on loopback: a real registry (optionally behind the fault-injecting
 * proxy), a smart-HTTP git server with Basic auth holding Flux-style manifests, and a config
 * directory of Flux objects pointing at both. Tests drive it through the real CLI.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRegistry, type RegistryOptions, type TestRegistry } from './registry.js';
import { startRegistryProxy, type ProxyOptions, type RegistryProxy } from './registry-proxy.js';
import { startGitServer, type GitServer } from './git-server.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'src', 'cli', 'main.ts');
/** tsx by its full URL, so that pawl can be started in any directory (`cwd`). */
const TSX = import.meta.resolve('tsx');

export const GIT_USER = 'flux';
export const GIT_PASSWORD = 'git-secret-pass-42';

export interface World {
  registry: TestRegistry;
  proxy: RegistryProxy | null;
  /** `host:port` images are named with (the proxy's when there is one). */
  registryHost: string;
  git: GitServer;
  repoName: string;
  configDir: string;
  stateDir: string;
  /** Runs `pawl ARGS -c configDir --state-dir stateDir`. */
  pawl(args: string[], opts?: { env?: Record<string, string> }): Promise<CliResult>;
  /** `pawl … --json`, parsed. */
  pawlJson<T = unknown>(args: string[]): Promise<{ json: T; code: number; stderr: string }>;
  writeConfig(file: string, yaml: string): Promise<void>;
  close(): Promise<void>;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; input?: string } = {},
): Promise<CliResult> {
  return new Promise((resolvePromise) => {
    const child = execFile(
      process.execPath,
      ['--import', TSX, CLI, ...args],
      {
        cwd: opts.cwd ?? ROOT,
        env: { ...process.env, PAWL_LOG_LEVEL: 'warn', ...opts.env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolvePromise({ code, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

export interface WorldOptions {
  /** Put the paginating/fault-injecting proxy in front of the registry (with these options). */
  proxy?: boolean | ProxyOptions;
  /** The git repository's files (path → content). `{{REGISTRY}}` is replaced by the registry host. */
  files: Record<string, string>;
  /** Config YAML files (name → content); `{{REGISTRY}}` and `{{GIT_URL}}` are replaced. */
  config: Record<string, string>;
  /** Registry options (e.g. `notifications`); auth stays 'none'. */
  registry?: Omit<RegistryOptions, 'auth'>;
}

export async function startWorld(opts: WorldOptions): Promise<World> {
  const registry = await startRegistry({ ...opts.registry, auth: 'none' });
  const proxy = opts.proxy
    ? await startRegistryProxy(registry.url, opts.proxy === true ? {} : opts.proxy)
    : null;
  const registryHost = proxy ? proxy.host : registry.host;
  const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
  const repoName = 'fleet';
  const subst = (s: string) =>
    s.replaceAll('{{REGISTRY}}', registryHost).replaceAll('{{GIT_URL}}', git.cloneUrl(repoName));
  await git.createBareRepo(
    repoName,
    Object.fromEntries(Object.entries(opts.files).map(([k, v]) => [k, subst(v)])),
  );
  const base = await mkdtemp(join(tmpdir(), 'pawl-world-'));
  const configDir = join(base, 'config');
  const stateDir = join(base, 'state');
  await mkdir(configDir);
  const world: World = {
    registry,
    proxy,
    registryHost,
    git,
    repoName,
    configDir,
    stateDir,
    pawl: (args, o) => runCli([...args, '-c', configDir, '--state-dir', stateDir], o),
    async pawlJson<T>(args: string[]) {
      const r = await world.pawl([...args, '--json']);
      let json: T;
      try {
        json = JSON.parse(r.stdout) as T;
      } catch {
        throw new Error(`pawl ${args.join(' ')} printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
      }
      return { json, code: r.code, stderr: r.stderr };
    },
    async writeConfig(file, yaml) {
      await writeFile(join(configDir, file), subst(yaml));
    },
    async close() {
      await git.close();
      await proxy?.stop();
      await registry.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
  for (const [file, yaml] of Object.entries(opts.config)) await world.writeConfig(file, yaml);
  return world;
}

/** The Flux objects for one git repository over HTTPS with Basic auth, and one automation. */
export function gitObjects(
  opts: { path?: string; branch?: string; messageTemplate?: string; pushBranch?: string } = {},
): string {
  const template = opts.messageTemplate
    ? `      messageTemplate: |\n${opts.messageTemplate
        .split('\n')
        .map((l) => `        ${l}`)
        .join('\n')}\n`
    : '';
  return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
  namespace: flux-system
spec:
  interval: 1m
  url: {{GIT_URL}}
  ref:
    branch: ${opts.branch ?? 'main'}
  secretRef:
    name: git-credentials
---
apiVersion: v1
kind: Secret
metadata:
  name: git-credentials
  namespace: flux-system
type: kubernetes.io/basic-auth
stringData:
  username: ${GIT_USER}
  password: ${GIT_PASSWORD}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata:
  name: fleet
  namespace: flux-system
spec:
  interval: 5m
  sourceRef:
    kind: GitRepository
    name: fleet
  git:
    checkout:
      ref:
        branch: ${opts.branch ?? 'main'}
    commit:
      author:
        name: pawl-bot
        email: pawl@example.com
${template}${opts.pushBranch ? `    push:\n      branch: ${opts.pushBranch}\n` : ''}  update:
    path: ${opts.path ?? './'}
    strategy: Setters
`;
}

/**
 * An ImageRepository and an ImagePolicy in flux-system. `extra.spec`: more of the policy's spec
 * (`verify:`, `digestReflectionPolicy:`…), written as given at the spec's indentation.
 */
export function imageObjects(
  name: string,
  image: string,
  policy: string,
  extra: { filterTags?: string; guard?: string; interval?: string; spec?: string } = {},
): string {
  return `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: ${name}
  namespace: flux-system
spec:
  image: ${image}
  interval: ${extra.interval ?? '1m'}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: ${name}
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: ${name}
  policy:
${policy
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
${
  extra.filterTags
    ? `  filterTags:\n${extra.filterTags
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n')}\n`
    : ''
}${
    extra.guard
      ? `  guard:\n${extra.guard
          .split('\n')
          .map((l) => `    ${l}`)
          .join('\n')}\n`
      : ''
  }${extra.spec ? indentSpec(extra.spec) : ''}`;
}

const indentSpec = (lines: string): string =>
  lines
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => `  ${l}\n`)
    .join('');

/** A values.yaml with one container line marked for `flux-system:<policy>` at `tag`. */
export const markedValues = (tag: string, image = '{{REGISTRY}}/org/app', policy = 'app'): string =>
  `containers:\n  - image: ${image}:${tag} # {"$imagepolicy": "flux-system:${policy}"}\n`;
