/**
 * `pawl suspend|resume` (docs/cli.md): `spec.suspend` committed into the file that defines the
 * object, in the Git repository an automation pushes to — the same workspace, commit and push
 * retry as a pass, so the pause is in Git (where the daemon reads it) and made as pawl's other
 * commits are. The object's file is found in the local checkout the configuration was read
 * from; its path there is its path in the workspace.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { refKey, type Config, type ImageUpdateAutomation, type PawlObject } from '../config/index.js';
import { commit, git, pushWithRetry, type Workspace } from '../git/index.js';
import { TRAILER_REASON } from '../guard/index.js';
import { RuntimeError, UsageError, errorMessage, type Logger } from '../util/index.js';
import { rewriteFileSync, spliceSuspend } from '../write/index.js';
import { secretOf, withAutomationWorkspace } from './automation.js';

export interface SuspendDeps {
  config: Config;
  stateDir: string;
  log: Logger;
  now?: () => Date;
}

export interface SuspendResult {
  object: string;
  suspend: boolean;
  /** The file, relative to the root of the repository. */
  file: string;
  line: number | null;
  /** The automation whose repository, author and push settings were used. */
  automation: string | null;
  commit: string | null;
  branch: string | null;
  /** `pushed`; `unchanged` (already so); `dry-run`. */
  result: 'pushed' | 'unchanged' | 'dry-run';
  message: string;
}

/** The suspend trailer: which object, so `git log --grep` finds every pause. */
export const TRAILER_SUSPEND = 'Pawl-Suspend';
export const TRAILER_RESUME = 'Pawl-Resume';

export async function setSuspend(
  deps: SuspendDeps,
  object: PawlObject,
  suspend: boolean,
  opts: { reason?: string; dryRun?: boolean } = {},
): Promise<SuspendResult> {
  const what = `${object.kind} ${refKey(object.metadata)}`;
  const id = { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
  const local = object.source.file;
  const rel = await pathInCheckout(local, what);
  // The automations that could hold the file: the object's own first, then the others.
  const candidates = [...deps.config.automations.values()].sort(
    (a, b) => Number(b === object) - Number(a === object),
  );
  const seen = new Set<string>();
  for (const automation of candidates) {
    const repo = refKey(automation.spec.sourceRef);
    if (seen.has(repo) || !deps.config.gitRepositories.has(repo)) continue;
    seen.add(repo);
    const done = await withAutomationWorkspace(
      automation,
      { ...deps, now: deps.now ?? (() => new Date()) },
      (ws) => suspendIn(ws, automation),
    );
    if (done) return done;
  }
  throw new RuntimeError(
    `${what} (${local}): no GitRepository of an ImageUpdateAutomation holds ${rel} with this object, so pawl has nowhere to commit it; set spec.suspend in ${local} by hand and push it`,
  );

  async function suspendIn(ws: Workspace, automation: ImageUpdateAutomation): Promise<SuspendResult | null> {
    const path = join(ws.dir, rel);
    if (!existsSync(path)) return null;
    const first = spliceSuspend(readFileSync(path, 'utf8'), id, suspend);
    if ('error' in first) {
      if (/not defined in this file$/.test(first.error)) return null;
      throw new UsageError(`${local}: ${first.error}`);
    }
    const name = refKey(automation.metadata);
    const base = { object: what, suspend, file: rel, automation: name, branch: ws.branch };
    if (!first.changed)
      return { ...base, line: null, commit: null, result: 'unchanged', message: `${first.why} in ${rel}` };
    if (opts.dryRun)
      return {
        ...base,
        line: first.line,
        commit: null,
        result: 'dry-run',
        message: `would commit ${rel}:${first.line}`,
      };
    let line = first.line;
    // Run again on a push race: the file is read afresh each time.
    const attempt = async (w: Workspace): Promise<string | null> => {
      const file = join(w.dir, rel);
      const before = readFileSync(file, 'utf8');
      const s = spliceSuspend(before, id, suspend);
      if ('error' in s) throw new UsageError(`${rel}: ${s.error}`);
      if (!s.changed) return null;
      line = s.line;
      rewriteFileSync(file, before, s.text);
      const signing = automation.spec.git.commit.signingKey;
      const signingKey = secretOf(deps.config, automation.metadata.namespace, signing?.secretRef);
      return commit(w, {
        message: `${suspend ? 'Suspend' : 'Resume'} ${what}${opts.reason ? `\n\n${opts.reason}` : ''}`,
        author: automation.spec.git.commit.author,
        trailers: {
          [suspend ? TRAILER_SUSPEND : TRAILER_RESUME]: what,
          ...(opts.reason ? { [TRAILER_REASON]: opts.reason } : {}),
        },
        automation: name,
        stateDir: deps.stateDir,
        date: (deps.now ?? (() => new Date()))(),
        files: [rel],
        ...(signingKey && signing ? { signingKey, signingKeyType: signing.type } : {}),
      });
    };
    const push = automation.spec.git.push;
    const pushed = await pushWithRetry(ws, attempt, {
      ...(push?.branch ? { branch: push.branch } : {}),
      ...(push?.refspec ? { refspec: push.refspec } : {}),
      ...(push?.options ? { options: push.options } : {}),
      maxAttempts: 3,
      log: deps.log,
    });
    if (pushed.rejected)
      throw new RuntimeError(
        `${what}: the push to ${pushed.branch} was rejected (${pushed.rejected}): ${pushed.message}`,
      );
    return {
      ...base,
      line,
      branch: pushed.branch || ws.branch,
      commit: pushed.commit,
      result: pushed.commit ? 'pushed' : 'unchanged',
      message: pushed.commit
        ? `committed ${pushed.commit.slice(0, 12)} (${rel}:${line}) and pushed it to ${pushed.branch || ws.branch}`
        : `${rel} already had it on ${pushed.branch || ws.branch}`,
    };
  }
}

/** The file's path from the root of the Git checkout it lies in. */
async function pathInCheckout(file: string, what: string): Promise<string> {
  let real: string;
  try {
    real = realpathSync(file);
  } catch (err) {
    throw new RuntimeError(`${what}: cannot read ${file} (${errorMessage(err)})`);
  }
  let top: string;
  try {
    top = (await git(['rev-parse', '--show-toplevel'], { cwd: dirname(real) })).stdout.trim();
  } catch {
    throw new UsageError(
      `${what} is defined in ${file}, which is not in a Git checkout: pawl suspend commits to the repository the file comes from; give -c a checkout of it, or set spec.suspend there by hand`,
    );
  }
  return relative(realpathSync(top), real).split(sep).join('/');
}
