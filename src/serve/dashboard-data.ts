/**
 * What the dashboard (docs/dashboard.md) shows, computed from the store and the running
 * configuration: one overview (every marked line's state in words and what needs a person
 * first) and one timeline per image repository. Pure over its inputs except for the store reads;
 * nothing here writes.
 */
import { refKey, type Config } from '../config/index.js';
import { REASON_LABELS, reasonMeaning, type Reason } from '../guard/index.js';
import type { Decision, DecisionRecord, ScanRecord } from '../records/index.js';
import type { LatestScans, Store } from '../store/index.js';
import { describeAnomaly } from '../scan/index.js';
import type { Problem } from '../util/index.js';
import type { PassEvent } from './events.js';

/** The states a marked line is shown in, worst first (the attention list's order). */
export const MARKER_STATES = [
  'error',
  'candidate-missing',
  'unverified',
  'stale',
  'downgrade-blocked',
  'pinned',
  'held',
  'upgrade',
  'up-to-date',
] as const;
export type MarkerState = (typeof MARKER_STATES)[number];

export const STATE_LABELS: Readonly<Record<MarkerState, string>> = {
  error: 'error',
  'candidate-missing': 'candidate missing',
  unverified: 'unverified',
  stale: 'stale registry',
  'downgrade-blocked': 'downgrade blocked',
  pinned: 'pinned',
  held: 'held by a gate',
  upgrade: 'upgrade written',
  'up-to-date': 'up to date',
};

/** Where a commit can be opened in a browser, for the forges whose URL layout is known. */
export function forgeCommitUrl(gitUrl: string, sha: string): string | null {
  if (!/^[0-9a-f]{7,64}$/i.test(sha)) return null;
  let host: string;
  let path: string;
  const scp = /^(?:[\w.-]+@)?([\w.-]+):(?!\/\/)([^\s]+)$/.exec(gitUrl);
  if (scp && !/^[a-z][\w+.-]*:\/\//i.test(gitUrl)) {
    host = scp[1]!;
    path = scp[2]!;
  } else {
    let u: URL;
    try {
      u = new URL(gitUrl);
    } catch {
      return null;
    }
    if (!['https:', 'http:', 'ssh:', 'git:'].includes(u.protocol)) return null;
    host = u.hostname;
    path = u.pathname;
  }
  host = host.toLowerCase();
  path = path
    .replace(/^\/+/, '')
    .replace(/\.git\/?$/, '')
    .replace(/\/+$/, '');
  if (!/^[\w.-]+(\/[\w.-]+)+$/.test(path)) return null;
  const base = `https://${host}/${path}`;
  if (host === 'github.com' || host.startsWith('github.')) return `${base}/commit/${sha}`;
  if (host === 'gitlab.com' || host.startsWith('gitlab.')) return `${base}/-/commit/${sha}`;
  if (host === 'bitbucket.org') return `${base}/commits/${sha}`;
  if (
    host === 'codeberg.org' ||
    host === 'gitea.com' ||
    host.startsWith('gitea.') ||
    host.startsWith('forgejo.')
  )
    return `${base}/commit/${sha}`;
  return null;
}

/** A marker's stored decision (its `detail` is the decision's sentence), as the dashboard shows it. */
export interface MarkerView extends Decision {
  state: MarkerState;
  label: string;
  /** What the reason means in general. */
  meaning: string;
  at: string;
  dryRun: boolean;
}

export interface PolicyView {
  name: string;
  repository: string;
  strategy: string;
  candidate: string | null;
  selectedAt: string | null;
  highWater: string | null;
  highWaterAt: string | null;
  pending: { candidate: string; count: number; firstAt: string; lastAt: string } | null;
  error: string | null;
  /** The registry's list lacks what it served before, and the ratchet is holding the line. */
  stale: string | null;
}

export interface RepositoryView {
  name: string;
  image: string;
  interval: number;
  tags: number | null;
  lastScan: {
    at: string;
    outcome: string;
    tags: number | null;
    anomalies: string[];
    error: string | null;
  } | null;
}

export interface AutomationView {
  name: string;
  /** `spec.suspend`: no pass runs (pawl resume automation NAME). */
  suspended: boolean;
  git: { name: string; url: string; branch: string | null } | null;
  policies: string[];
  lastPass: { at: string; trigger: string; result: string | null; error: string | null } | null;
  lastCommit: { sha: string; at: string; url: string | null; kind: string } | null;
  /** The last pass's pull request; null without one. */
  pullRequest: { number: number; url: string; action: string; state: string } | null;
}

export interface AttentionItem {
  state: MarkerState;
  title: string;
  why: string;
  /** `#/policy/ns/name` or `#/repository/ns/name`. */
  href: string;
  /** Folded: how many items said the same (1 when alone), and the titles of the others. */
  count: number;
  others: { title: string; href: string }[];
}

/** Identical problems (same state and words) are one item with a count, in the first one's place. */
export function foldAttention(items: readonly Omit<AttentionItem, 'count' | 'others'>[]): AttentionItem[] {
  const out: AttentionItem[] = [];
  const byWords = new Map<string, AttentionItem>();
  for (const item of items) {
    const key = `${item.state}\u0000${item.why}`;
    const seen = byWords.get(key);
    if (seen) {
      seen.count++;
      seen.others.push({ title: item.title, href: item.href });
      continue;
    }
    const folded = { ...item, count: 1, others: [] };
    byWords.set(key, folded);
    out.push(folded);
  }
  return out;
}

/**
 * What the attention list says when it is empty. Only `all-well` is good news: an empty
 * configuration, or lines no pass has decided yet, are not "nothing needs a person".
 */
export interface Calm {
  kind: 'nothing-configured' | 'all-suspended' | 'no-pass-yet' | 'no-markers' | 'all-well';
  text: string;
}

export interface Overview {
  generatedAt: string;
  dryRun: boolean;
  /** Where the daemon reads its configuration (`-c`), and how many objects it runs. */
  configuration: { paths: string[]; automations: number; policies: number; repositories: number };
  /** Set when `attention` is empty. */
  calm: Calm | null;
  automations: AutomationView[];
  policies: PolicyView[];
  repositories: RepositoryView[];
  markers: MarkerView[];
  attention: AttentionItem[];
  counts: Record<MarkerState, number>;
}

/** The store as the dashboard reads it: batch reads of every policy, and each one's history. */
export type DashboardStore = Pick<
  Store,
  | 'policyStates'
  | 'latestSelections'
  | 'latestEvents'
  | 'latestScans'
  | 'decisions'
  | 'getRun'
  | 'scanHistory'
  | 'selectionHistory'
>;

export interface DashboardSource {
  config: Config;
  store: DashboardStore;
  dryRun: boolean;
  lastPass: ReadonlyMap<string, PassEvent>;
  repositoriesOf: ReadonlyMap<string, string[]>;
  /**
   * The configuration's problems: the errors of the running one (objects skipped), or — when
   * the last reload was refused — why, while the one before keeps running.
   */
  configuration?: { refused: boolean; at: Date; problems: readonly Problem[] };
  /** The daemon's `-c` paths: where an empty configuration was looked for. */
  configPaths?: readonly string[];
  now: Date;
}

/** The empty attention list's words, from what runs and what the passes decided. */
export function calmWords(c: {
  paths: readonly string[];
  automations: number;
  suspended: number;
  policies: number;
  repositories: number;
  passes: number;
  markers: number;
}): Calm {
  const where = c.paths.length > 0 ? c.paths.join(', ') : 'no -c path (the working directory)';
  if (c.automations === 0) {
    const found =
      c.policies + c.repositories === 0
        ? 'no ImageRepository, ImagePolicy or ImageUpdateAutomation'
        : `${c.repositories} ImageRepository and ${c.policies} ImagePolicy objects but no ImageUpdateAutomation`;
    return {
      kind: 'nothing-configured',
      text: `Nothing is configured: pawl found ${found} in ${where}, so it updates nothing. Point -c at the directory with your Flux image automation objects (pawl validate -c DIR lists what it finds).`,
    };
  }
  if (c.suspended === c.automations)
    return {
      kind: 'all-suspended',
      text: `Every ImageUpdateAutomation (${c.automations}) is suspended (spec.suspend: true), so pawl writes nothing.`,
    };
  if (c.markers === 0 && c.passes === 0)
    return {
      kind: 'no-pass-yet',
      text: 'No pass has decided anything yet: the marked lines appear here after the first one.',
    };
  if (c.markers === 0)
    return {
      kind: 'no-markers',
      text: `The automations found no marked line in their update paths, so there is nothing to update. A marker is a comment such as # {"$imagepolicy": "NAMESPACE:POLICY"} on the image line.`,
    };
  return { kind: 'all-well', text: 'Nothing needs a person: every line is up to date or upgraded.' };
}

/** Configuration problems come first: they explain whatever else is missing from the page. */
type AttentionInput = Omit<AttentionItem, 'count' | 'others'>;

function configurationAttention(c: DashboardSource['configuration']): AttentionInput[] {
  if (!c) return [];
  const errors = c.problems.filter((p) => p.severity === 'error');
  const items: AttentionInput[] = errors.map((p) => ({
    state: 'error',
    title: `${c.refused ? 'Configuration change refused' : 'Configuration'}: ${p.location.file}${p.location.line !== undefined ? `:${p.location.line}` : ''}`,
    why: `${p.object ? `${p.object}: ` : ''}${p.message}`,
    href: '#/',
  }));
  if (c.refused && items.length > 0)
    items[0]!.why += ` (refused at ${c.at.toISOString()}; the configuration before it keeps running)`;
  return items;
}

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** A marker's state from its decision and its policy's situation. */
export function markerState(
  reason: string,
  policy: Pick<PolicyView, 'stale' | 'error' | 'pending'> | undefined,
): MarkerState {
  switch (reason) {
    case 'upgrade':
    case 'retarget':
      return 'upgrade';
    case 'pinned':
      return 'pinned';
    case 'downgrade-blocked':
      return 'downgrade-blocked';
    case 'candidate-missing':
      return 'candidate-missing';
    case 'unverified':
      return 'unverified';
    case 'too-new':
    case 'outside-window':
      return 'held';
    case 'up-to-date':
    case 'equivalent':
      return policy?.stale ? 'stale' : 'up-to-date';
    case 'no-candidate':
      return policy?.stale || policy?.pending ? 'stale' : 'error';
    default:
      return 'error';
  }
}

function meaningOf(reason: string): string {
  return reason in REASON_LABELS ? reasonMeaning(reason as Reason) : '';
}

async function policyViews(src: DashboardSource, latest: Map<string, LatestScans>): Promise<PolicyView[]> {
  const out: PolicyView[] = [];
  const all = [...src.config.imagePolicies.values()];
  const names = all.map((p) => refKey(p.metadata));
  const [states, selections, stales] = await Promise.all([
    src.store.policyStates(names),
    src.store.latestSelections(names),
    src.store.latestEvents('stale-scan', names),
  ]);
  for (const [i, p] of all.entries()) {
    const name = names[i]!;
    const repository = refKey(p.spec.imageRepositoryRef);
    const state = states.get(name);
    const sel = selections.get(name);
    const lastGood = latest.get(repository)?.good ?? null;
    const lastStale = stales.get(name);
    // Stale while no good scan has started since the ratchet last refused the list.
    const stale =
      lastStale && lastGood && lastStale.at.getTime() >= lastGood.startedAt.getTime()
        ? staleWords(lastGood, state?.highWater ?? null)
        : null;
    out.push({
      name,
      repository,
      strategy: p.spec.policy.strategy,
      candidate: sel?.candidate ?? null,
      selectedAt: iso(sel?.at),
      highWater: state?.highWater ?? null,
      highWaterAt: iso(state?.highWaterAt),
      pending: state?.pending
        ? {
            candidate: state.pending.candidate,
            count: state.pending.count,
            firstAt: state.pending.firstAt.toISOString(),
            lastAt: state.pending.lastAt.toISOString(),
          }
        : null,
      error: sel?.error ?? null,
      stale,
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

function staleWords(scan: ScanRecord, highWater: string | null): string {
  const what = scan.anomalies.map((a) => describeAnomaly(a, 3)).join('; ');
  return (
    `The registry's last tag list looks stale${what ? ` (${what})` : ''}` +
    (highWater ? `; pawl keeps the high-water mark ${highWater}, which still exists.` : '.')
  );
}

function repositoryViews(src: DashboardSource, latest: Map<string, LatestScans>): RepositoryView[] {
  return [...src.config.imageRepositories.values()]
    .map((r) => {
      const name = refKey(r.metadata);
      const last = latest.get(name)?.finished ?? null;
      return {
        name,
        image: r.spec.image,
        interval: r.spec.interval,
        tags: latest.get(name)?.good?.tagCount ?? null,
        lastScan: last
          ? {
              at: last.startedAt.toISOString(),
              outcome: last.outcome,
              tags: last.tagCount,
              anomalies: last.anomalies.map((a) => describeAnomaly(a, 5)),
              error: last.error,
            }
          : null,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The decisions of each automation's latest pass (of kind run or dry-run), newest run first. */
function latestDecisions(recent: readonly DecisionRecord[]): Map<string, DecisionRecord[]> {
  const byAutomation = new Map<string, DecisionRecord[]>();
  const runOf = new Map<string, number>();
  for (const d of recent) {
    if (d.runKind !== 'run' && d.runKind !== 'dry-run') continue;
    const run = runOf.get(d.automation);
    if (run === undefined) runOf.set(d.automation, d.runId);
    else if (run !== d.runId) continue;
    byAutomation.set(d.automation, [...(byAutomation.get(d.automation) ?? []), d]);
  }
  return byAutomation;
}

interface RunResultShape {
  automations?: { name?: unknown; commit?: unknown; result?: unknown }[];
  commit?: unknown;
}

/** The newest commit pawl made for the automation: from the store's runs (it outlives restarts). */
async function lastCommit(
  store: Pick<Store, 'getRun'>,
  recent: readonly DecisionRecord[],
  automation: string,
): Promise<{ sha: string; at: Date; kind: string } | null> {
  const seen = new Set<number>();
  for (const d of recent) {
    if (d.automation !== automation || d.action !== 'write' || seen.has(d.runId)) continue;
    seen.add(d.runId);
    if (seen.size > 50) break;
    const run = await store.getRun(d.runId);
    const result = (run?.result ?? null) as RunResultShape | null;
    if (!run || !result) continue;
    const a = result.automations?.find((x) => x.name === automation);
    const sha =
      typeof a?.commit === 'string' ? a.commit : typeof result.commit === 'string' ? result.commit : null;
    if (sha && run.kind !== 'dry-run') return { sha, at: run.at, kind: run.kind };
  }
  return null;
}

async function automationViews(
  src: DashboardSource,
  recent: readonly DecisionRecord[],
): Promise<AutomationView[]> {
  const all = [...src.config.automations.values()];
  const storedCommits = await Promise.all(all.map((a) => lastCommit(src.store, recent, refKey(a.metadata))));
  return all
    .map((a, i) => {
      const name = refKey(a.metadata);
      const git = src.config.gitRepositories.get(refKey(a.spec.sourceRef));
      const pass = src.lastPass.get(name);
      const ar = pass?.report.automations[0];
      const stored = storedCommits[i]!;
      const live =
        ar?.commit && ar.result === 'pushed' ? { sha: ar.commit, at: pass!.endedAt, kind: 'run' } : null;
      const commit = live && (!stored || live.at >= stored.at) ? live : stored;
      const policies = [...src.config.imagePolicies.values()]
        .filter((p) => (src.repositoriesOf.get(name) ?? []).includes(refKey(p.spec.imageRepositoryRef)))
        .map((p) => refKey(p.metadata));
      return {
        name,
        suspended: a.spec.suspend,
        git: git
          ? {
              name: refKey(git.metadata),
              url: git.spec.url,
              // A templated push branch is named by each pass: show the last pass's.
              branch: a.spec.git?.push?.branch?.includes('{{')
                ? (ar?.branch ?? null)
                : (a.spec.git?.push?.branch ?? git.spec.ref?.branch ?? null),
            }
          : null,
        policies,
        lastPass: pass
          ? {
              at: pass.endedAt.toISOString(),
              trigger: pass.trigger,
              result: ar?.result ?? null,
              error: ar?.error ?? null,
            }
          : null,
        lastCommit: commit
          ? {
              sha: commit.sha,
              at: commit.at.toISOString(),
              url: git ? forgeCommitUrl(git.spec.url, commit.sha) : null,
              kind: commit.kind,
            }
          : null,
        pullRequest: ar?.pullRequest
          ? {
              number: ar.pullRequest.number,
              url: ar.pullRequest.url,
              action: ar.pullRequest.action,
              state: ar.pullRequest.state,
            }
          : null,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** An up-to-date line pawl upgraded within this long shows as "upgrade written". */
export const RECENT_UPGRADE_MS = 24 * 60 * 60_000;

/** The newest write of each line (`automation|file|line`), by a run that was not a dry run. */
function lastWrites(recent: readonly DecisionRecord[]): Map<string, DecisionRecord> {
  const out = new Map<string, DecisionRecord>();
  for (const d of recent) {
    const key = `${d.automation}|${d.file}|${d.line}`;
    if (d.action === 'write' && d.runKind === 'run' && !out.has(key)) out.set(key, d);
  }
  return out;
}

export async function overview(src: DashboardSource): Promise<Overview> {
  // The newest decisions once, for the markers, the last writes and the last commits.
  const [recent, latest] = await Promise.all([
    src.store.decisions({ limit: 5000 }),
    src.store.latestScans([...src.config.imageRepositories.keys()]),
  ]);
  const policies = await policyViews(src, latest);
  const writes = lastWrites(recent);
  const repositories = repositoryViews(src, latest);
  const automations = await automationViews(src, recent);
  const byPolicy = new Map(policies.map((p) => [p.name, p]));
  const markers: MarkerView[] = [];
  for (const [, decisions] of latestDecisions(recent)) {
    for (const d of decisions) {
      if (!src.config.automations.has(d.automation)) continue;
      let state = markerState(d.reason, byPolicy.get(d.policy));
      let detail = d.detail;
      const w = writes.get(`${d.automation}|${d.file}|${d.line}`);
      // The pass after an upgrade finds the line up to date; the upgrade is what a person wants to see.
      if (
        state === 'up-to-date' &&
        w &&
        w.candidate === d.candidate &&
        src.now.getTime() - w.at.getTime() < RECENT_UPGRADE_MS
      ) {
        state = 'upgrade';
        detail = `pawl wrote ${w.candidate} over ${w.current} at ${w.at.toISOString()}. ${d.detail}`;
      }
      markers.push({
        automation: d.automation,
        file: d.file,
        line: d.line,
        setter: d.setter,
        policy: d.policy,
        current: d.current,
        candidate: d.candidate,
        reason: d.reason,
        action: d.action,
        state,
        label: STATE_LABELS[state],
        detail,
        meaning: meaningOf(state === 'upgrade' ? 'upgrade' : d.reason),
        at: d.at.toISOString(),
        dryRun: d.runKind === 'dry-run',
      });
    }
  }
  markers.sort(
    (a, b) =>
      MARKER_STATES.indexOf(a.state) - MARKER_STATES.indexOf(b.state) ||
      a.file.localeCompare(b.file) ||
      a.line - b.line,
  );
  const raw: AttentionInput[] = configurationAttention(src.configuration);
  // A marker that points nowhere is never updated, and says nothing anywhere else on the page.
  for (const [name, pass] of src.lastPass)
    for (const w of pass.report.automations[0]?.warnings ?? [])
      if (w.line !== undefined && src.config.automations.has(name))
        raw.push({
          state: 'error',
          title: `${w.file}:${w.line} — marker points nowhere`,
          why: `${name}: ${w.message}`,
          href: '#/',
        });
  for (const r of repositories)
    if (r.lastScan?.outcome === 'failed')
      raw.push({
        state: 'error',
        title: `Scans of ${r.name} fail`,
        why: r.lastScan.error ?? 'the last scan failed',
        href: `#/repository/${r.name}`,
      });
  for (const a of automations)
    if (a.lastPass?.error)
      raw.push({
        state: 'error',
        title: `${a.name} failed`,
        why: a.lastPass.error,
        href: '#/',
      });
  for (const p of policies)
    if (p.stale)
      raw.push({
        state: 'stale',
        title: `${p.name}: stale registry`,
        why: p.stale,
        href: `#/repository/${p.repository}`,
      });
  const notable: MarkerState[] = ['error', 'candidate-missing', 'unverified', 'downgrade-blocked', 'pinned'];
  for (const m of markers)
    if (notable.includes(m.state))
      raw.push({
        state: m.state,
        title: `${m.file}:${m.line} — ${STATE_LABELS[m.state]}`,
        why: m.detail,
        href: `#/policy/${m.policy}`,
      });
  // Stable: the configuration's items stay first among the errors.
  raw.sort((a, b) => MARKER_STATES.indexOf(a.state) - MARKER_STATES.indexOf(b.state));
  const attention = foldAttention(raw);
  const counts = Object.fromEntries(MARKER_STATES.map((s) => [s, 0])) as Record<MarkerState, number>;
  for (const m of markers) counts[m.state]++;
  const configuration = {
    paths: [...(src.configPaths ?? [])],
    automations: src.config.automations.size,
    policies: src.config.imagePolicies.size,
    repositories: src.config.imageRepositories.size,
  };
  return {
    generatedAt: src.now.toISOString(),
    dryRun: src.dryRun,
    configuration,
    calm:
      attention.length > 0
        ? null
        : calmWords({
            ...configuration,
            suspended: [...src.config.automations.values()].filter((a) => a.spec.suspend).length,
            passes: automations.filter((a) => a.lastPass).length,
            markers: markers.length,
          }),
    automations,
    policies,
    repositories,
    markers,
    attention,
    counts,
  };
}

/** A first scan "adds" every tag; the page needs a few names, not thousands. */
export const TAG_NAMES_SHOWN = 20;

type TimelineScan = {
  id: number;
  at: string;
  outcome: string;
  tags: number | null;
  /** At most TAG_NAMES_SHOWN names each; the counts are whole. */
  added: string[];
  addedCount: number;
  removed: string[];
  removedCount: number;
  anomalies: { kind: string; text: string }[];
  error: string | null;
};

/** A commit that changed the policy's lines, as the store's runs recorded it. */
export interface GitMark {
  at: string;
  kind: 'run' | 'rollback' | 'release';
  /** The tag written. */
  value: string;
  commit: string | null;
  url: string | null;
  /** A rollback's person and `--reason`. */
  by: string | null;
  reason: string | null;
}

export interface Timeline {
  name: string;
  image: string;
  /** Some scan ever got the registry's tag list: before that, there is no count to plot. */
  answered: boolean;
  scans: (TimelineScan & {
    /** What the count chart plots: the count, a failed scan at the last count, null before any answer. */
    shown: number | null;
  })[];
  /** The table's rows, newest first: a run of failed scans with the same error is one row. */
  rows: (TimelineScan & { count: number; firstAt: string })[];
  policies: {
    name: string;
    highWater: string | null;
    highWaterAt: string | null;
    /** Oldest first; `tags` orders the selected tags in the order pawl first selected them. */
    selections: { at: string; candidate: string | null; error: string | null }[];
    /** Oldest first: the tag in Git after each recorded run that read or wrote the policy's lines. */
    inGit: { at: string; value: string }[];
    /** Oldest first: pawl's commits to the policy's lines (upgrades, rollbacks, releases). */
    git: GitMark[];
    tags: string[];
  }[];
}

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
