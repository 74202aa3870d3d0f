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
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { GitRef, GitRepository, Secret } from '../config/index.js';
import { type Logger, RuntimeError } from '../util/index.js';
import { git, GitError, type GitOptions, type GitResult } from './exec.js';
import { credentialsInUrl, prepareAuth, redactUrl, transportOf, withoutUrlCredentials } from './auth.js';
import { chooseRef, selectSemverTag } from './refs.js';
import { exists, healthy, sweepLeftovers } from './repair.js';
import { noteLeftClean, peekLeftClean, takeLeftClean, type LeftClean } from './known.js';

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
  /**
   * Re-read HEAD after commits made through git(); `movedTo`: the sha git itself just moved HEAD
   * to (an `update-ref` with the old value checked), taken as it is instead of asking git again.
   */
  updateHead(movedTo?: string): Promise<string>;
  /**
   * Says that HEAD's commit on `branch` is exactly what the working tree and the index hold,
   * nothing untracked: the caller committed every file it wrote, or wrote none. The next
   * checkout of that branch in this process, with the remote still at that commit and the index
   * untouched since, then runs neither `checkout` nor `clean`. Does nothing when detached.
   * Answers the seal of the state it leaves (see `untouched`), or null when it noted nothing.
   */
  leaveClean(): Promise<string | null>;
  /**
   * When this checkout found the workspace exactly as this process's last pass left it (the
   * checkout and clean were skipped), the seal `leaveClean` answered then; else null. Equal seals
   * name the same working tree byte for byte: what was read from it then holds now.
   */
  readonly untouched: string | null;
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

export function workspaceDir(stateDir: string, repo: GitRepository): string {
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

class GitWorkspace implements Workspace {
  ref!: ResolvedRef;
  branch: string | null = null;
  head = '';
  base = '';
  untouched: string | null = null;
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
    this.untouched = null;
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
    const left = takeLeftClean(this.dir);
    if (left && left.branch === branch && (await this.stillAsLeft(left))) {
      // The last pass here left this branch clean at the commit the remote is still at: the
      // checkout and the clean below would change nothing (two git processes a webhook pass).
      this.ref = { kind: 'branch', branch };
      this.branch = branch;
      this.base = left.commit;
      this.head = left.commit;
      this.untouched = sealOf(left);
      return;
    }
    const remote = `refs/remotes/origin/${branch}^{commit}`;
    // --force -B resets the branch, the index and the tracked files to the fetched head in one
    // step. Git resolves the remote ref itself, and the branch's ref file then names the commit it
    // took: no rev-parse before or after, one process less a pass (each one a fork and exec that a
    // busy machine delays by tens of milliseconds).
    try {
      await this.git(['checkout', '--quiet', '--force', '--no-track', '-B', branch, remote]);
    } catch (err) {
      // A branch the remote does not have is not-found, which the caller does not clone again for.
      await this.resolveOrThrow(remote, `branch ${branch}`);
      throw err;
    }
    await this.git(['clean', '-ffdxq']);
    const sha =
      (await looseRef(join(this.dir, '.git'), `refs/heads/${branch}`)) ??
      (await this.git(['rev-parse', '--verify', 'HEAD^{commit}'])).stdout.trim();
    this.ref = { kind: 'branch', branch };
    this.branch = branch;
    this.base = sha;
    this.head = sha;
  }

  /**
   * Is the workspace still as `left` says, with the remote at its commit? Read from the files
   * git keeps (loose refs, HEAD, the index's stat): anything not plain enough says no, and the
   * checkout runs.
   */
  private async stillAsLeft(left: LeftClean): Promise<boolean> {
    const gitDir = join(this.dir, '.git');
    const [remote, local, head, index] = await Promise.all([
      looseRef(gitDir, `refs/remotes/origin/${left.branch}`),
      looseRef(gitDir, `refs/heads/${left.branch}`),
      readFile(join(gitDir, 'HEAD'), 'utf8').catch(() => null),
      indexStat(gitDir),
    ]);
    return (
      remote === left.commit &&
      local === left.commit &&
      head === `ref: refs/heads/${left.branch}\n` &&
      sameIndex(index, left.index)
    );
  }

  async leaveClean(): Promise<string | null> {
    if (this.branch === null || this.head === '') return null;
    const index = await indexStat(join(this.dir, '.git'));
    if (!index) return null;
    const left = { url: this.url, branch: this.branch, commit: this.head, index };
    noteLeftClean(this.dir, left);
    return sealOf(left);
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

  async updateHead(movedTo?: string): Promise<string> {
    this.head = movedTo ?? (await this.git(['rev-parse', 'HEAD'])).stdout.trim();
    return this.head;
  }
}

/**
 * The object id a loose ref file holds, or null when there is none to read that way (a packed or
 * symbolic ref, a reftable repository): the caller asks git then. Git writes every ref it updates
 * as a loose file in the files backend, so right after git set the ref this is exactly its value.
 */
async function looseRef(gitDir: string, ref: string): Promise<string | null> {
  const text = await readFile(join(gitDir, ref), 'utf8').catch(() => null);
  const m = text === null ? null : /^([0-9a-f]{40}|[0-9a-f]{64})\n?$/.exec(text);
  return m ? m[1]! : null;
}

async function indexStat(gitDir: string): Promise<LeftClean['index'] | null> {
  const st = await stat(join(gitDir, 'index'), { bigint: true }).catch(() => null);
  return st && { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
}

/**
 * A LeftClean note as one string. Any git command that writes the index gives it a new inode,
 * so a note's seal is never answered twice for different trees of one workspace.
 */
function sealOf(left: LeftClean): string {
  const i = left.index;
  return `${left.branch}\n${left.commit}\n${i.ino}:${i.size}:${i.mtimeNs}:${i.ctimeNs}`;
}

function sameIndex(now: LeftClean['index'] | null, then: LeftClean['index']): boolean {
  return (
    now !== null &&
    now.ino === then.ino &&
    now.size === then.size &&
    now.mtimeNs === then.mtimeNs &&
    now.ctimeNs === then.ctimeNs
  );
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
  // A workspace this process's last pass left clean, for this URL, was whole then, and every git
  // process that has been in it since has ended: the checkout takes the note, and only a pass
  // whose every git process succeeded writes it again. No git killed there left a lock file, so
  // the health check and its sweep of locks (~25 file-system calls a webhook pass, issue 27) are
  // for the other starts: the first, and those after a failed or unfinished pass.
  const knownWhole = peekLeftClean(dir)?.url === url;
  if (knownWhole || (await healthy(dir, url))) {
    log.debug({ ...logCtx, dir }, 'fetching into existing workspace');
    const ws = new GitWorkspace(dir, repo, opts, wanted);
    try {
      await ws.fetch();
    } catch (err) {
      // A fetch stopped midway may leave its locks: the next pass checks the workspace again.
      takeLeftClean(dir);
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
