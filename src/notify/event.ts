/**
 * The events pawl tells people about, and Flux's event JSON (fluxcd/pkg apis/event/v1beta1
 * `Event`) they travel in. Field names, field order and encoding follow Flux's Go types, so a
 * receiver written for Flux's notification-controller reads pawl's events unchanged.
 */

/** The kinds of object pawl's events are about. */
export type EventObjectKind = 'ImageRepository' | 'ImagePolicy' | 'ImageUpdateAutomation';

export interface EventObject {
  kind: EventObjectKind;
  namespace: string;
  name: string;
}

/** Flux's event severities; pawl never sends `trace`. */
export type Severity = 'info' | 'error';

/**
 * Reasons, UpperCamelCase as Kubernetes and Flux spell event reasons. docs/alerts.md lists
 * each with its pawl decision code and message.
 */
export type EventReason =
  | 'DowngradeBlocked'
  | 'CandidateMissing'
  | 'StaleTagList'
  | 'StaleTagListEnded'
  | 'PinCreated'
  | 'PinLifted'
  | 'UpdateHeld'
  | 'SignatureUnverified'
  | 'UpdateFailed'
  | 'ScanFailing'
  | 'ScanRecovered'
  | 'UpgradeWritten'
  | 'PullRequestOpened';

export const EVENT_REASONS: readonly EventReason[] = [
  'DowngradeBlocked',
  'CandidateMissing',
  'StaleTagList',
  'StaleTagListEnded',
  'PinCreated',
  'PinLifted',
  'UpdateHeld',
  'SignatureUnverified',
  'UpdateFailed',
  'ScanFailing',
  'ScanRecovered',
  'UpgradeWritten',
  'PullRequestOpened',
];

/** One thing worth a person's attention, before routing to Alerts. */
export interface AlertEvent {
  object: EventObject;
  severity: Severity;
  reason: EventReason;
  /** The sentence pawl writes about it (the same words as `pawl run` and `pawl explain`). */
  message: string;
  /**
   * Keys as providers see them (Flux's notification-controller strips the object's API group
   * prefix before posting). `commit` is Flux's key for a Git commit.
   */
  metadata: Record<string, string>;
  at: Date;
}

/** corev1.ObjectReference as Flux marshals it (empty fields omitted). */
export interface InvolvedObject {
  kind: string;
  namespace: string;
  name: string;
  apiVersion?: string;
}

/** Flux's `Event` (event.toolkit.fluxcd.io v1beta1), field for field. */
export interface FluxEvent {
  involvedObject: InvolvedObject;
  severity: Severity;
  /** metav1.Time: RFC 3339, UTC, whole seconds. */
  timestamp: string;
  message: string;
  reason: string;
  metadata?: Record<string, string>;
  reportingController: string;
  reportingInstance?: string;
}

/** Flux's limit on `message` (the CRD's MaxLength). */
export const MAX_MESSAGE_LENGTH = 39_000;

/** metav1.Time's JSON form. */
export function goTime(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Builds the event in Flux's field order, with metadata keys sorted as Go marshals a map. */
export function fluxEvent(
  e: AlertEvent,
  opts: {
    apiVersion?: string;
    metadata: Record<string, string>;
    reportingController: string;
    reportingInstance?: string;
  },
): FluxEvent {
  const involvedObject: InvolvedObject = {
    kind: e.object.kind,
    namespace: e.object.namespace,
    name: e.object.name,
    ...(opts.apiVersion ? { apiVersion: opts.apiVersion } : {}),
  };
  const keys = Object.keys(opts.metadata).sort();
  const metadata: Record<string, string> = {};
  for (const k of keys) metadata[k] = opts.metadata[k]!;
  return {
    involvedObject,
    severity: e.severity,
    timestamp: goTime(e.at),
    message: e.message.length > MAX_MESSAGE_LENGTH ? e.message.slice(0, MAX_MESSAGE_LENGTH) : e.message,
    reason: e.reason,
    ...(keys.length > 0 ? { metadata } : {}),
    reportingController: opts.reportingController,
    ...(opts.reportingInstance ? { reportingInstance: opts.reportingInstance } : {}),
  };
}

/**
 * `json.Marshal`'s bytes for a value built in Go field order: Go escapes <, > and & (HTML
 * safety) and U+2028/U+2029, which JSON.stringify leaves as they are. The generic-hmac
 * signature is over exactly these bytes.
 */
export function goJson(value: unknown): Buffer {
  const s = JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  return Buffer.from(s, 'utf8');
}
