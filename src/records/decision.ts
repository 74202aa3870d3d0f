/** A marker's decision: the one record the guard decides, `pawl run` reports and the store keeps. */

/** Why the guard wrote or kept a marker (SPEC §4, docs/guard.md). */
export type Reason =
  | 'no-candidate'
  | 'up-to-date'
  | 'pinned'
  | 'downgrade-blocked'
  | 'equivalent'
  | 'undecidable'
  | 'invalid-value'
  | 'unverified'
  | 'outside-window'
  | 'too-new'
  /** Not the guard's: the write it decided waits for the automation's commit batch (spec.git.commit.batch). */
  | 'batched'
  | 'candidate-missing'
  | 'upgrade'
  | 'retarget';

export type RunKind = 'run' | 'rollback' | 'release' | 'dry-run';

/**
 * One marker's decision in one run: the one record the guard decides (action, reason, detail),
 * `pawl run` reports (its change and kept rows are projections of it) and the store keeps.
 */
export interface Decision<R extends string = string> {
  automation: string;
  /** Relative to the repository root. */
  file: string;
  line: number;
  /** The marker's setter, `ns:name[:field]`. */
  setter: string;
  /** `ns/name` of the policy. */
  policy: string;
  /** The value in the file before the run. */
  current: string;
  /** `write`: the value written; `keep`: the policy's candidate tag (null when there is none). */
  candidate: string | null;
  reason: R;
  /** One sentence for a person. */
  detail: string;
  action: 'write' | 'keep';
}

export interface DecisionRecord extends Decision {
  id: number;
  runId: number;
  runKind: RunKind;
  /** When the run began. */
  at: Date;
}
