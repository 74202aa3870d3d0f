/**
 * The `pawl run --json` and `pawl scan --json` reports (SPEC §5): run and scan write them, the
 * CLI prints them, notify turns them into alerts. Field names are part of the contract.
 */
import type { Decision, Reason } from './decision.js';
import type { Anomaly } from './scan.js';

/** One entry of `repositories[]` in `pawl run --json` and `pawl scan --json` (SPEC §5). */
export interface ScanReport {
  /** `ns/name` of the ImageRepository. */
  name: string;
  image: string;
  /** Tags of the last good scan (this one when it succeeded). */
  tags: number;
  /** False when suspended, or when the scan failed. */
  scanned: boolean;
  suspended: boolean;
  anomalies: Anomaly[];
  error: string | null;
  added: string[];
  removed: string[];
  requests: number;
}

export interface RepositoryReport {
  name: string;
  tags: number;
  scanned: boolean;
  anomalies: Anomaly[];
  error: string | null;
  /** When `error` comes from a stored scan, not this pass's: when that scan ended (RFC 3339). */
  errorAt?: string;
}

export interface PolicyReport {
  name: string;
  candidate: string | null;
  highWater: string | null;
  error: string | null;
  /** `spec.verify`: the newest selected tag when it failed verification, and why (docs/gates.md). */
  unverified?: { tag: string; why: string };
}

/** One marker's decision in an automation's run: the stored Decision without the automation. */
export type MarkerDecision = Omit<Decision<Reason | 'rollback'>, 'automation'>;

/** A `changes` row: a write, under the contract's names `old` and `new`. */
export type ChangeReport = Pick<MarkerDecision, 'file' | 'line' | 'setter' | 'policy' | 'reason'> & {
  old: MarkerDecision['current'];
  new: string;
};

/** A `kept` row: the decision as it is. */
export type KeptReport = Pick<
  MarkerDecision,
  'file' | 'line' | 'setter' | 'policy' | 'current' | 'candidate' | 'reason' | 'detail'
>;

export type AutomationResult = 'pushed' | 'up-to-date' | 'dry-run' | 'failed';

export interface AutomationReport {
  name: string;
  result: AutomationResult;
  commit: string | null;
  branch: string | null;
  changes: ChangeReport[];
  kept: KeptReport[];
  error: string | null;
  /**
   * Files skipped on purpose (a symlink that points out of the repository), once per file;
   * absent when there are none.
   */
  /** `line` is set for a marker that points nowhere (a mistake in the marker itself). */
  warnings?: { file: string; line?: number; message: string }[];
  /** Unified diff of what would be (or was) written; only with --dry-run. */
  diff?: string;
  /** The pull request proposing `branch` (`spec.git.push.pullRequest`); absent without one. */
  pullRequest?: PullRequestReport | null;
  /**
   * The commit batch holding this pass's writes (spec.git.commit.batch): when it opened and when
   * its write is due (RFC 3339); absent when nothing is held.
   */
  batch?: { openedAt: string; writesAt: string };
}

export interface PullRequestReport {
  number: number;
  url: string;
  /** What this pass did to it. */
  action: 'opened' | 'updated' | 'unchanged';
  state: 'open' | 'closed' | 'merged';
  /** pawl's earlier pull requests this pass closed (superseded, or moot), by number. */
  closed: number[];
  /**
   * Said to the user: a branch a person committed to was left alone, and another one used; the
   * forge refused reviewers, assignees or auto-merge on the pull request just opened.
   */
  note?: string;
}

export interface RunReport {
  repositories: RepositoryReport[];
  policies: PolicyReport[];
  automations: AutomationReport[];
}
