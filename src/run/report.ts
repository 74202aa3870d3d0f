/** The `pawl run --json` report (SPEC §5). Field names are part of the contract. */
import type { Reason } from '../guard/index.js';
import type { Anomaly, Decision } from '../store/index.js';

export interface RepositoryReport {
  name: string;
  tags: number;
  scanned: boolean;
  anomalies: Anomaly[];
  error: string | null;
}

export interface PolicyReport {
  name: string;
  candidate: string | null;
  highWater: string | null;
  error: string | null;
}

/** One marker's decision in an automation's run: the store's record (store's Decision) without the automation. */
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

export function changeRow(d: MarkerDecision): ChangeReport {
  const { file, line, setter, policy, current, candidate, reason } = d;
  return { file, line, setter, policy, old: current, new: candidate ?? '', reason };
}

export function keptRow(d: MarkerDecision): KeptReport {
  const { file, line, setter, policy, current, candidate, reason, detail } = d;
  return { file, line, setter, policy, current, candidate, reason, detail };
}

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
  warnings?: { file: string; message: string }[];
  /** Unified diff of what would be (or was) written; only with --dry-run. */
  diff?: string;
}

export interface RunReport {
  repositories: RepositoryReport[];
  policies: PolicyReport[];
  automations: AutomationReport[];
}
