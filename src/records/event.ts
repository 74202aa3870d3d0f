/** The guard's events as the store keeps them: the guard makes them, the daemon and the dashboard read them. */

export type EventKind =
  'downgrade-blocked' | 'stale-scan' | 'regression-accepted' | 'candidate-missing' | 'pin' | (string & {});

/** An event to record (`StoreWrite.events`). */
export interface StoredEvent {
  at: Date;
  kind: EventKind;
  policy?: string;
  repository?: string;
  detail: Record<string, unknown>;
}

/** A recorded event, as the store gives it back. */
export interface EventRecord {
  id: number;
  at: Date;
  kind: string;
  policy: string | null;
  repository: string | null;
  detail: Record<string, unknown>;
}
