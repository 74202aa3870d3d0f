/** The shapes the dashboard's JSON has (docs/dashboard.md, docs/api.md), and what it reads them from. */
import type { Config } from '../../config/index.js';
import type { Decision } from '../../records/index.js';
import type { Store } from '../../store/index.js';
import type { Problem } from '../../util/index.js';
import type { PassEvent } from '../events.js';

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

/** The part of a stored run's result the dashboard reads: its commits. */
export interface RunResultShape {
  automations?: { name?: unknown; commit?: unknown; result?: unknown }[];
  commit?: unknown;
}

/** A time as the JSON carries it. */
export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
