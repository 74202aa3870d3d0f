/**
 * The status Flux's image controllers write, computed from what pawl did: pure functions from a
 * scan, a policy's selection and an automation's pass to the `status` of ImageRepository,
 * ImagePolicy and ImageUpdateAutomation, in the schemas of Flux's v1 CRDs. Reasons and messages
 * are Flux's (image-reflector-controller, image-automation-controller, fluxcd/pkg/apis/meta), so
 * that `flux get images`, `kubectl wait` and notification-controller read pawl as they read Flux.
 */
import { normalizedName } from '../image/index.js';
import type { AutomationReport, ScanReport } from '../records/index.js';

export interface Condition {
  type: 'Ready' | 'Reconciling' | 'Stalled';
  status: 'True' | 'False' | 'Unknown';
  observedGeneration: number;
  /** RFC 3339, seconds: the schema's `date-time`. */
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** Flux's reasons (fluxcd/pkg/apis/meta and the controllers' api/v1 packages). */
export const REASONS = {
  succeeded: 'Succeeded',
  failure: 'Failure',
  progressing: 'Progressing',
  progressingWithRetry: 'ProgressingWithRetry',
  readOperationFailed: 'ReadOperationFailed',
  dependencyNotReady: 'DependencyNotReady',
  imageUrlInvalid: 'ImageURLInvalid',
  accessDenied: 'AccessDenied',
  gitOperationFailed: 'GitOperationFailed',
  /** image-reflector-controller's reason for a policy it cannot evaluate. */
  invalidPolicy: 'InvalidPolicy',
  /** What pawl's loader refuses beyond the CRD's schema (no Flux reason names it). */
  invalidSpec: 'InvalidSpec',
} as const;

export interface ImageRef {
  name: string;
  tag: string;
  digest?: string;
}

/** What a status function needs of the API object beside pawl's result. */
export interface ObjectState {
  generation: number;
  /** The status as read from the server, to keep transition times and previous refs. */
  previous?: { conditions?: readonly Condition[]; [k: string]: unknown };
  /** `reconcile.fluxcd.io/requestedAt`, when set: reported handled. */
  requestedAt?: string;
  now: Date;
}

const stamp = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Conditions as Flux's `conditions.Set` leaves them: a condition keeps its
 * lastTransitionTime while its status does not change; conditions not given are removed.
 */
export function conditions(
  state: ObjectState,
  wanted: readonly Pick<Condition, 'type' | 'status' | 'reason' | 'message'>[],
): Condition[] {
  return wanted.map((w) => {
    const before = state.previous?.conditions?.find((c) => c.type === w.type);
    return {
      ...w,
      observedGeneration: state.generation,
      lastTransitionTime: before && before.status === w.status ? before.lastTransitionTime : stamp(state.now),
    };
  });
}

type Wanted = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

function ready(ok: boolean, reason: string, message: string): Wanted[] {
  const c: Wanted[] = [{ type: 'Ready', status: ok ? 'True' : 'False', reason, message }];
  // A failure that will be retried leaves Reconciling True (Flux's result finalizer).
  if (!ok)
    c.push({
      type: 'Reconciling',
      status: 'True',
      reason: REASONS.progressingWithRetry,
      message,
    });
  return c;
}

const common = (state: ObjectState) => ({
  observedGeneration: state.generation,
  ...(state.requestedAt !== undefined ? { lastHandledReconcileAt: state.requestedAt } : {}),
});

/** go-containerregistry's `Context().String()`: Docker Hub is `index.docker.io`. */
export function canonicalImageName(image: string): string {
  const n = normalizedName(image);
  return n.startsWith('docker.io/') ? `index.${n}` : n;
}

/** Flux keeps the ten greatest tags by plain string order, greatest first. */
export function latestTags(tags: readonly string[]): string[] {
  return [...tags].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0)).slice(0, 10);
}

export interface RepositoryScan {
  image: string;
  exclusionList: readonly string[];
  report: ScanReport;
  /** The tags of the last good scan (after the exclusion list), when there was one. */
  tags?: readonly string[];
  scanTime?: Date;
  /** Flux's `revision`: a checksum of the tag list, when pawl has one. */
  revision?: string;
}

/** `status` of an ImageRepository after a scan; undefined when suspended (Flux writes nothing). */
export function imageRepositoryStatus(
  state: ObjectState,
  scan: RepositoryScan,
): Record<string, unknown> | undefined {
  if (scan.report.suspended) return undefined;
  const base = {
    ...common(state),
    canonicalImageName: canonicalImageName(scan.image),
    observedExclusionList: [...scan.exclusionList],
  };
  const last =
    scan.tags !== undefined
      ? {
          lastScanResult: {
            tagCount: scan.tags.length,
            ...(scan.scanTime ? { scanTime: stamp(scan.scanTime) } : {}),
            ...(scan.tags.length > 0 ? { latestTags: latestTags(scan.tags) } : {}),
            ...(scan.revision ? { revision: scan.revision } : {}),
          },
        }
      : {};
  if (scan.report.error !== null) {
    return {
      ...base,
      ...last,
      conditions: conditions(
        state,
        ready(false, REASONS.readOperationFailed, `scan failed: ${scan.report.error}`),
      ),
    };
  }
  return {
    ...base,
    ...last,
    conditions: conditions(
      state,
      ready(true, REASONS.succeeded, `successful scan: found ${scan.report.tags} tags`),
    ),
  };
}

export interface PolicySelection {
  /** `spec.image` of the ImageRepository the policy reads. */
  image: string;
  /** The candidate the policy selects after the guard's ratchet; null when there is none. */
  candidate: string | null;
  digest?: string;
  error: string | null;
  /** Why the error is the repository's, not the policy's (it is missing, or not scanned yet). */
  dependencyNotReady?: boolean;
  /** What the guard kept instead of the candidate, for the Ready message. */
  kept?: { current: string; reason: string; detail: string };
}

/** Flux's `composeImagePolicyReadyMessage`, plus what the guard kept. */
function policyMessage(
  latest: ImageRef,
  previous: ImageRef | undefined,
  kept: PolicySelection['kept'],
): string {
  let msg = `Latest image tag for ${latest.name} resolved to ${latest.tag}`;
  if (latest.digest) msg += ` with digest ${latest.digest}`;
  if (previous && !sameRef(previous, latest)) {
    msg += ` (previously ${previous.name}:${previous.tag}${previous.digest ? `@${previous.digest}` : ''})`;
  }
  if (kept) msg += `; pawl's guard kept ${kept.current} (${kept.reason}: ${kept.detail})`;
  return msg;
}

const sameRef = (a: ImageRef, b: ImageRef): boolean =>
  a.name === b.name && a.tag === b.tag && (a.digest ?? '') === (b.digest ?? '');

function refOf(v: unknown): ImageRef | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  const r = v as Record<string, unknown>;
  if (typeof r.name !== 'string' || typeof r.tag !== 'string') return undefined;
  return {
    name: r.name,
    tag: r.tag,
    ...(typeof r.digest === 'string' && r.digest ? { digest: r.digest } : {}),
  };
}

/**
 * `status` of an ImagePolicy. `latestRef` is the policy's candidate (docs/kubernetes.md): what
 * Flux would report, so tools that read it see the registry's newest; the guard's verdict on the
 * files is in the Ready message. Like Flux, `observedPreviousRef` moves only when latestRef does.
 */
export function imagePolicyStatus(state: ObjectState, sel: PolicySelection): Record<string, unknown> {
  const before = refOf(state.previous?.latestRef);
  const beforePrev = refOf(state.previous?.observedPreviousRef);
  if (sel.error !== null || sel.candidate === null) {
    const reason = sel.dependencyNotReady ? REASONS.dependencyNotReady : REASONS.failure;
    const message = sel.error ?? 'no tag matches the policy';
    return {
      ...common(state),
      ...(before ? { latestRef: before } : {}),
      ...(beforePrev ? { observedPreviousRef: beforePrev } : {}),
      conditions: conditions(state, ready(false, reason, message)),
    };
  }
  const latest: ImageRef = {
    name: sel.image,
    tag: sel.candidate,
    ...(sel.digest ? { digest: sel.digest } : {}),
  };
  const moved = !before || !sameRef(before, latest);
  const previous = moved ? before : beforePrev;
  return {
    ...common(state),
    latestRef: latest,
    ...(previous ? { observedPreviousRef: previous } : {}),
    conditions: conditions(state, ready(true, REASONS.succeeded, policyMessage(latest, previous, sel.kept))),
  };
}

export interface AutomationPass {
  report: AutomationReport;
  /** When the pass ran. */
  runTime: Date;
  /** The policies the automation applied, by policy name (Flux's key), with their refs. */
  policies: Readonly<Record<string, ImageRef>>;
  /** The branch pushed to, for the Ready message. */
  branch?: string;
}

/** `status` of an ImageUpdateAutomation after a pass; `lastPush*` only move on a push. */
export function imageUpdateAutomationStatus(
  state: ObjectState,
  pass: AutomationPass,
): Record<string, unknown> {
  const { report } = pass;
  const base = {
    ...common(state),
    lastAutomationRunTime: stamp(pass.runTime),
    observedPolicies: { ...pass.policies },
  };
  if (report.result === 'failed') {
    return {
      ...base,
      ...keepPush(state),
      conditions: conditions(
        state,
        ready(false, REASONS.gitOperationFailed, report.error ?? 'the automation failed'),
      ),
    };
  }
  if (report.result === 'pushed' && report.commit) {
    const branch = report.branch ?? pass.branch ?? '';
    return {
      ...base,
      lastPushCommit: report.commit,
      lastPushTime: stamp(pass.runTime),
      conditions: conditions(
        state,
        ready(true, REASONS.succeeded, `pushed commit '${report.commit.slice(0, 7)}' to branch '${branch}'`),
      ),
    };
  }
  return {
    ...base,
    ...keepPush(state),
    conditions: conditions(state, ready(true, REASONS.succeeded, 'repository up-to-date')),
  };
}

function keepPush(state: ObjectState): Record<string, unknown> {
  const p = state.previous ?? {};
  return {
    ...(typeof p.lastPushCommit === 'string' ? { lastPushCommit: p.lastPushCommit } : {}),
    ...(typeof p.lastPushTime === 'string' ? { lastPushTime: p.lastPushTime } : {}),
  };
}

/**
 * `status` of an object pawl left out of its configuration. Invalid itself: `Stalled` (retrying
 * cannot help until its spec changes), as Flux marks an invalid spec; needing a skipped object:
 * `DependencyNotReady`, retried. Refs and times of the last good run are kept.
 */
export function skippedStatus(
  state: ObjectState,
  skipped: { kind: string; message: string; dependency: boolean },
): Record<string, unknown> {
  const wanted: Wanted[] = skipped.dependency
    ? ready(false, REASONS.dependencyNotReady, skipped.message)
    : [
        {
          type: 'Ready',
          status: 'False',
          reason: skipped.kind === 'ImagePolicy' ? REASONS.invalidPolicy : REASONS.invalidSpec,
          message: skipped.message,
        },
        {
          type: 'Stalled',
          status: 'True',
          reason: skipped.kind === 'ImagePolicy' ? REASONS.invalidPolicy : REASONS.invalidSpec,
          message: skipped.message,
        },
      ];
  return { ...common(state), conditions: conditions(state, wanted) };
}
