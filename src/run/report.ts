/** The `pawl run --json` report (SPEC §5). Field names are part of the contract. */
import type { Anomaly } from '../store/index.js';

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

export interface ChangeReport {
  file: string;
  line: number;
  setter: string;
  policy: string;
  old: string;
  new: string;
  reason: string;
}

export interface KeptReport {
  file: string;
  line: number;
  setter: string;
  policy: string;
  current: string;
  candidate: string | null;
  reason: string;
  detail: string;
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
