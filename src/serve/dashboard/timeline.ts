/** One image repository's timeline: its scans, its policies' selections, and what Git holds. */
import { refKey } from '../../config/index.js';
import { describeAnomaly } from '../../scan/index.js';
import {
  forgeCommitUrl,
  iso,
  type DashboardSource,
  type DashboardStore,
  type RunResultShape,
} from './types.js';
import type { GitMark, Timeline, TimelineScan } from './json.js';

/** A first scan "adds" every tag; the page needs a few names, not thousands. */
export const TAG_NAMES_SHOWN = 20;

/** The tag part of a marker value (`host/app:1.2@sha256:…` → `1.2`); a bare tag stays itself. */
export function tagPart(value: string): string {
  const noDigest = value.split('@')[0]!;
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(colon + 1) : noDigest;
}

/** The count chart's y values: a failure is drawn at the last known count, never at 0. */
export function shownCounts(scans: readonly { outcome: string; tags: number | null }[]): (number | null)[] {
  let last: number | null = null;
  return scans.map((s) => {
    if (s.tags !== null && s.outcome !== 'failed') last = s.tags;
    return s.outcome === 'failed' ? last : s.tags;
  });
}

/** Newest first; consecutive failed scans with the same error fold into the newest of them. */
export function foldScanRows<T extends { at: string; outcome: string; error: string | null }>(
  oldestFirst: readonly T[],
): (T & { count: number; firstAt: string })[] {
  const out: (T & { count: number; firstAt: string })[] = [];
  for (const s of [...oldestFirst].reverse()) {
    const prev = out[out.length - 1];
    if (prev && s.outcome === 'failed' && prev.outcome === 'failed' && prev.error === s.error) {
      prev.count++;
      prev.firstAt = s.at;
    } else out.push({ ...s, count: 1, firstAt: s.at });
  }
  return out;
}

interface RunResultWithPerson extends RunResultShape {
  reason?: unknown;
  requestedBy?: unknown;
}

/** The policy's history in Git from the store's decisions (newest first in, oldest first out). */
async function gitHistory(
  src: DashboardSource,
  policy: string,
  since: number,
  limit: number,
): Promise<{ inGit: { at: string; value: string }[]; git: GitMark[] }> {
  const decisions = (await src.store.decisions({ policy, limit })).filter(
    (d) => d.runKind !== 'dry-run' && d.at.getTime() >= since,
  );
  const inGit: { at: string; value: string }[] = [];
  const git: GitMark[] = [];
  const seenRuns = new Set<number>();
  const runs = new Map<number, Awaited<ReturnType<DashboardStore['getRun']>>>();
  for (const d of decisions) {
    // One point per run (the first line of the policy it decided): lines of one policy move together.
    if (seenRuns.has(d.runId)) continue;
    seenRuns.add(d.runId);
    if (d.action !== 'write' || d.candidate === null) {
      inGit.push({ at: d.at.toISOString(), value: tagPart(d.current) });
      continue;
    }
    if (!runs.has(d.runId)) runs.set(d.runId, await src.store.getRun(d.runId));
    const run = runs.get(d.runId);
    const result = (run?.result ?? null) as RunResultWithPerson | null;
    const a = result?.automations?.find((x) => x.name === d.automation);
    const commit =
      typeof a?.commit === 'string' ? a.commit : typeof result?.commit === 'string' ? result.commit : null;
    // A write is in Git from its push, at the run's end; one that was not pushed (a rejected
    // push, a failure) left the old value there and made no commit to show.
    if (!commit) {
      inGit.push({ at: d.at.toISOString(), value: tagPart(d.current) });
      continue;
    }
    inGit.push({ at: (run?.endedAt ?? d.at).toISOString(), value: tagPart(d.candidate) });
    const automation = src.config.automations.get(d.automation);
    const repo = automation ? src.config.gitRepositories.get(refKey(automation.spec.sourceRef)) : undefined;
    git.push({
      at: (run?.endedAt ?? d.at).toISOString(),
      kind: d.runKind === 'rollback' || d.runKind === 'release' ? d.runKind : 'run',
      value: tagPart(d.candidate),
      commit,
      url: repo ? forgeCommitUrl(repo.spec.url, commit) : null,
      by: typeof result?.requestedBy === 'string' ? result.requestedBy : null,
      reason: typeof result?.reason === 'string' ? result.reason : null,
    });
  }
  return { inGit: inGit.reverse(), git: git.reverse() };
}

export async function timeline(src: DashboardSource, name: string, limit: number): Promise<Timeline | null> {
  const repo = src.config.imageRepositories.get(name);
  if (!repo) return null;
  const scans = (await src.store.scanHistory(name, limit)).filter((s) => s.outcome !== 'running').reverse();
  const since = scans[0]?.startedAt.getTime() ?? 0;
  const mine = [...src.config.imagePolicies.values()].filter(
    (p) => refKey(p.spec.imageRepositoryRef) === name,
  );
  const names = mine.map((p) => refKey(p.metadata));
  const [states, histories, gits] = await Promise.all([
    src.store.policyStates(names),
    Promise.all(names.map((n) => src.store.selectionHistory(n, limit * 4))),
    // The run that made a commit begins before its scan: only a cut history limits Git's marks.
    Promise.all(names.map((n) => gitHistory(src, n, scans.length >= limit ? since : 0, limit * 4))),
  ]);
  const policies = mine.map((p, i) => {
    const pname = names[i]!;
    const state = states.get(pname);
    const selections = histories[i]!.filter((s) => s.at.getTime() >= since).reverse();
    const { inGit, git } = gits[i]!;
    const tags: string[] = [];
    const add = (t: string | null | undefined) => {
      if (t && !tags.includes(t)) tags.push(t);
    };
    for (const s of selections) add(s.candidate);
    add(state?.highWater);
    for (const g of inGit) add(g.value);
    for (const g of git) add(g.value);
    return {
      name: pname,
      highWater: state?.highWater ?? null,
      highWaterAt: iso(state?.highWaterAt),
      selections: selections.map((s) => ({
        at: s.at.toISOString(),
        candidate: s.candidate,
        error: s.error,
      })),
      inGit,
      git,
      tags,
    };
  });
  const shaped: TimelineScan[] = scans.map((s) => ({
    id: s.id,
    at: s.startedAt.toISOString(),
    outcome: s.outcome,
    tags: s.tagCount,
    added: s.added.slice(0, TAG_NAMES_SHOWN),
    addedCount: s.added.length,
    removed: s.removed.slice(0, TAG_NAMES_SHOWN),
    removedCount: s.removed.length,
    anomalies: s.anomalies.map((a) => ({ kind: a.kind, text: describeAnomaly(a, 5) })),
    error: s.error,
  }));
  const shown = shownCounts(shaped);
  return {
    name,
    image: repo.spec.image,
    answered: scans.some((s) => s.outcome === 'ok'),
    scans: shaped.map((s, i) => ({ ...s, shown: shown[i]! })),
    rows: foldScanRows(shaped),
    policies,
  };
}
