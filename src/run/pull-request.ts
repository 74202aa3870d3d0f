/**
 * The pull request half of a pass (`spec.git.push.pullRequest`, issue 25): after the branch is
 * pushed, open pawl's one pull request for it or update the one already open; close pawl's
 * other open pull requests into the same base, superseded by it; and when the base already has
 * every value (a person merged it, or set a newer tag by hand), close them as moot. pawl's pull
 * requests are told apart by a mark in their body naming the automation. A pull request whose
 * branch holds a person's commits is never closed.
 */
import {
  fluxTemplateData,
  renderCommitMessage,
  type ImageUpdateAutomation,
  type PullRequestSpec,
  type Secret,
  type TemplateChange,
} from '../config/index.js';
import {
  forgeClient,
  forgeRepo,
  ForgeError,
  type Fetch,
  type ForgeClient,
  type MergeMethod,
  type PullRequest,
  type PullRequestPeople,
} from '../forge/index.js';
import type { PullRequestReport } from '../records/index.js';
import { RuntimeError } from '../util/index.js';

export interface PullRequestDeps {
  fetch?: Fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** The mark in a pull request's body that says pawl opened it for this automation. */
export function pawlMark(automation: string): string {
  return `<!-- pawl:automation ${automation} -->`;
}

export interface ProposeInput {
  automation: ImageUpdateAutomation;
  spec: PullRequestSpec;
  gitUrl: string;
  secret: Secret | undefined;
  base: string;
}

/** The forge client for an automation, or a RuntimeError naming what to fix. */
export function forgeFor(input: ProposeInput, deps: PullRequestDeps): ForgeClient {
  const { automation, spec, secret } = input;
  const where = `ImageUpdateAutomation ${automation.metadata.namespace}/${automation.metadata.name}: spec.git.push.pullRequest`;
  const repo = forgeRepo(input.gitUrl, {
    ...(spec.provider ? { provider: spec.provider } : {}),
    ...(spec.apiURL ? { apiURL: spec.apiURL } : {}),
  });
  if (typeof repo === 'string') throw new RuntimeError(`${where}: ${repo}`);
  if (!secret)
    throw new RuntimeError(
      `${where}: Secret ${automation.metadata.namespace}/${spec.secretRef} (secretRef) is not in the configuration`,
    );
  const token = secret.data.token?.toString('utf8').trim();
  if (!token)
    throw new RuntimeError(
      `${where}: Secret ${automation.metadata.namespace}/${spec.secretRef} has no key "token" (the forge's API token)`,
    );
  return forgeClient(repo, {
    fetch: deps.fetch ?? ((url, init) => fetch(url, init)),
    token,
    ...(deps.sleep ? { sleep: deps.sleep } : {}),
  });
}

/** Title and body: the templates over Flux's data, else the commit message's first line and the rest. */
export function pullRequestText(
  automation: ImageUpdateAutomation,
  spec: PullRequestSpec,
  changes: readonly TemplateChange[],
  message: string,
): { title: string; body: string } {
  const data = fluxTemplateData(
    automation.metadata,
    changes,
    automation.spec.git.commit.messageTemplateValues,
  );
  const [first = '', ...rest] = message.split('\n');
  const title = (spec.title !== undefined ? renderCommitMessage(spec.title, data) : first).trim();
  const body = (spec.body !== undefined ? renderCommitMessage(spec.body, data) : rest.join('\n')).trim();
  return { title: title || 'Update images', body };
}

function withMark(body: string, automation: string): string {
  return `${body}${body ? '\n\n' : ''}${pawlMark(automation)}`;
}

async function closeWith(forge: ForgeClient, pr: PullRequest, why: string): Promise<void> {
  await forge.comment(pr.number, why);
  await forge.close(pr.number);
}

/**
 * Opens or updates pawl's pull request for `head`, and closes pawl's others into `base` (their
 * branches' owners checked by `mayClose`).
 */
export async function propose(
  forge: ForgeClient,
  opts: {
    automation: string;
    head: string;
    base: string;
    title: string;
    body: string;
    labels: string[];
    draft: boolean;
    /** Asked once, when the pull request is opened: a person may change them after. */
    people?: PullRequestPeople;
    autoMerge?: MergeMethod;
    mayClose: (branch: string) => Promise<boolean>;
  },
): Promise<PullRequestReport> {
  const mark = pawlMark(opts.automation);
  const open = (await forge.listOpen(opts.base)).filter((p) => p.body.includes(mark));
  const body = withMark(opts.body, opts.automation);
  const existing = open.find((p) => p.head === opts.head);
  let pr: PullRequest;
  let action: PullRequestReport['action'];
  if (!existing) {
    pr = await forge.open({
      head: opts.head,
      base: opts.base,
      title: opts.title,
      body,
      labels: opts.labels,
      draft: opts.draft,
    });
    action = 'opened';
  } else if (
    existing.title.endsWith(opts.title) &&
    existing.body === body &&
    [...existing.labels].sort().join('\n') === [...opts.labels].sort().join('\n')
  ) {
    pr = existing;
    action = 'unchanged';
  } else {
    pr = await forge.update(existing.number, { title: opts.title, body, labels: opts.labels });
    action = 'updated';
  }
  const notes = action === 'opened' ? await afterOpening(forge, pr, opts) : [];
  const closed: number[] = [];
  for (const other of open) {
    if (other.number === pr.number || !(await opts.mayClose(other.head))) continue;
    await closeWith(
      forge,
      other,
      `Superseded by #${pr.number} (${pr.url}): pawl proposes newer values there. Closed by pawl.`,
    );
    closed.push(other.number);
  }
  return {
    number: pr.number,
    url: pr.url,
    action,
    state: pr.state,
    closed,
    ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
  };
}

/**
 * Reviewers, assignees and auto-merge on a pull request just opened. The pull request stands
 * without them, so a forge's refusal (a user who cannot review, auto-merge not allowed in the
 * repository) is a note on the report, not a failed pass; a rate limit or outage still fails it.
 */
async function afterOpening(
  forge: ForgeClient,
  pr: PullRequest,
  opts: { people?: PullRequestPeople; autoMerge?: MergeMethod },
): Promise<string[]> {
  const notes: string[] = [];
  const step = async (what: string, call: () => Promise<void>): Promise<void> => {
    try {
      await call();
    } catch (err) {
      if (!(err instanceof ForgeError) || err.transient) throw err;
      notes.push(`${what} on #${pr.number}: ${err.message}`);
    }
  };
  const people = opts.people;
  if (people && (people.reviewers.length > 0 || people.assignees.length > 0))
    await step('reviewers and assignees could not be set', () => forge.addPeople(pr.number, people));
  const method = opts.autoMerge;
  if (method) await step('auto-merge could not be enabled', () => forge.autoMerge(pr, method));
  return notes;
}

/** The base has every value: pawl's open pull requests into it are moot. Returns those closed. */
export async function closeMoot(
  forge: ForgeClient,
  opts: {
    automation: string;
    base: string;
    mayClose: (branch: string) => Promise<boolean>;
    /** The guard holds lines the base has older values on: nothing moves, so nothing is proposed. */
    held?: boolean;
  },
): Promise<number[]> {
  const mark = pawlMark(opts.automation);
  const closed: number[] = [];
  for (const pr of (await forge.listOpen(opts.base)).filter((p) => p.body.includes(mark))) {
    if (!(await opts.mayClose(pr.head))) continue;
    await closeWith(
      forge,
      pr,
      opts.held
        ? `pawl now holds these lines at what ${opts.base} has (a hold, or the guard's decision: see pawl's report of the automation's kept lines), so it proposes no change to them. Closed by pawl.`
        : `${opts.base} already has the values pawl would propose (merged, or set by a person): nothing is left to propose here. Closed by pawl.`,
    );
    closed.push(pr.number);
  }
  return closed;
}

/** A forge's failure in the user's words, naming the automation. */
export function forgeFailure(automation: string, err: unknown): string | null {
  if (!(err instanceof ForgeError)) return null;
  return `ImageUpdateAutomation ${automation}: the pull request could not be opened or updated: ${err.message}`;
}
