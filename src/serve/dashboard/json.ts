/**
 * The shapes of the dashboard's JSON (docs/dashboard.md, docs/api.md): the one definition, read
 * by the server that writes them and by the page (web/types.ts) that shows them. It imports
 * nothing but records/' types: web/ type-checks with the browser's lib, and every file imported
 * from here is checked there too.
 */
import type { Decision } from '../../records/index.js';

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

export interface TimelineScan {
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
}

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
