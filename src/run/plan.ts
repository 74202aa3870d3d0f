/**
 * The guard's per-marker decisions over a work tree (SPEC §4 "Per marker decision" and "Pins"):
 * which marked values pawl would write, and why each other one is kept. Shared by `pawl run`,
 * `--dry-run`, `pawl explain`, `pawl release`. Reads files, build times and Git history; writes
 * nothing.
 */
import { scanTree, type FileProblem, type ScannedFile, type Marker } from '../write/index.js';
import {
  candidateValue,
  decideMarker,
  parseMarkerValue,
  pinStatus,
  type PinInput,
  type PinStatus,
  type GuardVerdict,
  type Comparator,
  type Pin,
  type Gate,
} from '../guard/index.js';
import type { CompiledPolicy } from '../select/index.js';
import type { ImageFacts } from './facts.js';
import { lineHistory, releasedSince, type LineChange } from '../git/index.js';
import { refKey } from '../config/index.js';
import { SmallMap } from '../util/index.js';
import type { FactsSource, PolicyOutcome, PolicyOutcomes } from './policies.js';

export interface MarkerPlan {
  marker: Marker;
  /** `ns/name` of the marker's policy. */
  policy: string;
  outcome: PolicyOutcome;
  decision: GuardVerdict;
  /** The value written when `decision.action` is `write`. */
  value: string | null;
  pin: PinStatus | null;
}

export interface TreePlan {
  files: ScannedFile[];
  plans: MarkerPlan[];
  errors: FileProblem[];
  warnings: FileProblem[];
}

export interface PlanOptions {
  /** Policies that may be released now (`pawl release`): their pins are ignored. */
  release?: ReadonlySet<string>;
  /** The commit the checkout is at: history this process knows there is not asked again (git/known.ts). */
  head?: string;
  /** The working tree's seal (Workspace.untouched): a scan kept under it is the tree's. */
  seal?: string | null;
}

/**
 * Decides every marker under `updatePath` whose policy is one of `outcomes` (markers naming
 * other policies are left alone, as Flux does).
 */
export async function planTree(
  root: string,
  updatePath: string,
  outcomes: PolicyOutcomes,
  opts: PlanOptions = {},
): Promise<TreePlan> {
  const { facts } = outcomes;
  const scan = await scanTree(root, updatePath, { seal: opts.seal ?? null });
  const plans: MarkerPlan[] = [];
  for (const f of scan.files) {
    for (const marker of f.markers) {
      const policy = refKey(marker.policy);
      const outcome = outcomes.byName.get(policy);
      if (!outcome) continue;
      const gate = gateOf(outcome, policy, opts);
      const key = verdictKey(marker, null, gate);
      plans.push({
        marker,
        policy,
        outcome,
        // Most markers of a daemon's pass are answered from the outcome's verdicts: without an
        // await, a pass over 1,000 markers makes no promise for them.
        decision:
          (key === null ? undefined : outcome.verdicts.get(key)) ??
          (await decide(marker, outcome, facts, null, gate, key)),
        value: null,
        pin: null,
      });
    }
  }

  // Pins only matter where a value could move: read Git history for those lines alone, in one
  // batch per file, so a steady-state pass runs no blame at all.
  const needHistory = plans.filter(
    (p) =>
      // Rows the table checks before `pinned`: a pin cannot change them.
      !['no-candidate', 'invalid-value', 'up-to-date'].includes(p.decision.reason) &&
      p.outcome.policy.spec.guard.manualEdits === 'Respect' &&
      p.outcome.policy.spec.guard.downgrades === 'Block' &&
      !opts.release?.has(p.policy),
  );
  if (needHistory.length > 0) {
    const byFile = new Map<string, MarkerPlan[]>();
    for (const p of needHistory) byFile.set(p.marker.file, [...(byFile.get(p.marker.file) ?? []), p]);
    const history = await lineHistory(
      root,
      [...byFile].map(([file, ps]) => ({
        file,
        // The text at HEAD is already in hand; history need not read it again.
        ...textOf(scan.files, file),
        lines: ps.map((p) => ({
          line: p.marker.line,
          setter: p.marker.setter,
          field: p.marker.field,
          value: p.marker.value,
        })),
      })),
      // Both callers plan a workspace pawl has just checked out and cleaned.
      { checkedOut: true, ...(opts.head ? { head: opts.head } : {}) },
    );
    for (const p of needHistory) {
      const change = history.get(p.marker.file)?.get(p.marker.line) ?? null;
      p.pin = await pinOf(root, p, facts, change);
      if (p.pin.state === 'pinned' && p.pin.pin)
        p.decision = await decide(p.marker, p.outcome, facts, p.pin.pin, gateOf(p.outcome, p.policy, opts));
    }
  }

  for (const p of plans) {
    if (p.decision.action === 'write' && p.outcome.candidate)
      p.value = candidateValue(p.marker.field, p.outcome.candidate);
    else if (p.decision.reason === 'too-new') await olderButOldEnough(p, facts);
  }
  return { files: scan.files, plans, errors: scan.errors, warnings: scan.warnings };
}

/**
 * The gate on a policy's candidate for this plan: the window first (it holds every write), then
 * the minimum age. `pawl release` of the policy passes both: a person asked for the write.
 */
function gateOf(outcome: PolicyOutcome, policy: string, opts: PlanOptions): Gate | null {
  if (opts.release?.has(policy)) return null;
  return outcome.gates.window ?? outcome.gates.age?.gate ?? null;
}

/**
 * A line held `too-new` may move to the newest tag that is old enough, decided by the whole
 * guard again (so never below the line's value, never past a pin); when that is no write, the
 * line keeps its `too-new` decision. A pinned line is left alone: its pin was judged against the
 * held candidate, not this older tag.
 */
async function olderButOldEnough(p: MarkerPlan, facts: FactsSource): Promise<void> {
  const age = p.outcome.gates.age;
  const older = age?.oldEnough;
  if (!age || !older || p.pin?.pin) return;
  // Verdicts are kept by the marker's value for the outcome's own candidate: a new map here.
  const outcome: PolicyOutcome = { ...p.outcome, candidate: older, verdicts: new SmallMap() };
  const d = await decide(p.marker, outcome, facts, null, null);
  if (d.action !== 'write') return;
  p.decision = { ...d, detail: `${age.gate.detail} Meanwhile: ${d.detail}` };
  p.value = candidateValue(p.marker.field, older);
}

function textOf(files: readonly ScannedFile[], file: string): { text?: string } {
  const f = files.find((x) => x.file === file);
  return f ? { text: f.text } : {};
}

/** The pass's facts of the outcome's repository; null when there is none to ask (a rollback's outcome). */
function factsOf(source: FactsSource, outcome: PolicyOutcome): ImageFacts | null {
  return source.forRepository(refKey(outcome.policy.spec.imageRepositoryRef));
}

async function pinOf(
  root: string,
  p: MarkerPlan,
  source: FactsSource,
  change: LineChange | null,
): Promise<PinStatus> {
  const { outcome } = p;
  const facts = factsOf(source, outcome);
  const compiled = outcome.compiled;
  // Only a line whose policy selected a candidate is asked about pins (needHistory).
  if (!facts || !compiled)
    throw new Error(`internal error: the pin of ${p.marker.file}:${p.marker.line} has no policy facts`);
  const candidate = outcome.candidate?.tag ?? null;
  const wanted = new Set<string>();
  let input: PinInput = {
    history: change,
    order: policyOrder(compiled, facts),
    buildTimeOrder: facts.buildTimeOrder(wanted),
    candidate,
    // Only a pin asks when its candidate was first seen (a release after the pin lifts it):
    // read from the store for pinned lines alone, not for every line a cold pass moves.
    candidateFirstSeen: null,
    candidateInitial: false,
    released: false,
    manualEdits: outcome.policy.spec.guard.manualEdits,
    compare: outcome.policy.spec.guard.compare,
  };
  let status = pinStatus(input);
  if (wanted.size > 0) {
    await facts.loadBuildTimes(wanted);
    input = { ...input, buildTimeOrder: facts.buildTimeOrder(new Set()) };
    status = pinStatus(input);
  }
  if (status.state === 'pinned' && candidate !== null) {
    const seen = await facts.firstSeen(candidate);
    input = { ...input, candidateFirstSeen: seen.firstSeen, candidateInitial: seen.initial };
    status = pinStatus(input);
  }
  if (status.state === 'pinned' && change && (await releasedSince(root, change.commit, p.policy))) {
    status = pinStatus({ ...input, released: true });
  }
  return status;
}

/**
 * `decideMarker` is synchronous and pure; the I/O it may need (build times, the HEAD of the
 * candidate) is done here, between rounds, only when the table asks for it.
 */
async function decide(
  marker: Marker,
  outcome: PolicyOutcome,
  source: FactsSource,
  pin: Pin | null,
  gate: Gate | null,
  key: string | null = verdictKey(marker, pin, gate),
): Promise<GuardVerdict> {
  const { policy, compiled, candidate } = outcome;
  const known = key === null ? undefined : outcome.verdicts.get(key);
  if (known) return known;
  const facts = factsOf(source, outcome);
  const current = parseMarkerValue(marker.field, marker.value);
  let candidateExists: boolean | null = null;
  for (let round = 0; round < 4; round++) {
    const wanted = new Set<string>();
    const d = decideMarker({
      current,
      candidate,
      field: marker.field,
      guard: policy.spec.guard,
      order: compiled ? policyOrder(compiled, facts) : () => null,
      buildTimeOrder: facts ? facts.buildTimeOrder(wanted) : () => null,
      pin,
      candidateExists,
      gate,
      unverified: outcome.unverified,
      orderLabel: orderLabel(outcome),
    });
    if (wanted.size > 0 && facts) {
      await facts.loadBuildTimes(wanted);
      continue;
    }
    if (d.needsCandidateCheck && candidate && facts) {
      candidateExists = await facts.exists(candidate.tag);
      continue;
    }
    if (key !== null && round === 0 && OUTCOME_ONLY.has(d.reason)) outcome.verdicts.set(key, d);
    return d;
  }
  throw new Error(`internal error: the decision for ${marker.file}:${marker.line} did not settle`);
}

/**
 * The table's first rows (no candidate, a value that is no reference, the candidate itself) read
 * neither orders, pins nor the registry: the same value under the same outcome gets the same
 * verdict, which a daemon's pass over 500 unchanged lines takes from the kept outcome. Null when
 * a pin or a gate may decide. An outcome's candidate and unverified tag are fixed when it is made
 * (a copy with another candidate gets a map of its own), so the key is the marker's alone: with
 * the candidate in it, each kept outcome held ~0.2 KB of key (issue 27).
 */
function verdictKey(marker: Marker, pin: Pin | null, gate: Gate | null): string | null {
  if (pin !== null || gate !== null) return null;
  return `${marker.field}\n${marker.value}`;
}

/** Verdicts that follow from the marker's value and the outcome alone (`decide`). */
const OUTCOME_ONLY: ReadonlySet<string> = new Set(['no-candidate', 'invalid-value', 'up-to-date']);

/** The policy's compare; `newestBuild` reads the build times loaded so far. */
function policyOrder(compiled: CompiledPolicy, facts: ImageFacts | null): Comparator {
  if (compiled.strategy !== 'newestBuild' || !facts) return (a, b) => compiled.compare(a, b);
  return (a, b) => compiled.compare(a, b, { buildTimes: facts.knownBuildTimes() });
}

function orderLabel(o: PolicyOutcome): string {
  const p = o.policy.spec.policy;
  switch (p.strategy) {
    case 'semver':
      return `semver (range ${p.range})`;
    case 'numerical':
      return `numerical order (${p.order})`;
    case 'alphabetical':
      return `alphabetical order (${p.order})`;
    case 'newestBuild':
      return 'image build time';
  }
}
