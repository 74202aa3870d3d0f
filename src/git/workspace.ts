/**
 * A working copy per GitRepository in the state directory: cloned once, fetched afterwards,
 * and checked out at the automation's ref with nothing left over from earlier runs.
 *
 * Crash safety: a clone is made in a temporary directory and renamed into place only when
 * complete, so a half-clone is never mistaken for a workspace. An existing workspace that
 * fails its health check (not a repository, another remote URL, a fetch that breaks on
 * corrupt objects) is removed and cloned again. Network and authentication failures leave
 * the workspace as it was, so the next run can use it.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, stat, mkdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { GitRef, GitRepository, Secret } from '../config/index.js';
import { type Logger, RuntimeError } from '../util/index.js';
import {
  compareVersions,
  newVersion,
  parseSemverRange,
  type SemverRange,
  type SemverVersion,
} from '../go/index.js';
import { git, GitError, type GitOptions, type GitResult } from './exec.js';
import {
  credentialsInUrl,
  prepareAuth,
  redactUrl,
  tempRoot,
  transportOf,
  withoutUrlCredentials,
} from './auth.js';

/** The ref actually checked out, after defaults and semver resolution. */
export type ResolvedRef =
  | { kind: 'branch'; branch: string }
  | { kind: 'tag'; tag: string }
  | { kind: 'semver'; range: string; tag: string }
  | { kind: 'commit'; commit: string }
  | { kind: 'name'; name: string };

export interface FileStatus {
  /** Path relative to the repository root, `/`-separated. */
  path: string;
  /** Porcelain v1 two-letter code, e.g. ` M`, `??`. */
  code: string;
}

export interface Workspace {
  /** Absolute path of the working tree. */
  readonly dir: string;
  readonly repo: GitRepository;
  /** The remote URL git uses (local paths made absolute). */
  readonly url: string;
  readonly ref: ResolvedRef;
  /** Checked-out branch; null when a tag, commit or other ref is checked out (detached). */
  readonly branch: string | null;
  /** Sha of HEAD now (moves with commits and refresh()). */
  readonly head: string;
  /** Sha the checkout started from (the fetched remote head), until the next refresh(). */
  readonly base: string;
  /** Run git in the working tree without credentials. */
  git(args: string[], opts?: Partial<GitOptions>): Promise<GitResult>;
  /** Run git against the remote, with the repository's credentials. */
  remoteGit(args: string[], opts?: Partial<GitOptions>): Promise<GitResult>;
  /** Fetch and reset to the new remote head of the same ref, dropping local commits and edits. */
  refresh(): Promise<void>;
  /** Working-tree changes against HEAD, untracked files included. */
  status(): Promise<FileStatus[]>;
  changedFiles(): Promise<string[]>;
  /** Unified diff of tracked files against HEAD (optionally limited to `paths`). */
  diff(paths?: string[]): Promise<string>;
  /** Sha of `refs/remotes/origin/<branch>` as of the last fetch, or null. */
  remoteBranchHead(branch: string): Promise<string | null>;
  /** Re-read HEAD after commits made through git(). */
  updateHead(): Promise<string>;
}

export interface OpenWorkspaceOptions {
  stateDir: string;
  repo: GitRepository;
  /** The GitRepository's `secretRef` Secret, when it has one. */
  secret?: Secret;
  /** The automation's checkout ref; else the repository's `spec.ref`; else the remote's default branch. */
  ref?: GitRef;
  log: Logger;
  signal?: AbortSignal;
}

const FETCH_REFSPECS = ['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*'];
const CHECKOUT_REF = 'refs/pawl/checkout';

/** Local settings pawl wants regardless of what the user's git would do. */
const LOCAL_CONFIG: [string, string][] = [
  ['core.autocrlf', 'false'],
  ['core.eol', 'lf'],
  ['core.safecrlf', 'false'],
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['core.symlinks', 'true'],
  ['commit.gpgsign', 'false'],
  ['tag.gpgsign', 'false'],
  ['advice.detachedHead', 'false'],
  ['gc.autoDetach', 'false'],
  ['fetch.recurseSubmodules', 'false'],
  ['push.followTags', 'false'],
  ['push.gpgSign', 'false'],
  ['pull.rebase', 'false'],
  // The user's global ignore and attributes files must not change what pawl stages.
  ['core.excludesFile', '/dev/null'],
  ['core.attributesFile', '/dev/null'],
];

function workspaceDir(stateDir: string, repo: GitRepository): string {
  const { namespace, name } = repo.metadata;
  for (const part of [namespace, name]) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(part) || part.includes('..'))
      throw new RuntimeError(
        `GitRepository ${namespace}/${name}: "${part}" cannot be used as a directory name`,
      );
  }
  return join(resolve(stateDir), 'git', namespace, name);
}

/**
 * The URL git is given, and so what `.git/config` keeps: local paths absolute, credentials written
 * into an HTTP(S) URL taken out (they go to git through GIT_ASKPASS, as a Secret's do), everything
 * else as written.
 */
export function remoteUrl(url: string): string {
  return transportOf(url) === 'local' && !isAbsolute(url) ? resolve(url) : withoutUrlCredentials(url);
}

/** Which ref to check out, with Flux's precedence: commit, name, semver, tag, branch. */
export function chooseRef(...candidates: (GitRef | undefined)[]): GitRef | undefined {
  for (const r of candidates) {
    if (r && (r.commit || r.name || r.semver || r.tag || r.branch)) return r;
  }
  return undefined;
}

/**
 * Highest tag satisfying `range`, as source-controller's semver checkout does with
 * Masterminds/semver (`NewVersion` per tag: leading `v`, missing minor/patch are 0); null when none.
 */
export function selectSemverTag(range: string, tags: readonly string[]): string | null {
  let r: SemverRange;
  try {
    r = parseSemverRange(range);
  } catch (err) {
    throw new RuntimeError(
      `"${range}" is not a valid semver range: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  let best: SemverVersion | null = null;
  for (const tag of tags) {
    const v = newVersion(tag);
    if (!v || !r.check(v)) continue;
    if (!best || compareVersions(v, best) > 0) best = v;
  }
  return best?.original ?? null;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Remove credential temp dirs and half-clones left by pawl processes that no longer run. */
async function sweepLeftovers(stateDir: string, wsDir: string): Promise<void> {
  const stale = async (dir: string, pattern: RegExp): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const n of names) {
      const m = pattern.exec(n);
      if (m && !pidAlive(Number(m[1]))) await rm(join(dir, n), { recursive: true, force: true });
    }
  };
  await stale(tempRoot(stateDir), /^(\d+)-/);
  const base = wsDir.slice(dirname(wsDir).length + 1);
  await stale(
    dirname(wsDir),
    new RegExp(`^\\.${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.clone-(\\d+)-`),
  );
}

/** Lock files a killed git leaves behind; pawl is the only writer of its workspaces. */
async function removeStaleLocks(gitDir: string): Promise<void> {
  for (const f of [
    'index.lock',
    'HEAD.lock',
    'config.lock',
    'packed-refs.lock',
    'shallow.lock',
    'ORIG_HEAD.lock',
    'FETCH_HEAD.lock',
  ]) {
    await unlink(join(gitDir, f)).catch(() => undefined);
  }
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.name.endsWith('.lock')) await unlink(p).catch(() => undefined);
    }
  };
  await walk(join(gitDir, 'refs'));
  for (const d of ['rebase-merge', 'rebase-apply'])
    await rm(join(gitDir, d), { recursive: true, force: true });
  for (const f of ['MERGE_HEAD', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'BISECT_LOG'])
    await unlink(join(gitDir, f)).catch(() => undefined);
}

class GitWorkspace implements Workspace {
  ref!: ResolvedRef;
  branch: string | null = null;
  head = '';
  base = '';
  readonly url: string;

  constructor(
    readonly dir: string,
    readonly repo: GitRepository,
    private readonly opts: OpenWorkspaceOptions,
    private readonly wanted: GitRef | undefined,
  ) {
    this.url = remoteUrl(repo.spec.url);
  }

  private get name(): string {
    return `GitRepository ${this.repo.metadata.namespace}/${this.repo.metadata.name}`;
  }

  git(args: string[], o: Partial<GitOptions> = {}): Promise<GitResult> {
    return git(args, { cwd: this.dir, ...(this.opts.signal ? { signal: this.opts.signal } : {}), ...o });
  }

  async remoteGit(args: string[], o: Partial<GitOptions> = {}): Promise<GitResult> {
    return runRemote(this.opts, this.url, args, { cwd: this.dir, ...o });
  }

  async fetch(): Promise<void> {
    await this.remoteGit([
      'fetch',
      '--quiet',
      '--prune',
      '--force',
      '--no-recurse-submodules',
      'origin',
      ...FETCH_REFSPECS,
    ]);
  }

  /** Resolve `wanted` against the fetched refs and check it out cleanly. */
  async checkout(): Promise<void> {
    const want = this.wanted;
    let target: string;
    if (want?.commit) {
      const sha = want.commit;
      if (!(await this.hasCommit(sha))) {
        // Not on any branch or tag: ask for it directly (protocol v2 serves reachable commits).
        await this.remoteGit(['fetch', '--quiet', '--no-recurse-submodules', 'origin', sha]).catch(
          (err: unknown) => {
            throw this.refError(`commit ${sha}`, err);
          },
        );
        if (!(await this.hasCommit(sha))) throw this.refError(`commit ${sha}`);
      }
      target = sha;
      this.ref = { kind: 'commit', commit: sha };
    } else if (want?.name) {
      const name = want.name;
      if (name.startsWith('refs/heads/')) return this.checkoutBranch(name.slice('refs/heads/'.length));
      if (name.startsWith('refs/tags/')) {
        target = await this.resolveOrThrow(`${name}^{commit}`, `tag ${name.slice('refs/tags/'.length)}`);
      } else {
        await this.remoteGit([
          'fetch',
          '--quiet',
          '--force',
          '--no-recurse-submodules',
          'origin',
          `+${name}:${CHECKOUT_REF}`,
        ]).catch((err: unknown) => {
          throw this.refError(`ref ${name}`, err);
        });
        target = await this.resolveOrThrow(`${CHECKOUT_REF}^{commit}`, `ref ${name}`);
      }
      this.ref = { kind: 'name', name };
    } else if (want?.semver) {
      const tags = (await this.git(['tag', '--list'])).stdout.split('\n').filter(Boolean);
      const tag = selectSemverTag(want.semver, tags);
      if (!tag)
        throw new GitError(
          `${this.name}: no tag matches semver range "${want.semver}"`,
          'git tag --list',
          null,
          '',
          'not-found',
        );
      target = await this.resolveOrThrow(`refs/tags/${tag}^{commit}`, `tag ${tag}`);
      this.ref = { kind: 'semver', range: want.semver, tag };
    } else if (want?.tag) {
      target = await this.resolveOrThrow(`refs/tags/${want.tag}^{commit}`, `tag ${want.tag}`);
      this.ref = { kind: 'tag', tag: want.tag };
    } else {
      return this.checkoutBranch(want?.branch ?? (await this.defaultBranch()));
    }
    await this.git(['checkout', '--quiet', '--force', '--detach', target]);
    await this.git(['clean', '-ffdxq']);
    this.branch = null;
    this.base = target;
    this.head = target;
  }

  private async checkoutBranch(branch: string): Promise<void> {
    const remote = `refs/remotes/origin/${branch}`;
    const sha = await this.resolveOrThrow(`${remote}^{commit}`, `branch ${branch}`);
    // --force -B resets the branch, the index and the tracked files to sha in one step.
    await this.git(['checkout', '--quiet', '--force', '--no-track', '-B', branch, sha]);
    await this.git(['clean', '-ffdxq']);
    this.ref = { kind: 'branch', branch };
    this.branch = branch;
    this.base = sha;
    this.head = sha;
  }

  private async defaultBranch(): Promise<string> {
    const known = async (): Promise<string | null> => {
      try {
        const ref = (await this.git(['symbolic-ref', '--quiet', 'refs/remotes/origin/HEAD'])).stdout.trim();
        const branch = ref.slice('refs/remotes/origin/'.length);
        return (await this.remoteBranchHead(branch)) ? branch : null;
      } catch {
        return null;
      }
    };
    // Ask the server only when the remembered default branch is gone (e.g. master renamed to main).
    const remembered = await known();
    if (remembered) return remembered;
    await this.remoteGit(['remote', 'set-head', 'origin', '--auto']).catch((err: unknown) => {
      if (isTransient(err)) throw err;
    });
    const current = await known();
    if (current) return current;
    throw new GitError(
      `${this.name}: the remote has no default branch (is it empty?); set spec.ref.branch`,
      'git symbolic-ref refs/remotes/origin/HEAD',
      null,
      '',
      'not-found',
    );
  }

  private async hasCommit(sha: string): Promise<boolean> {
    try {
      await this.git(['cat-file', '-e', `${sha}^{commit}`]);
      return true;
    } catch {
      return false;
    }
  }

  private async resolveOrThrow(rev: string, what: string): Promise<string> {
    try {
      return (await this.git(['rev-parse', '--verify', '--quiet', rev])).stdout.trim();
    } catch {
      throw this.refError(what);
    }
  }

  private refError(what: string, cause?: unknown): GitError {
    if (cause instanceof GitError && cause.failure !== 'not-found' && cause.failure !== 'other') return cause;
    return new GitError(
      `${this.name}: ${what} not found in ${redactUrl(this.url)}`,
      'git rev-parse',
      null,
      '',
      'not-found',
    );
  }

  async refresh(): Promise<void> {
    await this.fetch();
    await this.checkout();
  }

  async status(): Promise<FileStatus[]> {
    const out = (await this.git(['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames']))
      .stdout;
    return out
      .split('\0')
      .filter((e) => e.length > 3)
      .map((e) => ({ code: e.slice(0, 2), path: e.slice(3) }));
  }

  async changedFiles(): Promise<string[]> {
    return (await this.status()).map((s) => s.path);
  }

  async diff(paths: string[] = []): Promise<string> {
    const args = ['diff', '--no-color', '--no-ext-diff', '--no-renames', 'HEAD', '--'];
    return (await this.git([...args, ...paths])).stdout;
  }

  async remoteBranchHead(branch: string): Promise<string | null> {
    try {
      return (
        (
          await this.git(['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${branch}^{commit}`])
        ).stdout.trim() || null
      );
    } catch {
      return null;
    }
  }

  async updateHead(): Promise<string> {
    this.head = (await this.git(['rev-parse', 'HEAD'])).stdout.trim();
    return this.head;
  }
}

async function runRemote(
  opts: OpenWorkspaceOptions,
  url: string,
  args: string[],
  o: GitOptions,
): Promise<GitResult> {
  const auth = await prepareAuth({
    stateDir: opts.stateDir,
    url,
    ...(opts.secret ? { secret: opts.secret } : {}),
    urlCredentials: credentialsInUrl(opts.repo.spec.url),
  });
  try {
    return await git(args, {
      timeoutMs: opts.repo.spec.timeout > 0 ? opts.repo.spec.timeout : 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...o,
      env: { ...auth.env, ...(o.env ?? {}) },
      secrets: [...auth.secrets, ...(o.secrets ?? [])],
    });
  } finally {
    await auth.dispose();
  }
}

/** Is `dir` a complete pawl workspace for `url`? Leftover locks are removed on the way. */
async function healthy(dir: string, url: string): Promise<boolean> {
  const gitDir = join(dir, '.git');
  if (!(await exists(join(gitDir, 'HEAD')))) return false;
  try {
    const top = (await git(['rev-parse', '--absolute-git-dir'], { cwd: dir })).stdout.trim();
    if (resolve(top) !== resolve(gitDir)) return false;
    await removeStaleLocks(gitDir);
    const origin = (await git(['config', '--get', 'remote.origin.url'], { cwd: dir })).stdout.trim();
    return origin === url;
  } catch {
    return false;
  }
}

async function clone(opts: OpenWorkspaceOptions, dir: string, url: string): Promise<void> {
  const parent = dirname(dir);
  await mkdir(parent, { recursive: true, mode: 0o700 });
  const base = dir.slice(parent.length + 1);
  const tmp = join(parent, `.${base}.clone-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const config = LOCAL_CONFIG.flatMap(([k, v]) => ['--config', `${k}=${v}`]);
    await runRemote(
      opts,
      url,
      [
        'clone',
        '--quiet',
        '--no-checkout',
        '--origin',
        'origin',
        '--no-recurse-submodules',
        ...config,
        '--',
        url,
        tmp,
      ],
      { cwd: parent },
    );
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

function isTransient(err: unknown): boolean {
  return (
    err instanceof GitError &&
    (err.failure === 'auth' ||
      err.failure === 'unreachable' ||
      err.failure === 'timeout' ||
      err.failure === 'not-found')
  );
}

export async function openWorkspace(opts: OpenWorkspaceOptions): Promise<Workspace> {
  const { stateDir, repo, log } = opts;
  const dir = workspaceDir(stateDir, repo);
  const url = remoteUrl(repo.spec.url);
  const wanted = chooseRef(opts.ref, repo.spec.ref);
  const logCtx = { gitRepository: `${repo.metadata.namespace}/${repo.metadata.name}`, url: redactUrl(url) };
  await sweepLeftovers(stateDir, dir);
  if (
    opts.secret &&
    transportOf(url) === 'http' &&
    !/^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])[:/]/i.test(url)
  ) {
    log.warn(logCtx, 'credentials are sent over plain http; use https');
  }

  let cloned = false;
  if (await healthy(dir, url)) {
    log.debug({ ...logCtx, dir }, 'fetching into existing workspace');
    const ws = new GitWorkspace(dir, repo, opts, wanted);
    try {
      await ws.fetch();
    } catch (err) {
      if (isTransient(err)) throw err;
      log.warn(
        { ...logCtx, err: err instanceof Error ? err.message : String(err) },
        'fetch failed; cloning the workspace again',
      );
      await rm(dir, { recursive: true, force: true });
    }
  } else if (await exists(dir)) {
    log.warn({ ...logCtx, dir }, 'workspace is not usable (interrupted clone or another URL); cloning again');
    await rm(dir, { recursive: true, force: true });
  }
  if (!(await exists(dir))) {
    log.debug({ ...logCtx, dir }, 'cloning');
    await clone(opts, dir, url);
    cloned = true;
  }

  const ws = new GitWorkspace(dir, repo, opts, wanted);
  try {
    await ws.checkout();
  } catch (err) {
    if (cloned || isTransient(err) || (err instanceof GitError && err.failure === 'not-found')) throw err;
    // A checkout that fails on a fetched ref means a damaged working copy: start over once.
    log.warn(
      { ...logCtx, err: err instanceof Error ? err.message : String(err) },
      'checkout failed; cloning the workspace again',
    );
    await rm(dir, { recursive: true, force: true });
    await clone(opts, dir, url);
    await ws.checkout();
  }
  log.debug({ ...logCtx, ref: ws.ref, head: ws.head }, 'workspace ready');
  return ws;
}

const inProcess = new Map<string, Promise<unknown>>();

async function acquireFileLock(
  lockFile: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  await mkdir(dirname(lockFile), { recursive: true, mode: 0o700 });
  for (;;) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => unlink(lockFile).catch(() => undefined);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(await readFile(lockFile, 'utf8').catch(() => ''), 10);
    if (!Number.isFinite(holder) || !pidAlive(holder)) {
      // Left by a pawl that is gone (or half-written): take it over.
      await unlink(lockFile).catch(() => undefined);
      continue;
    }
    if (signal?.aborted) throw new RuntimeError('aborted while waiting for the workspace lock');
    if (Date.now() > deadline)
      throw new RuntimeError(
        `the workspace ${dirname(lockFile)} is in use by another pawl process (pid ${holder})`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface WithWorkspaceOptions extends OpenWorkspaceOptions {
  /** How long to wait for another pawl using the same workspace; default 10 minutes. */
  lockTimeoutMs?: number;
}

/**
 * Open the workspace and run `fn` with it, holding a lock so that no other pass in this
 * process or another pawl process on the same state directory uses it meanwhile.
 */
export async function withWorkspace<T>(
  opts: WithWorkspaceOptions,
  fn: (ws: Workspace) => Promise<T>,
): Promise<T> {
  const dir = workspaceDir(opts.stateDir, opts.repo);
  const previous = inProcess.get(dir) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((r) => (done = r));
  const chained = previous.then(() => mine);
  inProcess.set(dir, chained);
  try {
    await previous.catch(() => undefined);
    const release = await acquireFileLock(`${dir}.lock`, opts.lockTimeoutMs ?? 600_000, opts.signal);
    try {
      return await fn(await openWorkspace(opts));
    } finally {
      await release();
    }
  } finally {
    done();
    if (inProcess.get(dir) === chained) inProcess.delete(dir);
  }
}
