/** Shared shapes of the guard (SPEC §4): decisions, pins and the events the store records. */

import type { ImageField } from '../image/index.js';
import type { Decision as DecisionRow, Reason } from '../records/index.js';

/** The part of the image a marker sets (`:tag`, `:name`, `:digest`, or the whole reference): image/'s. */
export type MarkerField = ImageField;

export type { Reason };

/** How two values were ordered: the policy's own order, or image build times. */
export type OrderedBy = 'policy' | 'build-time';

/**
 * The guard's verdict on one marker: `action`, `reason` and `detail` are the fields of the one
 * decision record that runs report and the store keeps (records' Decision, narrowed to Reason).
 */
export interface GuardVerdict extends Pick<DecisionRow<Reason>, 'action' | 'reason' | 'detail'> {
  /** Which order decided (absent when no ordering was needed). */
  orderedBy?: OrderedBy;
  /**
   * Set on a `write` decided without the HEAD that `verifyCandidate` requires: the caller
   * must HEAD the candidate and decide again with `candidateExists`. Never set on `keep`.
   */
  needsCandidateCheck?: boolean;
}

/** A compare function: >0 when a is newer, 0 equally new, null when the two cannot be ordered. */
export type Comparator = (a: string, b: string) => number | null;

/** The last commit that changed a marked line, as git/history.ts reads it: what pins are made of. */
export interface LineChange {
  /** Path at HEAD, relative to the repository root. */
  file: string;
  line: number;
  setter: string;
  field: MarkerField;
  /** The marker's value at HEAD, which this commit wrote. */
  value: string;
  /** The marker's value before the commit; null when the commit added the line (not a pin). */
  previous: string | null;
  commit: string;
  /** The first parent the line was compared with; null for a root commit. */
  parent: string | null;
  author: { name: string; email: string };
  authorTime: Date;
  /** Committer time: when the change entered history. Pins compare first-seen times with it. */
  time: Date;
  subject: string;
  trailers: { key: string; value: string }[];
}

/** A marked line held by a person (SPEC §4 "Pins"). Produced by pins.ts from Git history. */
export interface Pin {
  /** The value the line is pinned at (the marker's value at HEAD). */
  value: string;
  /** The value before the pinning commit. */
  previous: string;
  commit: string;
  author: { name: string; email: string };
  /** Committer time of the pinning commit: releases first seen after it lift the pin. */
  time: Date;
  subject: string;
  /** `rollback`: a commit with pawl's rollback trailers; `manual`: a person's backwards edit. */
  kind: 'rollback' | 'manual';
  /** `Pawl-Reason` of a rollback commit. */
  reason?: string;
  /** How the backwards move was established (absent for a rollback commit that could not be ordered). */
  orderedBy?: OrderedBy;
}

/**
 * Events the store records (`StoreWrite.events`, through `toStoreEvent`); the daemon exposes them
 * as metrics and on the dashboard.
 * The guard knows no policy names or files in its pure steps; the caller fills `policy`
 * (and, for marker events, `file`/`line`) via the constructors in events.ts.
 */
export type GuardEvent =
  | {
      kind: 'stale-scan';
      policy?: string;
      selected: string;
      highWater: string;
      highWaterExists: boolean;
      pendingCount?: number;
    }
  | {
      kind: 'regression-accepted';
      policy?: string;
      from: string;
      to: string;
      confirmations: number;
      spanMs: number;
    }
  | ({ kind: 'downgrade-blocked' } & MarkerEventFields)
  | ({ kind: 'candidate-missing' } & MarkerEventFields)
  | ({ kind: 'pin'; commit: string } & MarkerEventFields);

/** What every event about one marked line carries (`current`: its value; `detail`: in words). */
interface MarkerEventFields {
  policy?: string;
  file?: string;
  line?: number;
  current: string;
  candidate: string;
  detail: string;
}

export type GuardEventKind = GuardEvent['kind'];
