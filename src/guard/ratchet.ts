/**
 * The selection ratchet (SPEC §4 "Selection ratchet"): a policy's selection may only go
 * backwards when the registry has really lost the newer image, confirmed over several scans.
 * Pure and two-phase: when the step needs a HEAD it says so and decides nothing; the caller
 * HEADs and steps again with the answer (`runRatchet` does this loop over an async probe).
 */
import { createHash } from 'node:crypto';
import type { GuardSpec, ImagePolicy } from '../config/index.js';
import type { GuardEvent, Comparator } from './types.js';

export interface RatchetState {
  /** `policySpecHash` of the spec H was reached under. */
  specHash: string;
  /** H: the newest selection verified to exist. */
  highWater: string | null;
  highWaterAt: Date | null;
  /** A regression below a vanished H, waiting for `confirmations` agreeing scans over `window`. */
  pending: { candidate: string; count: number; firstAt: Date; lastAt: Date } | null;
}

export interface RatchetInput {
  state: RatchetState | null;
  specHash: string;
  /** The policy's selection from this scan; null when nothing passed the policy. */
  selected: string | null;
  /** False for an empty list, a failed page or any scan error. */
  scanOk: boolean;
  /** When the scan completed. Stepping twice with the same scan time counts it once. */
  now: Date;
  guard: GuardSpec;
  /** The policy's compare. */
  order: Comparator;
  /** HEAD of H; null when not asked. */
  highWaterExists: boolean | null;
  /** HEAD of the selection; null when not asked. Only asked before raising H to a new tag. */
  selectedExists?: boolean | null;
}

export interface RatchetResult {
  state: RatchetState;
  candidate: string | null;
  /** HEAD H and step again with `highWaterExists` (candidate and state are not decided yet). */
  needHeadOfHighWater: boolean;
  /** HEAD the selection and step again with `selectedExists` (candidate and state are not decided yet). */
  needHeadOfSelected: boolean;
  events: GuardEvent[];
}

/**
 * Hash of what decides which tags a policy can select: its image repository, policy and
 * filterTags, and the repository's exclusionList. The guard settings are left out on purpose:
 * changing `confirmations` does not make an old high-water mark meaningless.
 */
export function policySpecHash(
  spec: Pick<ImagePolicy['spec'], 'imageRepositoryRef' | 'policy' | 'filterTags'>,
  exclusionList: readonly string[],
): string {
  // Every pass hashes every policy (a daemon's pass of one changed image among 500 spent ~30 ms
  // on it); a loaded configuration's objects are not changed afterwards, so the hash is kept
  // with them, and a reload's new objects are hashed afresh. A spec is asked with its one
  // repository's list: one pair a spec (a WeakMap a spec was ~0.14 KB of a daemon's heap, issue 27).
  const kept = specHashes.get(spec);
  if (kept !== undefined && kept.list === exclusionList) return kept.hash;
  const hash = hashSpec(spec, exclusionList);
  specHashes.set(spec, { list: exclusionList, hash });
  return hash;
}

const specHashes = new WeakMap<object, { list: readonly string[]; hash: string }>();

function hashSpec(
  spec: Pick<ImagePolicy['spec'], 'imageRepositoryRef' | 'policy' | 'filterTags'>,
  exclusionList: readonly string[],
): string {
  const material = {
    imageRepositoryRef: spec.imageRepositoryRef,
    policy: spec.policy,
    filterTags: spec.filterTags ?? null,
    exclusionList: [...exclusionList],
  };
  return createHash('sha256').update(canonicalJson(material)).digest('hex');
}

export function ratchetStep(input: RatchetInput): RatchetResult {
  const { guard, now, selected } = input;
  const fresh: RatchetState = { specHash: input.specHash, highWater: null, highWaterAt: null, pending: null };
  // A changed spec makes H meaningless (e.g. a tag excluded on purpose); that is not an observation
  // of the registry, so it applies even when this scan failed.
  const state = input.state && input.state.specHash === input.specHash ? input.state : fresh;
  const done = (s: RatchetState, candidate: string | null, events: GuardEvent[] = []): RatchetResult => ({
    state: s,
    candidate,
    needHeadOfHighWater: false,
    needHeadOfSelected: false,
    events,
  });
  const ask = (what: 'high-water' | 'selected'): RatchetResult => ({
    state,
    candidate: null,
    needHeadOfHighWater: what === 'high-water',
    needHeadOfSelected: what === 'selected',
    events: [],
  });

  if (!input.scanOk || selected === null) {
    // No candidate, H kept. A broken scan also breaks a run of agreeing scans: a list flapping
    // between empty and stale must not add up to a regression.
    return done(state.pending ? { ...state, pending: null } : state, null);
  }

  // Flux's behaviour: whatever the policy selects. H still follows the selection for `pawl explain`.
  if (guard.downgrades === 'Allow') {
    const same = state.highWater === selected;
    return done(
      { ...state, highWater: selected, highWaterAt: same ? state.highWaterAt : now, pending: null },
      selected,
    );
  }

  const H = state.highWater;
  const cmp = H === null ? 1 : selected === H ? 0 : input.order(selected, H);

  if (cmp !== null && cmp >= 0) {
    if (cmp === 0) return done({ ...state, pending: null }, selected);
    // A new high: raise H only once the registry confirms the tag exists (a stale list can hold
    // deleted tags too). Without verification the listing is taken at its word.
    let exists: boolean | null = true;
    if (guard.verifyCandidate) exists = input.selectedExists ?? null;
    if (exists === null) return ask('selected');
    if (!exists) return done({ ...state, pending: null }, null);
    return done({ ...state, highWater: selected, highWaterAt: now, pending: null }, selected);
  }

  // The selection is older than H, or cannot be ordered against it: is H still there?
  if (input.highWaterExists === null) return ask('high-water');
  const h = H!;
  if (input.highWaterExists) {
    return done({ ...state, pending: null }, h, [
      { kind: 'stale-scan', selected, highWater: h, highWaterExists: true },
    ]);
  }

  // H is gone. Count scans in a row that agree on the same regression.
  const p = state.pending;
  let pending: NonNullable<RatchetState['pending']>;
  if (p && p.candidate === selected) {
    pending = now.getTime() > p.lastAt.getTime() ? { ...p, count: p.count + 1, lastAt: now } : p;
  } else {
    pending = { candidate: selected, count: 1, firstAt: now, lastAt: now };
  }
  const spanMs = pending.lastAt.getTime() - pending.firstAt.getTime();
  if (pending.count >= guard.staleScan.confirmations && spanMs >= guard.staleScan.window) {
    return done({ ...state, highWater: selected, highWaterAt: now, pending: null }, selected, [
      { kind: 'regression-accepted', from: h, to: selected, confirmations: pending.count, spanMs },
    ]);
  }
  return done({ ...state, pending }, null, [
    { kind: 'stale-scan', selected, highWater: h, highWaterExists: false, pendingCount: pending.count },
  ]);
}

/** Steps the ratchet, answering its HEAD questions with `head` (tag → exists). */
export async function runRatchet(
  input: Omit<RatchetInput, 'highWaterExists' | 'selectedExists'>,
  head: (tag: string) => Promise<boolean>,
): Promise<RatchetResult & { heads: Map<string, boolean> }> {
  const heads = new Map<string, boolean>();
  let step: RatchetInput = { ...input, highWaterExists: null, selectedExists: null };
  for (;;) {
    const r = ratchetStep(step);
    if (r.needHeadOfHighWater) {
      const h = r.state.highWater!;
      const e = heads.get(h) ?? (await head(h));
      heads.set(h, e);
      step = { ...step, highWaterExists: e };
    } else if (r.needHeadOfSelected) {
      const s = input.selected!;
      const e = heads.get(s) ?? (await head(s));
      heads.set(s, e);
      step = { ...step, selectedExists: e };
    } else {
      return { ...r, heads };
    }
  }
}

/** Serialisable form for the store (dates as ISO strings). */
export interface StoredRatchetState {
  specHash: string;
  highWater: string | null;
  highWaterAt: string | null;
  pending: { candidate: string; count: number; firstAt: string; lastAt: string } | null;
}

export function toStored(s: RatchetState): StoredRatchetState {
  return {
    specHash: s.specHash,
    highWater: s.highWater,
    highWaterAt: s.highWaterAt?.toISOString() ?? null,
    pending: s.pending
      ? { ...s.pending, firstAt: s.pending.firstAt.toISOString(), lastAt: s.pending.lastAt.toISOString() }
      : null,
  };
}

export function fromStored(s: StoredRatchetState): RatchetState {
  return {
    specHash: s.specHash,
    highWater: s.highWater,
    highWaterAt: s.highWaterAt ? new Date(s.highWaterAt) : null,
    pending: s.pending
      ? { ...s.pending, firstAt: new Date(s.pending.firstAt), lastAt: new Date(s.pending.lastAt) }
      : null,
  };
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    // Keys sorted as strings (Array.prototype.sort's default, UTF-16 order); no entry pairs made.
    const keys = Object.keys(o).sort();
    let out = '';
    for (let i = 0; i < keys.length; i++) {
      const x = o[keys[i]!];
      if (x === undefined) continue;
      out += `${out === '' ? '' : ','}${JSON.stringify(keys[i])}:${canonicalJson(x)}`;
    }
    return `{${out}}`;
  }
  return JSON.stringify(v);
}
