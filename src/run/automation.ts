/**
 * One ImageUpdateAutomation: check out, decide every marker (guard), write, commit, push —
 * and on a push race, start over from the new remote head, because a person may just have
 * edited a marked line.
 */
import { posix } from 'node:path';
import {
  fluxTemplateData,
  refKey,
  renderCommitMessage,
  type Config,
  type ImageUpdateAutomation,
  type Secret,
  type TemplateChange,
} from '../config/index.js';
import {
  withWorkspace,
  type Identity,
  type Workspace,
  commit,
  push,
  pushWithRetry,
  branchOwnedByPawl,
  pawlBranchBeyondBase,
  GitError,
  type PushResult,
} from '../git/index.js';
import { TRAILER_UPDATED } from '../guard/index.js';
import { rewriteFileSync, rewrite } from '../write/index.js';
import { RuntimeError, errorMessage, type Logger } from '../util/index.js';
import { planTree, type MarkerPlan, type PlanOptions, type TreePlan } from './plan.js';
import { objectsAt } from './objects.js';
import { appliedPolicies, markerMistakes } from './markers.js';
import { gitFailureWords } from './git-words.js';
import type { PolicyOutcome } from './policies.js';
import { branchName } from './branch.js';
import {
  closeMoot,
  forgeFailure,
  forgeFor,
  propose,
  pullRequestText,
  type PullRequestDeps,
} from './pull-request.js';
import {
  changeRow,
  keptRow,
  type AutomationReport,
  type ChangeReport,
  type MarkerDecision,
} from './report.js';

/** The guard's reasons that hold a line below its candidate: a pull request for it is moot, held. */
const HOLDS: ReadonlySet<string> = new Set(['pinned', 'outside-window', 'too-new', 'unverified']);

/** Names the policies a commit moved; `Pawl-Policy` is reserved for rollbacks (pins). */

export interface AutomationDeps {
  config: Config;
  stateDir: string;
  log: Logger;
  now: () => Date;
  /** The forge's API for pull requests (`spec.git.push.pullRequest`); default global fetch. */
  forge?: PullRequestDeps;
}

export interface AutomationOptions extends PlanOptions {
  dryRun?: boolean;
  /**
   * Replaces the guard's decisions (rollback): given the plan, returns the edits to make.
   * Default: every marker the guard decided to write.
   */
  edits?: (plan: TreePlan) => { plan: MarkerPlan; value: string }[];
  /**
   * Message and trailers instead of the automation's template (rollback, release); `author`,
   * the person who asked, makes the automation's identity the committer only.
   */
  message?: (changes: ChangeReport[]) => {
    message: string;
    trailers: Record<string, string | string[]>;
    author?: Identity;
  };
  maxAttempts?: number;
  /** Aborted: stop before the next push (the commit stays local; the next run starts clean). */
  signal?: AbortSignal;
}

export interface AutomationRun {
  report: AutomationReport;
  plan: TreePlan | null;
  /** Every marker's decision (what the store records); the report's rows are projections of it. */
  decisions: MarkerDecision[];
}

export function secretOf(config: Config, namespace: string, name: string | undefined): Secret | undefined {
  return name === undefined ? undefined : config.secrets.get(`${namespace}/${name}`);
}

/**
 * Runs `fn` in the automation's workspace, holding the workspace lock: two passes over one
 * GitRepository (in this process or another pawl) never share a working copy at once.
 */
export async function withAutomationWorkspace<T>(
  automation: ImageUpdateAutomation,
  deps: AutomationDeps,
  fn: (ws: Workspace) => Promise<T>,
): Promise<T> {
  const repoKey = refKey(automation.spec.sourceRef);
  const repo = deps.config.gitRepositories.get(repoKey);
  if (!repo)
    throw new RuntimeError(
      `ImageUpdateAutomation ${refKey(automation.metadata)}: GitRepository ${repoKey} is not in the configuration`,
    );
  const secret = secretOf(deps.config, repo.metadata.namespace, repo.spec.secretRef);
  return withWorkspace(
    {
      stateDir: deps.stateDir,
      repo,
      ...(secret ? { secret } : {}),
      ...(automation.spec.git.checkout ? { ref: automation.spec.git.checkout.ref } : {}),
      log: deps.log,
    },
    fn,
  );
}

export async function runAutomation(
  automation: ImageUpdateAutomation,
  /** The automation's policies; a function is awaited once the workspace is ready. */
  outcomesOf: ReadonlyMap<string, PolicyOutcome> | (() => Promise<ReadonlyMap<string, PolicyOutcome>>),
  deps: AutomationDeps,
  opts: AutomationOptions = {},
): Promise<AutomationRun> {
  const name = refKey(automation.metadata);
  const report: AutomationReport = {
    name,
    result: 'failed',
    commit: null,
    branch: null,
    changes: [],
    kept: [],
    error: null,
  };
  let plan: TreePlan | null = null;
  let decisions: MarkerDecision[] = [];
  try {
    await withAutomationWorkspace(automation, deps, async (ws) => {
      try {
        await pass(ws);
      } catch (err) {
        // Leave the working copy as the last fetch had it: the next run starts clean.
        await ws.git(['reset', '--hard', '--quiet', 'HEAD']).catch(() => undefined);
        throw err;
      }
    });
  } catch (err) {
    report.result = 'failed';
    report.error =
      err instanceof GitError
        ? gitFailureWords(err, deps.config.gitRepositories.get(refKey(automation.spec.sourceRef)), deps.log)
        : errorMessage(err);
  }
  return { report, plan, decisions };

  async function pass(ws: Workspace): Promise<void> {
    const outcomes = typeof outcomesOf === 'function' ? await outcomesOf() : outcomesOf;
    const pushSpec = automation.spec.git.push;
    const prSpec = pushSpec?.pullRequest;
    // A templated branch is named by each attempt's changes; a fixed one is as Flux has it.
    const branchTemplate = pushSpec?.branch?.includes('{{') ? pushSpec.branch : undefined;
    let branch = branchTemplate ? undefined : pushSpec?.branch;
    let lastChanges: TemplateChange[] = [];
    let lastMessage = '';
    report.branch = branch ?? ws.branch;

    // Decide, write and commit; run again from scratch after a push race.
    const attempt = async (w: Workspace): Promise<string | null> => {
      plan = await planTree(w.dir, automation.spec.update.path, outcomes, opts);
      // Once per file, however often a push race makes the pass plan again.
      const mistakes = markerMistakes(
        plan.files,
        automation,
        new Set(deps.config.imagePolicies.keys()),
        appliedPolicies(deps.config),
      );
      const found: { file: string; line?: number; message: string }[] = [...plan.warnings, ...mistakes];
      for (const warning of found) {
        const warnings = (report.warnings ??= []);
        if (
          !warnings.some(
            (x) => x.file === warning.file && x.line === warning.line && x.message === warning.message,
          )
        )
          warnings.push(warning);
      }
      if (plan.errors.length > 0) {
        throw new RuntimeError(
          `ImageUpdateAutomation ${name}: cannot read marked files, nothing written:\n` +
            plan.errors.map((e) => `  ${e.file}: ${e.message}`).join('\n'),
        );
      }
      const edits = opts.edits
        ? opts.edits(plan)
        : plan.plans.filter((p) => p.value !== null).map((p) => ({ plan: p, value: p.value! }));
      decisions = summarise(plan, edits);
      report.changes = decisions.filter((d) => d.action === 'write').map(changeRow);
      report.kept = decisions.filter((d) => d.action === 'keep').map(keptRow);
      lastChanges = [];
      if (edits.length === 0) return null;
      // Flux's default message is a constant: only a template needs the changed objects.
      const needObjects =
        (!opts.message && !!automation.spec.git.commit.messageTemplate) || !!branchTemplate || !!prSpec;
      const templateChanges = await writeEdits(w, plan, edits, automation.spec.update.path, needObjects);
      lastChanges = templateChanges;
      if (branchTemplate) {
        branch = branchName(branchTemplate, automation, templateChanges);
        report.branch = branch;
        if (prSpec && branch === w.branch)
          // Checked before the commit is pushed: a pull request is never pushed into its own base.
          throw new RuntimeError(
            `ImageUpdateAutomation ${name}: spec.git.push.branch renders to ${branch}, the branch the pull request would be proposed into (git.checkout.ref.branch); make the template name another branch (e.g. "pawl/{{ .AutomationObject.Name }}/...")`,
          );
      }
      if (opts.dryRun) return null;
      const { message, trailers, author } = opts.message
        ? opts.message(report.changes)
        : {
            message: renderCommitMessage(
              automation.spec.git.commit.messageTemplate,
              fluxTemplateData(
                automation.metadata,
                templateChanges,
                automation.spec.git.commit.messageTemplateValues,
              ),
            ),
            trailers: { [TRAILER_UPDATED]: [...new Set(report.changes.map((c) => c.policy))].sort() },
          };
      lastMessage = message;
      const signing = automation.spec.git.commit.signingKey;
      const signingKey = secretOf(deps.config, automation.metadata.namespace, signing?.secretRef);
      return commit(w, {
        message,
        author: author ?? automation.spec.git.commit.author,
        committer: automation.spec.git.commit.author,
        trailers,
        automation: name,
        stateDir: deps.stateDir,
        date: deps.now(),
        files: [...new Set(edits.map((e) => e.plan.marker.file))],
        ...(signingKey && signing ? { signingKey, signingKeyType: signing.type } : {}),
      });
    };

    if (opts.dryRun) {
      await attempt(ws);
      report.diff = await ws.diff();
      await ws.git(['reset', '--hard', '--quiet', 'HEAD']);
      report.result = 'dry-run';
      return;
    }

    if (prSpec && !branchTemplate && branch === ws.branch) {
      // Checked before anything is pushed: a pull request is never pushed into its own base.
      report.result = 'failed';
      report.error = `ImageUpdateAutomation ${name}: spec.git.push.branch is ${branch}, the branch a pull request would be proposed into; name another branch (e.g. "pawl/{{ .AutomationObject.Name }}")`;
      return;
    }
    let pushed = await pushWithRetry(ws, attempt, {
      ...(pushSpec?.branch ? { branch: () => branch } : {}),
      ...(pushSpec?.refspec ? { refspec: pushSpec.refspec } : {}),
      ...(pushSpec?.options ? { options: pushSpec.options } : {}),
      maxAttempts: opts.maxAttempts ?? 3,
      log: deps.log,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    let note: string | undefined;
    if (pushed.rejected === 'not-owned' && prSpec && branch) {
      // A person committed to the branch: leave it, and propose from a branch beside it.
      const taken = branch;
      const other = await pushBeside(ws, taken, pushSpec?.options);
      if (other) {
        note = `branch ${taken} has commits that pawl did not make, so pawl left it alone and pushed to ${other.branch} instead`;
        deps.log.warn({ automation: name, branch: taken, instead: other.branch }, note);
        pushed = { ...pushed, ...other, commit: other.pushed ? pushed.commit : null };
        branch = other.branch;
      }
    }
    report.branch = pushed.branch || report.branch;
    if (pushed.rejected) {
      report.result = 'failed';
      report.error = `push to ${pushed.branch} rejected (${pushed.rejected}): ${pushed.message}`;
      // Leave the workspace as the remote has it: the next run starts clean.
      await ws.refresh().catch(() => undefined);
    } else if (pushed.pushed && pushed.commit) {
      report.result = 'pushed';
      report.commit = pushed.commit;
    } else {
      // Nothing to commit, or the branch already had these changes.
      report.result = 'up-to-date';
    }
    if (prSpec && !pushed.rejected)
      await pullRequest(ws, prSpec, { note, changes: lastChanges, message: lastMessage, branch });
  }

  /** Open or update the pull request for the pushed branch; or, with nothing to propose, close pawl's. */
  async function pullRequest(
    ws: Workspace,
    spec: NonNullable<NonNullable<ImageUpdateAutomation['spec']['git']['push']>['pullRequest']>,
    {
      note,
      changes,
      message,
      branch,
    }: {
      note: string | undefined;
      changes: TemplateChange[];
      message: string;
      branch: string | undefined;
    },
  ): Promise<void> {
    const repo = deps.config.gitRepositories.get(refKey(automation.spec.sourceRef))!;
    const base = ws.branch;
    if (!base) {
      report.result = 'failed';
      report.error = `ImageUpdateAutomation ${name}: a pull request needs a branch to propose into; git.checkout.ref is not a branch`;
      return;
    }
    const mayClose = (b: string): Promise<boolean> => branchOwnedByPawl(ws, b);
    try {
      const forge = forgeFor(
        {
          automation,
          spec,
          gitUrl: repo.spec.url,
          secret: secretOf(deps.config, automation.metadata.namespace, spec.secretRef),
          base,
        },
        deps.forge ?? {},
      );
      if (changes.length === 0 || !branch) {
        // No pawl branch beyond the base: no pull request of pawl's can be open, so the forge's
        // list is not asked for. A merged one's commits are in the base; one still open (moot,
        // or superseded by a merge) has its branch, so it is listed and closed as before.
        if (!(await pawlBranchBeyondBase(ws, name))) return;
        // Held: a pin, a gate or verification keeps a line below its candidate (a base that is
        // ahead, `downgrade-blocked`, is "already has the values").
        const held = report.kept.some((k) => HOLDS.has(k.reason));
        const closed = await closeMoot(forge, { automation: name, base, mayClose, held });
        if (closed.length > 0)
          deps.log.info({ automation: name, closed }, 'closed pull requests the base already has');
        return;
      }
      const { title, body } = pullRequestText(automation, spec, changes, message);
      const pr = await propose(forge, {
        automation: name,
        head: branch,
        base,
        title,
        body,
        labels: spec.labels,
        draft: spec.draft,
        people: { reviewers: spec.reviewers, assignees: spec.assignees },
        ...(spec.autoMerge ? { autoMerge: spec.autoMerge.method } : {}),
        mayClose,
      });
      const notes = [note, pr.note].filter((n): n is string => !!n);
      report.pullRequest = notes.length > 0 ? { ...pr, note: notes.join('; ') } : pr;
      if (pr.note) deps.log.warn({ automation: name, pullRequest: pr.number }, pr.note);
      if (pr.action !== 'unchanged')
        deps.log.info(
          { automation: name, pullRequest: pr.number, url: pr.url, action: pr.action },
          `pull request ${pr.action}`,
        );
    } catch (err) {
      const words = forgeFailure(name, err);
      if (words === null) throw err;
      report.result = 'failed';
      report.error = words;
    }
  }
}

/** Pushes HEAD to the first of `branch-2` … `branch-9` pawl may write. */
async function pushBeside(
  ws: Workspace,
  branch: string,
  options: Record<string, string> | undefined,
): Promise<PushResult | null> {
  for (let n = 2; n <= 9; n++) {
    const result = await push(ws, { branch: `${branch}-${n}`, ...(options ? { options } : {}) });
    if (result.rejected !== 'not-owned') return result;
  }
  return null;
}

/** Every marker's decision, once: the report's rows and the store's records are projections of it. */
function summarise(plan: TreePlan, edits: { plan: MarkerPlan; value: string }[]): MarkerDecision[] {
  const writing = new Map(edits.map((e) => [e.plan, e.value]));
  return plan.plans.map((p): MarkerDecision => {
    const value = writing.get(p);
    const where = { file: p.marker.file, line: p.marker.line, setter: p.marker.setter, policy: p.policy };
    const { decision } = p;
    return value !== undefined
      ? {
          ...where,
          action: 'write',
          current: p.marker.value,
          candidate: value,
          reason: decision.action === 'write' ? decision.reason : 'rollback',
          detail: '',
        }
      : {
          ...where,
          action: 'keep',
          current: p.marker.value,
          candidate: p.outcome.candidate?.tag ?? null,
          reason: decision.action === 'keep' ? decision.reason : 'up-to-date',
          detail: decision.detail,
        };
  });
}

/** Splices the new values into each file (only the marked scalars' bytes) and writes the changed bytes in place. */
async function writeEdits(
  ws: Workspace,
  plan: TreePlan,
  edits: { plan: MarkerPlan; value: string }[],
  updatePath: string,
  needObjects: boolean,
): Promise<TemplateChange[]> {
  // Flux keys `.Changed.FileChanges` by paths relative to `spec.update.path`.
  const base = posix.normalize(updatePath.replace(/^\.\/?/, '') || '.');
  const byFile = new Map<string, { plan: MarkerPlan; value: string }[]>();
  for (const e of edits) byFile.set(e.plan.marker.file, [...(byFile.get(e.plan.marker.file) ?? []), e]);
  const changes: TemplateChange[] = [];
  const files = new Map(plan.files.map((f) => [f.file, f]));
  let written = 0;
  for (const [file, fileEdits] of byFile) {
    // Let the daemon's other work in between files now and then.
    if (++written % 64 === 0) await new Promise((r) => setImmediate(r));
    const scanned = files.get(file);
    if (!scanned) throw new RuntimeError(`internal error: ${file} was not scanned in ${ws.dir}`);
    const objects = needObjects
      ? objectsAt(
          scanned.text,
          fileEdits.map((e) => e.plan.marker.start),
        )
      : fileEdits.map(() => ({ kind: '', namespace: '', name: '' }));
    rewriteFileSync(
      scanned.path,
      scanned.text,
      rewrite(
        scanned.text,
        fileEdits.map((e) => ({ marker: e.plan.marker, value: e.value })),
      ),
    );
    fileEdits.forEach((e, i) =>
      changes.push({
        file: posix.relative(base === '.' ? '' : base, file),
        object: objects[i]!,
        oldValue: e.plan.marker.value,
        newValue: e.value,
        setter: e.plan.marker.setter,
      }),
    );
  }
  return changes;
}
