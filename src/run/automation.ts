/**
 * One ImageUpdateAutomation: check out, decide every marker (guard), write, commit, push —
 * and on a push race, start over from the new remote head, because a person may just have
 * edited a marked line.
 */
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
  type PushWithRetryResult,
  type OwnLine,
} from '../git/index.js';
import { TRAILER_UPDATED } from '../guard/index.js';
import { RuntimeError, errorMessage, type Logger } from '../util/index.js';
import { keepScan } from '../write/index.js';
import { planTree, type MarkerPlan, type PlanOptions, type TreePlan } from './plan.js';
import { summarise, writeEdits, type Edit } from './edits.js';
import { batchStep, heldDecision, type BatchStep } from './batch.js';
import { appliedPolicies, definedPolicies, markerMistakes } from './markers.js';
import { gitFailureWords } from './git-words.js';
import type { PolicyOutcomes } from './policies.js';
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
  /**
   * The automation's commit batch as the store has it (spec.git.commit.batch; null: none open).
   * Absent: nothing is held (rollback, release).
   */
  batch?: { openedAt: Date | null };
  /** Aborted: stop before the next push (the commit stays local; the next run starts clean). */
  signal?: AbortSignal;
}

export interface AutomationRun {
  report: AutomationReport;
  plan: TreePlan | null;
  /** Every marker's decision (what the store records); the report's rows are projections of it. */
  decisions: MarkerDecision[];
  /** The commit batch to store (opened, or done: null); absent when it is as it was. */
  batch?: { openedAt: Date | null };
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
  outcomesOf: PolicyOutcomes | (() => Promise<PolicyOutcomes>),
  deps: AutomationDeps,
  opts: AutomationOptions = {},
): Promise<AutomationRun> {
  const p = startPass(automation, deps, opts);
  try {
    await withAutomationWorkspace(automation, deps, async (ws) => {
      try {
        await passIn(p, ws, typeof outcomesOf === 'function' ? await outcomesOf() : outcomesOf);
      } catch (err) {
        // Leave the working copy as the last fetch had it: the next run starts clean.
        await ws.git(['reset', '--hard', '--quiet', 'HEAD']).catch(() => undefined);
        throw err;
      }
    });
  } catch (err) {
    p.report.result = 'failed';
    p.report.error =
      err instanceof GitError
        ? gitFailureWords(err, deps.config.gitRepositories.get(refKey(automation.spec.sourceRef)), deps.log)
        : errorMessage(err);
  }
  return {
    report: p.report,
    plan: p.plan,
    decisions: p.decisions,
    ...(p.batchWrite ? { batch: p.batchWrite } : {}),
  };
}

/** One automation's pass as its steps share it: what it was given, and what it found so far. */
interface Pass {
  automation: ImageUpdateAutomation;
  name: string;
  deps: AutomationDeps;
  opts: AutomationOptions;
  report: AutomationReport;
  plan: TreePlan | null;
  /** The files the last attempt rewrote (relative to the root), all of them in its plan. */
  rewritten: string[];
  decisions: MarkerDecision[];
  /** A templated branch is named by each attempt's changes; a fixed one is as Flux has it. */
  branchTemplate: string | undefined;
  branch: string | undefined;
  /** The last attempt's changes and commit message: what a pull request proposes. */
  changes: TemplateChange[];
  message: string;
  /** What the commit batch said about the last attempt's edits (null: not batched). */
  step: BatchStep | null;
  batchWrite?: { openedAt: Date | null };
}

type PullRequestSpec = NonNullable<NonNullable<ImageUpdateAutomation['spec']['git']['push']>['pullRequest']>;

function startPass(automation: ImageUpdateAutomation, deps: AutomationDeps, opts: AutomationOptions): Pass {
  const pushSpec = automation.spec.git.push;
  const branchTemplate = pushSpec?.branch?.includes('{{') ? pushSpec.branch : undefined;
  return {
    automation,
    name: refKey(automation.metadata),
    deps,
    opts,
    report: {
      name: refKey(automation.metadata),
      result: 'failed',
      commit: null,
      branch: null,
      changes: [],
      kept: [],
      error: null,
    },
    plan: null,
    rewritten: [],
    decisions: [],
    branchTemplate,
    branch: branchTemplate ? undefined : pushSpec?.branch,
    changes: [],
    message: '',
    step: null,
  };
}

/** Decide, write, commit and push (again from the new remote head after a race); then the pull request. */
async function passIn(p: Pass, ws: Workspace, outcomes: PolicyOutcomes): Promise<void> {
  const { report, opts } = p;
  const pushSpec = p.automation.spec.git.push;
  const prSpec = pushSpec?.pullRequest;
  report.branch = p.branch ?? ws.branch;
  const attempt = (w: Workspace): Promise<string | null> => attemptOnce(p, w, outcomes);
  if (opts.dryRun) {
    await attempt(ws);
    report.diff = await ws.diff();
    await ws.git(['reset', '--hard', '--quiet', 'HEAD']);
    report.result = 'dry-run';
    return;
  }
  if (prSpec && !p.branchTemplate && p.branch === ws.branch) {
    // Checked before anything is pushed: a pull request is never pushed into its own base.
    report.result = 'failed';
    report.error = `ImageUpdateAutomation ${p.name}: spec.git.push.branch is ${p.branch}, the branch a pull request would be proposed into; name another branch (e.g. "pawl/{{ .AutomationObject.Name }}")`;
    return;
  }
  const pushed = await pushWithRetry(ws, attempt, {
    ...(pushSpec?.branch ? { branch: () => p.branch } : {}),
    ...(pushSpec?.refspec ? { refspec: pushSpec.refspec } : {}),
    ...(pushSpec?.options ? { options: pushSpec.options } : {}),
    maxAttempts: opts.maxAttempts ?? 3,
    log: p.deps.log,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const { result, note } = prSpec ? await besideTaken(p, ws, pushed) : { result: pushed, note: undefined };
  await settle(p, ws, result);
  const held = p.step?.action === 'hold';
  if (prSpec && !result.rejected && !held) await pullRequest(p, ws, prSpec, note);
  // Every file this pass wrote is in its commit, or it wrote none; a pull request's branches and
  // a held batch's reset leave the workspace otherwise, so they say nothing.
  else if (!prSpec && !result.rejected && !held) {
    const seal = await ws.leaveClean();
    // The next pass over the tree as this one leaves it reads none of it again (write/setters/tree.ts).
    if (seal !== null && p.plan) keepScan(ws.dir, p.automation.spec.update.path, seal, p.plan, p.rewritten);
  }
  p.batchWrite = batchWrite(p.step, report.result);
}

/** The batch to store after the pass: opened by a hold, done once its write (or nothing) landed. */
function batchWrite(
  step: BatchStep | null,
  result: AutomationReport['result'],
): { openedAt: Date | null } | undefined {
  if (!step) return undefined;
  if (step.action === 'hold') return step.opened ? { openedAt: step.openedAt } : undefined;
  return step.close && result !== 'failed' ? { openedAt: null } : undefined;
}

/** One attempt: plan from the checkout, write the guard's edits, commit them. Null: nothing to commit. */
async function attemptOnce(p: Pass, w: Workspace, outcomes: PolicyOutcomes): Promise<string | null> {
  const { automation, report, opts } = p;
  const plan = await planTree(w.dir, automation.spec.update.path, outcomes, {
    ...opts,
    head: w.head,
    seal: w.untouched,
  });
  p.plan = plan;
  noteWarnings(p, plan);
  if (plan.errors.length > 0) {
    throw new RuntimeError(
      `ImageUpdateAutomation ${p.name}: cannot read marked files, nothing written:\n` +
        plan.errors.map((e) => `  ${e.file}: ${e.message}`).join('\n'),
    );
  }
  const edits = opts.edits
    ? opts.edits(plan)
    : plan.plans.filter((m) => m.value !== null).map((m) => ({ plan: m, value: m.value! }));
  p.rewritten = edits.map((e) => e.plan.marker.file);
  p.decisions = summarise(plan, edits);
  report.changes = p.decisions.filter((d) => d.action === 'write').map(changeRow);
  report.kept = p.decisions.filter((d) => d.action === 'keep').map(keptRow);
  p.changes = [];
  p.step = opts.batch
    ? batchStep(automation.spec.git.commit.batch, opts.batch.openedAt, p.deps.now(), edits.length)
    : null;
  if (edits.length === 0) return null;
  const sha = await writeAndCommit(p, w, plan, edits);
  if (p.step?.action === 'hold') {
    // The branch already proposes exactly these values (the batch's write landed, and the base
    // has not merged it yet): nothing is new, so nothing is held.
    if (await proposedAlready(p, w, sha)) p.step = { action: 'write', close: !p.step.opened };
    else {
      await w.git(['reset', '--hard', '--quiet', w.base]);
      await w.updateHead();
      hold(p, p.step);
      p.changes = [];
      return null;
    }
  }
  return opts.dryRun ? null : sha;
}

/** Writes the edits and commits them: one commit, or one per policy (`group: policy`). */
async function writeAndCommit(
  p: Pass,
  w: Workspace,
  plan: TreePlan,
  edits: readonly Edit[],
): Promise<string | null> {
  const { automation, opts, report } = p;
  // Flux's default message is a constant: only a template needs the changed objects.
  const needObjects =
    (!opts.message && !!automation.spec.git.commit.messageTemplate) ||
    !!p.branchTemplate ||
    !!automation.spec.git.push?.pullRequest;
  // `group: policy`: a commit per policy, in name order; each writes over the ones before it.
  const groups = automation.spec.git.commit.group === 'policy' && !opts.message ? byPolicy(edits) : [edits];
  const written: Edit[] = [];
  let sha: string | null = null;
  for (const group of groups) {
    const changes = await writeEdits(w, plan, group, automation.spec.update.path, needObjects, written);
    written.push(...group);
    p.changes.push(...changes);
    if (!opts.dryRun) sha = (await commitEdits(p, w, group, changes, groups.length === 1)) ?? sha;
  }
  // What a pull request proposes: the whole pass's changes under the automation's template.
  if (groups.length > 1) p.message = automationMessage(automation, p.changes);
  if (p.branchTemplate) {
    p.branch = branchName(p.branchTemplate, automation, p.changes);
    report.branch = p.branch;
    if (automation.spec.git.push?.pullRequest && p.branch === w.branch)
      // Checked before the commit is pushed: a pull request is never pushed into its own base.
      throw new RuntimeError(
        `ImageUpdateAutomation ${p.name}: spec.git.push.branch renders to ${p.branch}, the branch the pull request would be proposed into (git.checkout.ref.branch); make the template name another branch (e.g. "pawl/{{ .AutomationObject.Name }}/...")`,
      );
  }
  return sha;
}

/** Does the push branch (not the checkout's) already hold exactly the tree `sha` has? */
async function proposedAlready(p: Pass, w: Workspace, sha: string | null): Promise<boolean> {
  if (sha === null || !p.branch || p.branch === w.branch) return false;
  const remote = await w.remoteBranchHead(p.branch);
  if (!remote) return false;
  const tree = async (rev: string): Promise<string> =>
    (await w.git(['rev-parse', `${rev}^{tree}`])).stdout.trim();
  return (await tree(remote)) === (await tree(sha));
}

/** A batch holds the guard's writes: each becomes a kept row saying when it is written. */
function hold(p: Pass, step: Extract<BatchStep, { action: 'hold' }>): void {
  const windowMs = p.automation.spec.git.commit.batch!;
  p.decisions = p.decisions.map((d) => (d.action === 'write' ? heldDecision(d, step, windowMs) : d));
  p.report.changes = [];
  p.report.kept = p.decisions.map(keptRow);
  p.report.batch = { openedAt: step.openedAt.toISOString(), writesAt: step.writesAt.toISOString() };
}

/** Edits by policy, policies in name order. */
function byPolicy(edits: readonly Edit[]): Edit[][] {
  const groups = new Map<string, Edit[]>();
  for (const e of edits) groups.set(e.plan.policy, [...(groups.get(e.plan.policy) ?? []), e]);
  return [...groups.keys()].sort().map((k) => groups.get(k)!);
}

function automationMessage(automation: ImageUpdateAutomation, changes: readonly TemplateChange[]): string {
  const spec = automation.spec.git.commit;
  return renderCommitMessage(
    spec.messageTemplate,
    fluxTemplateData(automation.metadata, changes, spec.messageTemplateValues),
  );
}

/** The plan's warnings and the markers' mistakes, once per file however often a push race makes the pass plan again. */
function noteWarnings(p: Pass, plan: TreePlan): void {
  const { deps, automation, report } = p;
  const mistakes = markerMistakes(
    plan.files,
    automation,
    definedPolicies(deps.config),
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
}

/** Commits the written edits: the automation's template (or the caller's message) and trailers. */
async function commitEdits(
  p: Pass,
  w: Workspace,
  edits: readonly Edit[],
  changes: readonly TemplateChange[],
  /** The pass's only commit: the lines it rewrites are named, for their history (git/known.ts). */
  only: boolean,
): Promise<string | null> {
  const { automation, deps, opts, report } = p;
  const spec = automation.spec.git.commit;
  const { message, trailers, author } = opts.message
    ? opts.message(report.changes)
    : {
        message: automationMessage(automation, changes),
        trailers: { [TRAILER_UPDATED]: [...new Set(edits.map((e) => e.plan.policy))].sort() },
      };
  p.message = message;
  const signingKey = secretOf(deps.config, automation.metadata.namespace, spec.signingKey?.secretRef);
  return commit(w, {
    message,
    author: author ?? spec.author,
    committer: spec.author,
    trailers,
    automation: p.name,
    stateDir: deps.stateDir,
    date: deps.now(),
    files: [...new Set(edits.map((e) => e.plan.marker.file))],
    ...(only ? { lines: ownLines(p.plan, edits) } : {}),
    ...(signingKey && spec.signingKey ? { signingKey, signingKeyType: spec.signingKey.type } : {}),
  });
}

/** The marked lines the edits rewrite, with their text before (the scanned checkout's). */
function ownLines(plan: TreePlan | null, edits: readonly Edit[]): OwnLine[] {
  const scanned = new Map(plan?.files.map((f) => [f.file, f.text]));
  const texts = new Map<string, string[]>();
  const out: OwnLine[] = [];
  for (const e of edits) {
    const { file, line, setter } = e.plan.marker;
    let rows = texts.get(file);
    if (!rows) {
      const text = scanned.get(file);
      if (text === undefined) continue;
      texts.set(file, (rows = text.split('\n')));
    }
    const before = rows[line - 1];
    if (before !== undefined) out.push({ file, line, setter, before: before.replace(/\r$/, '') });
  }
  return out;
}

/** A person committed to the branch: leave it, and propose from a branch beside it. */
async function besideTaken(
  p: Pass,
  ws: Workspace,
  pushed: PushWithRetryResult,
): Promise<{ result: PushWithRetryResult; note: string | undefined }> {
  if (pushed.rejected !== 'not-owned' || !p.branch) return { result: pushed, note: undefined };
  const taken = p.branch;
  const other = await pushBeside(ws, taken, p.automation.spec.git.push?.options);
  if (!other) return { result: pushed, note: undefined };
  const note = `branch ${taken} has commits that pawl did not make, so pawl left it alone and pushed to ${other.branch} instead`;
  p.deps.log.warn({ automation: p.name, branch: taken, instead: other.branch }, note);
  p.branch = other.branch;
  return { result: { ...pushed, ...other, commit: other.pushed ? pushed.commit : null }, note };
}

/** The push's outcome in the report. */
async function settle(p: Pass, ws: Workspace, pushed: PushWithRetryResult): Promise<void> {
  const { report } = p;
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
}

/** Open or update the pull request for the pushed branch; or, with nothing to propose, close pawl's. */
async function pullRequest(
  p: Pass,
  ws: Workspace,
  spec: PullRequestSpec,
  note: string | undefined,
): Promise<void> {
  const { automation, deps, report, name } = p;
  const repo = deps.config.gitRepositories.get(refKey(automation.spec.sourceRef))!;
  const base = ws.branch;
  if (!base) {
    report.result = 'failed';
    report.error = `ImageUpdateAutomation ${name}: a pull request needs a branch to propose into; git.checkout.ref is not a branch`;
    return;
  }
  const mayClose = (b: string): Promise<boolean> => branchOwnedByPawl(ws, b);
  try {
    const secret = secretOf(deps.config, automation.metadata.namespace, spec.secretRef);
    const forge = forgeFor({ automation, spec, gitUrl: repo.spec.url, secret, base }, deps.forge ?? {});
    if (p.changes.length === 0 || !p.branch) {
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
    const { title, body } = pullRequestText(automation, spec, p.changes, p.message);
    const pr = await propose(forge, {
      automation: name,
      head: p.branch,
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
