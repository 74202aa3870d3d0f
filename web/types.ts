/** The shapes the page reads (src/serve/dashboard/types.ts and src/run/explain.ts; docs/dashboard.md). */
// Types only: the bundle keeps nothing of src/records/.
import type { Decision } from '../src/records/index.js';

export type MarkerState =
  | 'error'
  | 'candidate-missing'
  | 'unverified'
  | 'stale'
  | 'downgrade-blocked'
  | 'pinned'
  | 'held'
  | 'upgrade'
  | 'up-to-date';

/** A marker's stored decision (src/records/), with what the dashboard adds. */
export interface Marker extends Decision {
  state: MarkerState;
  label: string;
  meaning: string;
  at: string;
  dryRun: boolean;
}

export interface Policy {
  name: string;
  repository: string;
  strategy: string;
  candidate: string | null;
  selectedAt: string | null;
  highWater: string | null;
  highWaterAt: string | null;
  pending: { candidate: string; count: number; firstAt: string; lastAt: string } | null;
  error: string | null;
  stale: string | null;
}

export interface Repository {
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

export interface Automation {
  name: string;
  /** `spec.suspend`: no pass runs. */
  suspended: boolean;
  git: { name: string; url: string; branch: string | null } | null;
  policies: string[];
  lastPass: { at: string; trigger: string; result: string | null; error: string | null } | null;
  lastCommit: { sha: string; at: string; url: string | null; kind: string } | null;
  /** The last pass's pull request (docs/pull-requests.md); null without one. */
  pullRequest: { number: number; url: string; action: string; state: string } | null;
}

export interface Overview {
  generatedAt: string;
  dryRun: boolean;
  configuration: { paths: string[]; automations: number; policies: number; repositories: number };
  calm: {
    kind: 'nothing-configured' | 'all-suspended' | 'no-pass-yet' | 'no-markers' | 'all-well';
    text: string;
  } | null;
  automations: Automation[];
  policies: Policy[];
  repositories: Repository[];
  markers: Marker[];
  attention: {
    state: MarkerState;
    title: string;
    why: string;
    href: string;
    count: number;
    others: { title: string; href: string }[];
  }[];
  counts: Record<MarkerState, number>;
}

interface Scan {
  id: number;
  at: string;
  outcome: string;
  tags: number | null;
  added: string[];
  addedCount: number;
  removed: string[];
  removedCount: number;
  anomalies: { kind: string; text: string }[];
  error: string | null;
}

export interface GitMark {
  at: string;
  kind: 'run' | 'rollback' | 'release';
  value: string;
  commit: string | null;
  url: string | null;
  by: string | null;
  reason: string | null;
}

export interface Timeline {
  name: string;
  image: string;
  answered: boolean;
  scans: (Scan & { shown: number | null })[];
  rows: (Scan & { count: number; firstAt: string })[];
  policies: {
    name: string;
    highWater: string | null;
    highWaterAt: string | null;
    selections: { at: string; candidate: string | null; error: string | null }[];
    inGit: { at: string; value: string }[];
    git: GitMark[];
    tags: string[];
  }[];
}

export interface Explanation {
  policy: string;
  repository: string;
  image: string;
  strategy: string;
  selected: string | null;
  candidate: string | null;
  error: string | null;
  /** `spec.verify`: the newest selected tag when it failed verification (absent from older servers). */
  unverified?: { tag: string; why: string } | null;
  counts: {
    tags: number;
    excluded: number;
    filteredOut: number;
    unparsable: number;
    outOfRange: number;
  } | null;
  candidates: { rank: number; tag: string; extracted: string; key: string }[];
  highWater: string | null;
  highWaterAt: string | null;
  pending: { candidate: string; count: number; firstAt: string; lastAt: string } | null;
  ratchet: string;
  markers: {
    automation: string;
    file: string;
    line: number;
    setter: string;
    value: string;
    action: 'write' | 'keep';
    reason: string;
    words: string;
    detail: string;
    advice: string | null;
    pin: {
      state: string;
      detail: string;
      commit?: string;
      author?: string;
      time?: string;
      previous?: string;
      kind?: string;
      reason?: string;
    } | null;
  }[];
  automationErrors: { automation: string; error: string }[];
  events: { at: string; kind: string; detail: Record<string, unknown> }[];
  rollbackTo: string | null;
  commands: { rollback: string; release: string; explain: string };
}

export const STATE_LABELS: Record<MarkerState, string> = {
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

export const STATE_ORDER: MarkerState[] = [
  'error',
  'candidate-missing',
  'unverified',
  'stale',
  'downgrade-blocked',
  'pinned',
  'held',
  'upgrade',
  'up-to-date',
];
