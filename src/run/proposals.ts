/**
 * What `pawl explain` says of each automation beside the markers: the pull request its passes
 * keep (spec.git.push.pullRequest) and the commit batch holding its writes
 * (spec.git.commit.batch). Read from the store — the last pass's report and the open batch — so
 * explain stays read-only and asks no forge.
 */
import { refKey, type ImageUpdateAutomation } from '../config/index.js';
import type { AutomationReport } from '../records/index.js';
import type { Store } from '../store/index.js';
import type { Proposal } from './explanation.js';

export type ProposalStore = Pick<Store, 'decisions' | 'getRun' | 'openBatches'>;

export type { Proposal };

/** Runs of one automation looked at, newest first, for its pull request: held passes report none. */
const RUNS_LOOKED_AT = 5;

export async function proposalsOf(
  store: ProposalStore,
  policy: string,
  automations: readonly ImageUpdateAutomation[],
): Promise<Proposal[]> {
  const wanted = automations.filter(
    (a) => a.spec.git.push?.pullRequest || a.spec.git.commit.batch !== undefined,
  );
  if (wanted.length === 0) return [];
  const [decisions, batches] = await Promise.all([
    store.decisions({ policy, limit: 200 }),
    store.openBatches(wanted.map((a) => refKey(a.metadata))),
  ]);
  const out: Proposal[] = [];
  for (const a of wanted) {
    const name = refKey(a.metadata);
    const opened = batches.get(name);
    const runs = [
      ...new Set(decisions.filter((d) => d.automation === name && d.runKind === 'run').map((d) => d.runId)),
    ];
    out.push({
      automation: name,
      pullRequest: a.spec.git.push?.pullRequest ? await lastPullRequest(store, name, runs) : null,
      batch:
        opened && a.spec.git.commit.batch !== undefined
          ? {
              openedAt: opened.toISOString(),
              writesAt: new Date(opened.getTime() + a.spec.git.commit.batch).toISOString(),
            }
          : null,
    });
  }
  return out;
}

/**
 * The pull request of the newest pass that did not hold its writes: that pass opened, updated or
 * kept it — or, reporting none, found the base with every value (merged, or closed as moot).
 */
async function lastPullRequest(
  store: ProposalStore,
  automation: string,
  runIds: readonly number[],
): Promise<Proposal['pullRequest']> {
  for (const id of runIds.slice(0, RUNS_LOOKED_AT)) {
    const run = await store.getRun(id);
    const result = run?.result as { automations?: AutomationReport[] } | null | undefined;
    const report = result?.automations?.find((x) => x.name === automation);
    if (!run || !report || report.batch || report.result === 'failed') continue;
    const pr = report.pullRequest;
    return pr
      ? { number: pr.number, url: pr.url, state: pr.state, action: pr.action, at: run.at.toISOString() }
      : null;
  }
  return null;
}
