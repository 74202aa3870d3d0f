/**
 * The per-marker decision of SPEC §4, as a pure function: everything it needs (orders, build
 * times, pins, the HEAD of the candidate) is passed in, so `pawl run`, `pawl explain` and the
 * tests all see the same answer.
 */
import type { GuardSpec } from '../config/index.js';
import type { GuardVerdict, MarkerField, Comparator, OrderedBy, Pin, Reason } from './types.js';
import type { Gate } from './gates.js';
import { markerValueProblem, sameImageName } from './values.js';

export interface DecideInput {
  /** Parsed from the marker value by field (see `parseMarkerValue`); `tag`/`name` may be the paired line's. */
  current: { value: string; tag: string | null; name: string | null; digest?: string | null };
  candidate: { tag: string; name: string; digest?: string } | null;
  field: MarkerField;
  guard: GuardSpec;
  /** The policy's compare over tags. */
  order: Comparator;
  /**
   * Compare by build times; null when either is unknown. Receives tags, or digests where a value
   * carries no tag (`:digest` lines without a paired tag, `name@digest` images). Synchronous: the
   * caller reads build times (cached by digest) before deciding.
   */
  buildTimeOrder: Comparator;
  /** An active pin (pins.ts has already checked whether a new release lifted it). */
  pin: Pin | null;
  /** HEAD of the candidate; null when not checked yet. */
  candidateExists: boolean | null;
  /**
   * A gate holding the candidate now (`outside-window`, `too-new`; gates.ts): it turns a write
   * into a keep after every ordering row, before the HEAD of `candidate-missing`.
   */
  gate?: Gate | null;
  /**
   * `spec.verify`: the newest selected tag failed verification, with why; `candidate` is then
   * the newest verified tag below it (or null). Kept lines say so (`unverified`), writes too.
   */
  unverified?: { tag: string; why: string } | null;
  /** How to name the policy's order in sentences, e.g. `semver range 6.7.x`. */
  orderLabel?: string;
}

const BUILD_TIME_LABEL = 'image build time';

/** The string the marker would hold if the candidate were written (Flux's setter semantics). */
export function candidateValue(
  field: MarkerField,
  c: { tag: string; name: string; digest?: string },
): string {
  switch (field) {
    case 'image':
      return c.digest ? `${c.name}:${c.tag}@${c.digest}` : `${c.name}:${c.tag}`;
    case 'tag':
      return c.tag;
    case 'name':
      return c.name;
    case 'digest':
      return c.digest ?? '';
  }
}

export function decideMarker(input: DecideInput): GuardVerdict {
  const verdict = withUnverified(input, decideRows(input));
  const name = input.candidate?.name;
  // `ghcr.io/org/app:1.2.0 is already the candidate 1.2.0`: a long reference once is enough.
  if (input.field !== 'image' || !name || input.current.name !== name) return verdict;
  return { ...verdict, detail: referenceOnce(verdict.detail, name) };
}

/** Every mention of `name:` after the first reads as the tag alone. */
export function referenceOnce(sentence: string, name: string): string {
  let seen = false;
  return sentence.split(`${name}:`).reduce((out, part, i) => {
    if (i === 0) return part;
    const first = !seen;
    seen = true;
    return out + (first ? `${name}:` : '') + part;
  }, '');
}

function withUnverified(input: DecideInput, d: GuardVerdict): GuardVerdict {
  const u = input.unverified;
  if (!u) return d;
  const newest = `The newest tag ${u.tag} ${u.why}`;
  if (d.reason === 'no-candidate' && input.candidate === null)
    return keep('unverified', `${newest}, and no tag below it is verified; keeping ${input.current.value}.`);
  if (d.reason === 'up-to-date')
    return keep(
      'unverified',
      `${newest}; ${input.current.value} is already the newest verified tag.`,
      d.orderedBy,
    );
  if (d.action === 'write')
    return { ...d, detail: `${d.detail} (${newest}; this is the newest verified tag.)` };
  return d;
}

function decideRows(input: DecideInput): GuardVerdict {
  const { current, candidate: c, field, guard } = input;
  const V = current.value;
  const block = guard.downgrades === 'Block';
  const policyLabel = input.orderLabel ?? "the policy's order";

  // Row 1. A digest line has nothing to receive when the policy reflects no digest.
  if (c === null || (field === 'digest' && !c.digest)) {
    const why = c === null ? 'the policy has no candidate' : `the policy reflects no digest for ${c.tag}`;
    return keep('no-candidate', `${capital(why)}; keeping ${V}.`);
  }
  const C = candidateValue(field, c);

  // A value that is not an image reference (a tag with white space, `../`, YAML in it) can be
  // neither ordered nor trusted to name another image: retargeting it would write without any check.
  const invalid = markerValueProblem(field, V);
  if (invalid !== null) {
    return keep(
      'invalid-value',
      `The line's value ${JSON.stringify(V)} is not a valid ${field === 'image' ? 'image reference' : field} (${invalid}); keeping it rather than guess. Fix the line by hand, or pawl rollback to a tag.`,
    );
  }

  // A line naming (or paired with a line naming) another image is rewritten, as Flux does: tags
  // of another repository cannot be ordered against this policy's.
  const retarget = current.name !== null && !sameImageName(current.name, c.name);

  // Row 2.
  if (!retarget && isUpToDate(input, c)) return keep('up-to-date', `${V} is already the candidate ${C}.`);

  // Row 3. Pins hold people's intent; Allow mode is Flux's behaviour, which has none.
  if (block && input.pin && guard.manualEdits === 'Respect') {
    const p = input.pin;
    const who = p.kind === 'rollback' ? `pawl rollback by ${p.author.name}` : p.author.name;
    return keep(
      'pinned',
      `${V} was pinned by ${who} in commit ${p.commit.slice(0, 12)} (${p.time.toISOString()}, moved back from ${p.previous}${p.reason ? `, because: ${p.reason}` : ''}); candidate ${C} is not a release first seen after that, so ${V} is kept.`,
      p.orderedBy,
    );
  }

  if (retarget) {
    return verified(input, C, V, {
      action: 'write',
      reason: 'retarget',
      detail: `${V} names image ${current.name}, not the policy's ${c.name}; rewriting it to ${C} as Flux does.`,
    });
  }

  const cmp = compareCurrent(input, c);
  if (cmp.refs === 'digest-presence') {
    const what = c.digest ? `adds digest ${c.digest}` : 'drops the digest, as the policy reflects none';
    return verified(input, C, V, {
      action: 'write',
      reason: 'upgrade',
      detail: `Tag ${c.tag} is unchanged; writing ${C} over ${V} ${what}.`,
    });
  }
  const how = cmp.by === 'build-time' ? BUILD_TIME_LABEL : policyLabel;
  const by = (via: string) => (via ? '' : ` by ${how}`);
  const fellBack = cmp.by === 'build-time' && guard.compare !== 'BuildTime' && cmp.refs === 'tags';
  // Sentences start with a word, never with a value: capitalising a tag would misname it.
  const via = fellBack
    ? `The current ${cmp.v} cannot be ordered by ${policyLabel}; by ${BUILD_TIME_LABEL}, `
    : '';

  if (block) {
    // Rows 4–6 are the three outcomes of one comparison, in the table's order.
    if (cmp.value === null) {
      if (cmp.refs === 'same-tag-digests') {
        // Same tag, digest moved: the policy's order says equal and no build time says otherwise.
        return verified(input, C, V, {
          action: 'write',
          reason: 'upgrade',
          detail: `Tag ${c.tag} now points at ${c.digest}; build times cannot be read, so the digest is refreshed from ${V} to ${C}.`,
        });
      }
      return keep(
        'undecidable',
        guard.compare === 'BuildTime'
          ? `The build times of ${cmp.v} and ${cmp.c} cannot be read (compare: BuildTime); keeping ${V}.`
          : `The current ${cmp.v} cannot be ordered by ${policyLabel} and the build times of ${cmp.v} and ${cmp.c} cannot be read; keeping ${V}.`,
      );
    }
    if (cmp.value > 0)
      return keep(
        'downgrade-blocked',
        `${via ? `${via}current` : 'Current'} ${V} is newer than candidate ${C}${by(via)}; writing ${C} would be a downgrade, so ${V} is kept.`,
        cmp.by,
      );
    if (cmp.value === 0)
      return keep(
        'equivalent',
        `${via ? `${via}current` : 'Current'} ${V} and candidate ${C} are equally new${by(via)}; keeping ${V}.`,
        cmp.by,
      );
  }

  let detail: string;
  if (!block && cmp.value !== null && cmp.value > 0)
    detail = `downgrades: Allow, so ${C} is written over ${V} as the policy selects, although ${V} is newer by ${how}.`;
  else if (!block && cmp.value !== null && cmp.value === 0)
    detail = `downgrades: Allow, so ${C} is written over the equally new ${V} (by ${how}) as the policy selects.`;
  else if (!block && cmp.value === null)
    detail = `downgrades: Allow, so ${C} is written over ${V} as the policy selects (they cannot be ordered).`;
  else if (cmp.refs === 'same-tag-digests')
    detail = `Tag ${c.tag} now points at a newer image: ${C} replaces ${V} (by ${BUILD_TIME_LABEL}).`;
  else detail = `${via ? `${via}candidate` : 'Candidate'} ${C} is newer than current ${V}${by(via)}.`;
  return verified(input, C, V, { action: 'write', reason: 'upgrade', detail, orderedBy: cmp.by });
}

function isUpToDate(input: DecideInput, c: { tag: string; name: string; digest?: string }): boolean {
  const cur = input.current;
  switch (input.field) {
    case 'tag':
      return cur.value.trim() === c.tag;
    case 'name':
      return sameImageName(cur.value, c.name);
    case 'digest':
      return cur.value.trim() === c.digest;
    case 'image':
      // Spelling of the same repository is not churned; a digest present on one side only is.
      return cur.tag === c.tag && (cur.digest ?? undefined) === (c.digest ?? undefined);
  }
}

interface Comparison {
  value: number | null;
  by: OrderedBy;
  /** What was compared, for sentences. */
  v: string;
  c: string;
  /** `digest-presence`: same tag, a digest added or dropped as the policy's digest reflection says. */
  refs: 'tags' | 'digests' | 'same-tag-digests' | 'digest-presence';
}

function compareCurrent(input: DecideInput, c: { tag: string; name: string; digest?: string }): Comparison {
  const cur = input.current;
  const curDigest = cur.digest ?? null;
  // Same tag, different digest (a re-pushed tag, or a `:digest` line whose pair did not move):
  // only build times can say which image is newer.
  if (cur.tag !== null && cur.tag === c.tag && curDigest && c.digest) {
    return {
      value: input.buildTimeOrder(curDigest, c.digest),
      by: 'build-time',
      v: curDigest,
      c: c.digest,
      refs: 'same-tag-digests',
    };
  }
  if (cur.tag !== null && cur.tag === c.tag) {
    return { value: 0, by: 'policy', v: cur.tag, c: c.tag, refs: 'digest-presence' };
  }
  if (cur.tag === null && curDigest && input.field === 'digest' && c.digest) {
    return {
      value: input.buildTimeOrder(curDigest, c.digest),
      by: 'build-time',
      v: curDigest,
      c: c.digest,
      refs: 'digests',
    };
  }
  // No tag at all means `latest` to a container runtime; a digest names the image exactly.
  const v = cur.tag ?? curDigest ?? 'latest';
  if (input.guard.compare === 'BuildTime')
    return { value: input.buildTimeOrder(v, c.tag), by: 'build-time', v, c: c.tag, refs: 'tags' };
  const byPolicy = cur.tag === null ? null : input.order(v, c.tag);
  if (byPolicy !== null) return { value: byPolicy, by: 'policy', v, c: c.tag, refs: 'tags' };
  return { value: input.buildTimeOrder(v, c.tag), by: 'build-time', v, c: c.tag, refs: 'tags' };
}

/**
 * The rows every write passes, in every mode: the gates (`outside-window`, `too-new`), then
 * `candidate-missing` when `verifyCandidate` is on. Gates come first so a held line costs no HEAD.
 */
function verified(input: DecideInput, C: string, V: string, d: GuardVerdict): GuardVerdict {
  if (input.gate)
    return keep(input.gate.reason, `${input.gate.detail} Candidate ${C} waits; keeping ${V}.`, d.orderedBy);
  if (!input.guard.verifyCandidate) return d;
  if (input.candidateExists === false)
    return keep(
      'candidate-missing',
      `Candidate ${C} does not exist in the registry now (HEAD found no manifest); keeping ${V}.`,
      d.orderedBy,
    );
  if (input.candidateExists === null) return { ...d, needsCandidateCheck: true };
  return d;
}

function keep(reason: Reason, detail: string, orderedBy?: OrderedBy): GuardVerdict {
  return orderedBy ? { action: 'keep', reason, detail, orderedBy } : { action: 'keep', reason, detail };
}

function capital(s: string): string {
  return s.length === 0 ? s : s[0]!.toUpperCase() + s.slice(1);
}
