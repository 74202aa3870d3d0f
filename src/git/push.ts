/**
 * Pushing pawl's commit, and telling apart the three ways it can fail:
 * - someone pushed meanwhile (non-fast-forward, fetch first, stale lease, lost ref lock):
 *   retriable after a refresh — `pushWithRetry` does that;
 * - the server refuses for good (pre-receive hook declined, protected branch): reported, never retried;
 * - network or authentication: thrown as GitError.
 *
 * Force is used in one case only: `git.push.branch` differs from the checkout branch and every
 * commit on the remote push branch that the checkout does not contain was made by pawl
 * (it carries the `Pawl-Automation` trailer). Flux force-pushes its push branch always; pawl
 * never overwrites a branch holding someone else's commits, and uses a lease so that a
 * concurrent writer is never lost.
 */
import { RuntimeError, type Logger } from '../util/index.js';
import { GitError } from './exec.js';
import { PAWL_AUTOMATION_TRAILER } from './commit.js';
import type { Workspace } from './workspace.js';

export type PushRejection = 'non-fast-forward' | 'protected' | 'not-owned';

export interface PushOptions {
  /** `git.push.branch`; default the checkout branch. */
  branch?: string;
  /** `git.push.refspec`, pushed in addition to the branch (Flux semantics). */
  refspec?: string;
  /** `git.push.options`, sent as `-o key=value` (`-o key` when the value is empty). */
  options?: Record<string, string>;
}

export interface PushResult {
  pushed: boolean;
  rejected: PushRejection | null;
  /** What the server said, cleaned of credentials; for the user. */
  message: string;
  /** The branch pushed to. */
  branch: string;
  /** Whether pawl overwrote its own earlier push branch. */
  forced: boolean;
}

interface RefStatus {
  flag: string;
  from: string;
  to: string;
  summary: string;
}

/** Parse `git push --porcelain` output. */
export function parsePorcelain(stdout: string): RefStatus[] {
  const out: RefStatus[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^([ +\-*!=])\t([^\t]*)\t(.*)$/.exec(line);
    if (!m) continue;
    const [from, to] = m[2]!.split(':');
    out.push({ flag: m[1]!, from: from ?? '', to: to ?? '', summary: m[3]! });
  }
  return out;
}

/** Non-fast-forward-like rejections: someone else moved the ref; a refresh and a new attempt can land. */
const RACE =
  /\b(fetch first|non-fast-forward|stale info|failed to update ref|cannot lock ref|failed to lock|incorrect old value|reference already exists|is at [0-9a-f]+ but expected)\b/i;

export function classifyRejection(summary: string): 'non-fast-forward' | 'protected' {
  return RACE.test(summary) ? 'non-fast-forward' : 'protected';
}

function validateRefspec(refspec: string): void {
  if (refspec.startsWith('+'))
    throw new RuntimeError(`git.push.refspec "${refspec}": force refspecs (leading "+") are not supported`);
  const [src, dst, extra] = refspec.split(':');
  if (extra !== undefined || !src || !dst)
    throw new RuntimeError(
      `git.push.refspec "${refspec}": expected SOURCE:DESTINATION, e.g. refs/heads/main:refs/heads/auto`,
    );
}

function remoteMessages(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('remote:'))
    .map((l) => l.replace(/^remote:\s*/, '').trim())
    .filter((l) => l.length > 0)
    .join('\n');
}

/** Are all commits on `remote` that are not in `base` pawl's own? */
async function ownedByPawl(ws: Workspace, base: string, remote: string): Promise<boolean> {
  const out = (
    await ws.git([
      'log',
      `--format=%H%x1f%(trailers:key=${PAWL_AUTOMATION_TRAILER},valueonly,separator=%x2C)%x1e`,
      `${base}..${remote}`,
    ])
  ).stdout;
  const entries = out
    .split('\x1e')
    .map((e) => e.trim())
    .filter(Boolean);
  return entries.every((e) => (e.split('\x1f')[1] ?? '').trim().length > 0);
}

/**
 * May pawl rewrite the remote `branch`? Yes when it is absent, holds nothing beyond the base, or
 * every commit beyond the base is pawl's own; never when a person committed to it.
 */
export async function branchOwnedByPawl(ws: Workspace, branch: string): Promise<boolean> {
  const remote = await ws.remoteBranchHead(branch);
  if (!remote || !ws.base) return true;
  return ownedByPawl(ws, ws.base, remote);
}

/**
 * Whether a remote branch holds a commit of `automation`'s (its `Pawl-Automation` trailer) that
 * the base lacks. pawl's pull requests are proposed from such branches, so when there is none,
 * pawl has no open pull request to update or close, and need not ask the forge.
 */
export async function pawlBranchBeyondBase(ws: Workspace, automation: string): Promise<boolean> {
  if (!ws.base) return true;
  const out = (
    await ws.git([
      'log',
      `--format=%(trailers:key=${PAWL_AUTOMATION_TRAILER},valueonly,separator=%x0a)`,
      '--remotes=origin',
      '--not',
      ws.base,
    ])
  ).stdout;
  return out.split('\n').some((v) => v.trim() === automation);
}

async function isAncestor(ws: Workspace, a: string, b: string): Promise<boolean> {
  try {
    await ws.git(['merge-base', '--is-ancestor', a, b]);
    return true;
  } catch (err) {
    if (err instanceof GitError && err.gitExitCode === 1) return false;
    throw err;
  }
}

async function treeOf(ws: Workspace, rev: string): Promise<string> {
  return (await ws.git(['rev-parse', `${rev}^{tree}`])).stdout.trim();
}

export async function push(ws: Workspace, opts: PushOptions = {}): Promise<PushResult> {
  const branch = opts.branch ?? ws.branch;
  if (!branch)
    throw new RuntimeError(
      `GitRepository ${ws.repo.metadata.namespace}/${ws.repo.metadata.name}: nothing to push to: the checkout is not a branch; set spec.git.push.branch`,
    );
  if (opts.refspec) validateRefspec(opts.refspec);
  // What pawl last set HEAD to (every HEAD it moves goes through the workspace): asking git
  // again would be one process more a pass.
  const head = ws.head || (await ws.updateHead());
  const specs: string[] = [];
  let forced = false;

  if (branch !== ws.branch) {
    // A local branch of that name lets a refspec like refs/heads/auto:refs/heads/main resolve.
    await ws.git(['branch', '--force', '--no-track', branch, head]);
    const remote = await ws.remoteBranchHead(branch);
    if (remote && remote !== head && !(await isAncestor(ws, remote, head))) {
      if (!(await ownedByPawl(ws, ws.base, remote))) {
        return {
          pushed: false,
          rejected: 'not-owned',
          branch,
          forced: false,
          message: `branch ${branch} has commits that pawl did not make; pawl never overwrites them. Merge or delete the branch, or choose another git.push.branch`,
        };
      }
      if ((await treeOf(ws, remote)) === (await treeOf(ws, head))) {
        return {
          pushed: false,
          rejected: null,
          branch,
          forced: false,
          message: `branch ${branch} already has these changes`,
        };
      }
      forced = true;
      specs.push(`--force-with-lease=refs/heads/${branch}:${remote}`);
    }
  }
  // Compare-and-swap on what was fetched: a branch that moved since — another replica's push, or
  // a person rewinding it — refuses this push even where it would be a fast-forward, and the
  // retry starts from what is there now.
  if (branch === ws.branch && ws.base) specs.push(`--force-with-lease=refs/heads/${branch}:${ws.base}`);
  specs.push(`${head}:refs/heads/${branch}`);
  if (opts.refspec) specs.push(opts.refspec);

  const pushOptions = Object.entries(opts.options ?? {}).flatMap(([k, v]) => [
    '--push-option',
    v === '' ? k : `${k}=${v}`,
  ]);
  const leases = specs.filter((s) => s.startsWith('--'));
  const refspecs = specs.filter((s) => !s.startsWith('--'));
  let stdout: string;
  let stderr: string;
  try {
    ({ stdout, stderr } = await ws.remoteGit([
      'push',
      '--porcelain',
      '--no-verify',
      ...pushOptions,
      ...leases,
      'origin',
      ...refspecs,
    ]));
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    const refs = parsePorcelain(err.stdout);
    if (
      refs.length === 0 ||
      err.failure === 'auth' ||
      err.failure === 'unreachable' ||
      err.failure === 'timeout'
    )
      throw err;
    stdout = err.stdout;
    stderr = err.stderr;
  }

  const refs = parsePorcelain(stdout);
  const rejected = refs.filter((r) => r.flag === '!');
  const remoteSaid = remoteMessages(stderr);
  if (rejected.length > 0) {
    const kinds = rejected.map((r) => classifyRejection(r.summary));
    const kind = kinds.includes('protected') ? 'protected' : 'non-fast-forward';
    const lines = rejected.map((r) => `${r.to}: ${r.summary}`);
    return {
      pushed: false,
      rejected: kind,
      branch,
      forced: false,
      message: [...lines, ...(remoteSaid ? [remoteSaid] : [])].join('\n'),
    };
  }
  const updated = refs.some((r) => r.flag !== '=');
  return {
    pushed: updated,
    rejected: null,
    branch,
    forced: forced && updated,
    message: updated
      ? `pushed ${head.slice(0, 7)} to ${branch}${forced ? " (replacing pawl's earlier push)" : ''}`
      : `${branch} is up to date`,
  };
}

export interface PushWithRetryOptions extends Omit<PushOptions, 'branch'> {
  /**
   * The branch, or a function read after each attempt's commit: a templated branch is named by
   * the changes that attempt made.
   */
  branch?: string | (() => string | undefined);
  /** Attempts in all, the first included; default 3. */
  maxAttempts?: number;
  log?: Logger;
  /**
   * Checked before each push: once aborted (a daemon replica lost its claim on the automation),
   * nothing more is pushed and the reason is thrown.
   */
  signal?: AbortSignal;
}

export interface PushWithRetryResult extends PushResult {
  /**
   * The commit pushed (or, when rejected, the one that was refused); null when there was
   * nothing to commit or the remote already had the same changes.
   */
  commit: string | null;
  attempts: number;
}

/**
 * Run `attempt` (which edits files and commits, returning the sha or null when nothing
 * changed), push, and when someone pushed meanwhile refresh to the new remote head and run
 * `attempt` again — it must recompute everything from the files, as they may have changed.
 */
export async function pushWithRetry(
  ws: Workspace,
  attempt: (ws: Workspace, attemptNumber: number) => Promise<string | null>,
  opts: PushWithRetryOptions = {},
): Promise<PushWithRetryResult> {
  const max = Math.max(1, opts.maxAttempts ?? 3);
  let last: PushWithRetryResult | null = null;
  for (let n = 1; n <= max; n++) {
    const sha = await attempt(ws, n);
    if (sha === null) {
      return {
        pushed: false,
        rejected: null,
        branch: (typeof opts.branch === 'function' ? opts.branch() : opts.branch) ?? ws.branch ?? '',
        forced: false,
        message:
          n === 1
            ? 'nothing to commit'
            : 'nothing to commit after refreshing: the remote already has these changes',
        commit: null,
        attempts: n,
      };
    }
    opts.signal?.throwIfAborted();
    const branch = typeof opts.branch === 'function' ? opts.branch() : opts.branch;
    const result = await push(ws, {
      ...opts,
      ...(branch !== undefined ? { branch } : { branch: undefined }),
    });
    // Not pushed and not rejected: the remote already had these changes, so no commit landed.
    last = { ...result, commit: result.pushed || result.rejected ? sha : null, attempts: n };
    if (result.rejected !== 'non-fast-forward') return last;
    opts.log?.info(
      { attempt: n, maxAttempts: max, message: result.message },
      'push rejected because the remote moved; refreshing',
    );
    if (n < max) await ws.refresh();
  }
  return {
    ...last!,
    message: `${last!.message}\ngave up after ${max} attempts: the branch kept moving`,
  };
}
