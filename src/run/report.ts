/** The `pawl run --json` report's rows (SPEC §5): projections of a marker's decision. */
import type { ChangeReport, KeptReport, MarkerDecision } from '../records/index.js';

export type {
  AutomationReport,
  AutomationResult,
  ChangeReport,
  KeptReport,
  MarkerDecision,
  PolicyReport,
  RepositoryReport,
  RunReport,
} from '../records/index.js';

export function changeRow(d: MarkerDecision): ChangeReport {
  const { file, line, setter, policy, current, candidate, reason } = d;
  return { file, line, setter, policy, old: current, new: candidate ?? '', reason };
}

export function keptRow(d: MarkerDecision): KeptReport {
  const { file, line, setter, policy, current, candidate, reason, detail } = d;
  return { file, line, setter, policy, current, candidate, reason, detail };
}
