/**
 * Select (policy) and the selection ratchet of the guard, per ImagePolicy, from the tags the
 * store holds for its repository. A policy whose repository's last scan failed, or whose list
 * was empty, has no candidate: pawl never writes from a list it does not trust.
 */
import { formatDuration, refKey, type Config, type ImagePolicy } from '../config/index.js';
import { sharedPolicy, type CompiledPolicy, type Selection } from '../select/index.js';
import {
  policySpecHash,
  ratchetStep,
  runRatchet,
  toStoreEvent,
  withPolicy,
  oldEnoughAt,
  when,
  windowGate,
  type Gate,
  type RatchetInput,
  type RatchetState,
  type GuardEvent,
  type GuardVerdict,
} from '../guard/index.js';
import type { StoredEvent, ScanRecord } from '../records/index.js';
import type {
  LatestScans,
  PolicyState,
  SelectionWrite,
  Store,
  StoreWrite,
  TagDigestWrite,
  VerifiedCache,
} from '../store/index.js';
import { verifierFor, verifyDigest, type ScanClients, type Verifier } from '../scan/index.js';
import { errorMessage, SmallMap, SortedTable, sortedUnique, type Logger } from '../util/index.js';
import { ImageFacts, type FactsStore } from './facts.js';
import type { PolicyReport } from './report.js';

export interface Candidate {
  tag: string;
  /** The repository's image as written in `spec.image`. */
  name: string;
  digest?: string;
}

export interface PolicyOutcome {
  /** `ns/name`. */
  name: string;
  policy: ImagePolicy;
  compiled: CompiledPolicy | null;
  /**
   * The policy's selection, for a read-only evaluation (`pawl explain`). A pass's outcome holds
   * none once the policy is evaluated: what follows from it is in `candidate`, `error`, the
   * ratchet and the record, and nothing after the evaluation reads it. Every policy's ranked
   * list, held until the pass ended, was the largest part of a pass's memory with thousands of
   * tags; its best candidate alone was still ~0.2 KB of each of a daemon's kept outcomes
   * (issue 27).
   */
  selection: Selection | null;
  /** After the ratchet: what markers may be moved to. */
  candidate: Candidate | null;
  ratchet: RatchetState | null;
  /**
   * `spec.verify`: the newest tag the policy selected when it failed verification (then
   * `candidate` is the newest verified tag below it, or null), with why; null when it passed.
   */
  unverified: { tag: string; why: string } | null;
  error: string | null;
  /**
   * Gates holding the candidate at this evaluation's time (docs/gates.md). `age.oldEnough` is
   * the newest tag the policy selects among those first seen at least `minimumAge` ago, when it
   * is older than the held candidate: what a line may move to meanwhile (through the guard).
   */
  gates: { window: Gate | null; age: { gate: Gate; oldEnough: Candidate | null } | null };
  /** What the ratchet saw this time (stale lists, accepted regressions). */
  events: readonly GuardEvent[];
  /** What the store should keep of this evaluation (null when read-only); see `policyWrites`. */
  record: {
    state: PolicyState | null;
    events: readonly StoredEvent[];
    selection: SelectionWrite | null;
  } | null;
  /**
   * The scans this evaluation read (its repository's newest finished and newest good scan ids),
   * and whether evaluating again from the state it leaves, on those scans, gives this outcome
   * without a question to the registry or the clock (`settled`): what a daemon may keep
   * (outcome-cache.ts). Null when it read no scan.
   */
  basis: { scans: string; settled: boolean } | null;
  /**
   * Markers' verdicts that follow from this outcome alone (plan.ts `decide`), by the marker's
   * value: shared by the copies a daemon's later passes make of a kept outcome, new with each
   * evaluation.
   */
  verdicts: SmallMap<string, GuardVerdict>;
}

/**
 * Where a plan asks about a policy's repository (HEADs before a write, build times, first-seen
 * times): the pass's FactsBook. Asked for by the repository's key when a marker needs it, not
 * held by each outcome: a daemon's pass of 10,000 policies made an ImageFacts (~0.4 KB with its
 * entry in the book) for each, most of them never asked anything (issue 27).
 */
export interface FactsSource {
  forRepository(key: string): ImageFacts | null;
}

/** For outcomes that ask the registry nothing (a rollback's chosen tag). */
export const NO_FACTS: FactsSource = { forRepository: () => null };

/** The outcomes an automation's plan reads, by policy (`ns/name`), and where it asks about their repositories. */
export interface PolicyOutcomes {
  /** Each policy's outcome by its `namespace/name` (a Map, or a pass's SortedTable). */
  byName: { get(name: string): PolicyOutcome | undefined };
  facts: FactsSource;
}

/** The store as evaluating policies reads it (in batches, `FactsBook.prefetch`), and the facts below. */
export type PolicyStore = FactsStore &
  Pick<
    Store,
    | 'policyStates'
    | 'latestScans'
    | 'currentTagsOf'
    | 'getPolicyState'
    | 'lastFinishedScan'
    | 'currentTags'
    | 'verifiedCache'
  >;

export interface PolicyDeps {
  config: Config;
  store: PolicyStore;
  clients: ScanClients;
  log: Logger;
  now: () => Date;
  /** A daemon's one copy of each latest scan (OutcomeCache.shareScans); a pass's own otherwise. */
  shareScans?: (names: readonly string[], pairs: LatestScans[]) => void;
}

/** A repository's latest scans when it has none. */
export const NO_SCANS: LatestScans = Object.freeze({ finished: null, good: null });

/**
 * The latest scans of `names`, in their order, each pair shared through `share` (a daemon's one
 * copy of each, OutcomeCache.shareScans).
 */
export async function readLatestScans(
  store: Pick<Store, 'latestScans'>,
  names: readonly string[],
  share?: (names: readonly string[], pairs: LatestScans[]) => void,
): Promise<LatestScans[]> {
  const read = await store.latestScans(names);
  // A store answering the names asked in order answers with a table over them: its values are
  // the pairs, without 10,000 lookups.
  const pairs =
    (read instanceof SortedTable ? read.valuesIfKeys(names) : null) ??
    names.map((n) => read.get(n) ?? NO_SCANS);
  share?.(names, pairs);
  return pairs;
}

/**
 * The per-pass view of the store for policies: ImageFacts memoised per repository (so policies
 * sharing a repository share HEADs), and the policy states, last scans and tag lists a pass
 * needs, read in a few batches (`prefetch`) instead of several queries per policy.
 */
export class FactsBook implements FactsSource {
  private readonly byRepo = new Map<string, ImageFacts>();
  private states: Map<string, PolicyState> | null = null;
  private scans: SortedTable<LatestScans> | null = null;
  private tags: Map<string, string[]> | null = null;
  constructor(private readonly deps: PolicyDeps) {}

  forRepository(key: string): ImageFacts | null {
    let f = this.byRepo.get(key);
    if (f) return f;
    const repo = this.deps.config.imageRepositories.get(key);
    if (!repo) return null;
    f = new ImageFacts(repo, key, this.deps.clients, this.deps.store);
    this.byRepo.set(key, f);
    return f;
  }

  /** Reads what evaluating these policies needs, in three batches. Call after the pass's scans. */
  async prefetch(policies: readonly ImagePolicy[]): Promise<void> {
    // Sorted, each once: a table over them, not a set and a map of 10,000 (issue 27).
    const repos = sortedUnique(policies.map((p) => refKey(p.spec.imageRepositoryRef))).keys;
    // The scans before the tags: the tags read are then of those scans or newer ones, never
    // older, so an outcome a daemon keeps under the scans read (`scansRead`) is never one of an
    // older list (PostgreSQL's reads may otherwise pass a scan another replica finishes).
    const scans = new SortedTable(repos, await readLatestScans(this.deps.store, repos, this.deps.shareScans));
    const [states, tags] = await Promise.all([
      this.deps.store.policyStates(policies.map((p) => refKey(p.metadata))),
      this.deps.store.currentTagsOf(repos),
    ]);
    this.states = states;
    this.scans = scans;
    this.tags = tags;
  }

  async policyState(name: string): Promise<PolicyState | null> {
    return this.states ? (this.states.get(name) ?? null) : this.deps.store.getPolicyState(name);
  }

  async lastFinishedScan(repoKey: string): Promise<ScanRecord | null> {
    const known = this.scans?.get(repoKey);
    return known ? known.finished : this.deps.store.lastFinishedScan(repoKey);
  }

  /**
   * The scans this book's answers for a repository come from, as `scanBasis` words them; null
   * when they were not read in a batch (prefetch), so no daemon keeps what follows from them.
   */
  scansRead(repoKey: string): string | null {
    const known = this.scans?.get(repoKey);
    return known ? scanBasis(known) : null;
  }

  async currentTags(repoKey: string): Promise<string[]> {
    return this.tags?.get(repoKey) ?? this.deps.store.currentTags(repoKey);
  }

  /**
   * The pass's evaluations are over: what `prefetch` read (every policy's state, its repository's
   * scans and tags) goes; a later question asks the store. A daemon's pass goes on for its git
   * work long after it evaluated, and passes over 10,000 policies each held ~3.5 MB of these
   * meanwhile (issue 27). The facts of each repository stay: the plan asks them again.
   */
  evaluated(): void {
    this.states = null;
    this.scans = null;
    this.tags = null;
  }

  /** Digests learnt from the registry since the last call, of every repository. */
  takeDigests(): TagDigestWrite[] {
    return [...this.byRepo.values()].flatMap((f) => f.takeDigests());
  }
}

/**
 * What a policy's evaluation reads of its repository's scans: the newest finished scan (its
 * outcome, error and end time) and the newest good one (whose list scan holds the current tags).
 * A scan's record does not change once it has finished, so two equal bases read the same.
 */
export function scanBasis(latest: LatestScans): string {
  return `${latest.finished?.id ?? '-'}/${latest.finished?.outcome ?? '-'}/${latest.good?.id ?? '-'}`;
}

/** What the store keeps of these evaluations, with the digests the book learnt: one batch. */
export function policyWrites(outcomes: Iterable<PolicyOutcome>, book: FactsBook): StoreWrite {
  const batch = {
    tagDigests: book.takeDigests(),
    policyStates: [] as { policy: string; state: PolicyState }[],
    selections: [] as SelectionWrite[],
    events: [] as StoredEvent[],
  };
  for (const o of outcomes) {
    if (!o.record) continue;
    if (o.record.state) batch.policyStates.push({ policy: o.name, state: o.record.state });
    batch.events.push(...o.record.events);
    if (o.record.selection) batch.selections.push(o.record.selection);
  }
  return batch;
}

/** No gate holds the candidate: one object for every such outcome (a daemon keeps 10,000). */
const NO_GATES: PolicyOutcome['gates'] = Object.freeze({ window: null, age: null });

/** An outcome that selected nothing: its \`error\` says why (null while it is being evaluated). */
export function blankOutcome(policy: ImagePolicy, error: string | null): PolicyOutcome {
  return {
    name: refKey(policy.metadata),
    policy,
    compiled: null,
    selection: null,
    candidate: null,
    ratchet: null,
    unverified: null,
    error,
    gates: NO_GATES,
    events: [],
    record: null,
    basis: null,
    verdicts: new SmallMap(),
  };
}

/** One policy evaluated on its own, as a person's command does: its outcome and the facts it read. */
export async function evaluateAlone(
  policy: ImagePolicy,
  deps: PolicyDeps,
  opts: { readOnly?: boolean } = {},
): Promise<{ outcome: PolicyOutcome; book: FactsBook }> {
  const book = new FactsBook(deps);
  return { outcome: await evaluatePolicy(policy, deps, book, opts), book };
}

/**
 * Selects and steps the ratchet. What the store should keep is returned in `record`, for the
 * caller to write with the pass's batch (`policyWrites`); with `readOnly` (`pawl explain`) it is
 * null: the same answer is computed, the store is left as it was.
 */
export async function evaluatePolicy(
  policy: ImagePolicy,
  deps: PolicyDeps,
  book: FactsBook,
  opts: { readOnly?: boolean } = {},
): Promise<PolicyOutcome> {
  const name = refKey(policy.metadata);
  const out = blankOutcome(policy, null);
  // As Flux's: the last selection stands and nothing new is recorded; no marker moves for it.
  if (policy.spec.suspend)
    return {
      ...out,
      error: `ImagePolicy ${name} is suspended (spec.suspend: true); pawl resume policy ${name}`,
    };
  const repoKey = refKey(policy.spec.imageRepositoryRef);
  const facts = book.forRepository(repoKey);
  if (!facts) return { ...out, error: `ImageRepository ${repoKey} is not in the configuration` };
  const repo = facts.repository;

  try {
    out.compiled = sharedPolicy(policy.spec, repo.spec.exclusionList);
  } catch (err) {
    return { ...out, error: errorMessage(err) };
  }
  const specHash = policySpecHash(policy.spec, repo.spec.exclusionList);
  const state = await book.policyState(name);

  const last = await book.lastFinishedScan(repoKey);
  let scanOk = false;
  let tags: string[] = [];
  if (!last) out.error = `ImageRepository ${repoKey} has not been scanned yet`;
  else if (last.outcome !== 'ok')
    out.error = `the last scan of ImageRepository ${repoKey} failed: ${last.error ?? 'unknown error'}`;
  else {
    tags = await book.currentTags(repoKey);
    scanOk = tags.length > 0;
    if (!scanOk) out.error = `the last scan of ImageRepository ${repoKey} listed no tags`;
  }
  const scanTime = last?.endedAt ?? last?.startedAt ?? deps.now();
  let stateToKeep: PolicyState | null = null;

  try {
    // newestBuild orders by build time: select and compare need the times of the tags.
    const buildTimes =
      scanOk && out.compiled.strategy === 'newestBuild' ? await facts.buildTimesOf(tags) : undefined;
    if (scanOk) {
      out.selection = out.compiled.select(tags, buildTimes ? { buildTimes } : {});
      if (out.selection.tag === null) out.error = out.selection.error ?? 'no tag matches the policy';
    }
    const compiled = out.compiled;
    const input = {
      state: state ?? null,
      specHash,
      selected: out.selection?.tag ?? null,
      scanOk: scanOk && out.selection?.tag != null,
      now: scanTime,
      guard: policy.spec.guard,
      order: (a: string, b: string) => compiled.compare(a, b, buildTimes ? { buildTimes } : {}),
    };
    const r = await runRatchet(input, (tag) => facts.exists(tag));
    out.ratchet = r.state;
    const scans = book.scansRead(repoKey);
    if (scans !== null)
      out.basis = { scans, settled: settles(policy, compiled, r, { ...input, state: r.state }) };
    out.events = withPolicy(r.events, name);
    if (!opts.readOnly) stateToKeep = r.state;
    const verifier = verifierFor(policy, deps.config);
    const check = verifier ? new Verification(verifier, policy, facts, deps) : null;
    let chosen: { tag: string; digest?: string } | null = null;
    if (r.candidate !== null && check) {
      // The newest verified tag at or below the ratchet's candidate: never above it.
      const below = (out.selection?.candidates ?? [])
        .map((c) => c.tag)
        .filter(
          (t) =>
            t !== r.candidate &&
            (compiled.compare(t, r.candidate!, buildTimes ? { buildTimes } : {}) ?? 1) < 0,
        );
      const found = await check.newest([r.candidate, ...below]);
      out.unverified = found.unverified;
      chosen = found.tag;
      if (!chosen)
        out.error = `no verified tag: ${found.unverified?.tag ?? r.candidate} ${found.unverified?.why ?? ''}`;
    } else if (r.candidate !== null) {
      const digest = await reflectedDigest(policy, facts, r.candidate);
      chosen = { tag: r.candidate, ...(digest ? { digest } : {}) };
    }
    if (chosen !== null) {
      // Built field by field: a spread here gave each kept outcome's candidate a hidden class
      // of its own (~200 bytes each, 10,000 in a daemon at 10,000 images).
      const candidate: Candidate = { tag: chosen.tag, name: repo.spec.image };
      if (chosen.digest !== undefined) candidate.digest = chosen.digest;
      out.candidate = candidate;
      const now = deps.now();
      const window = windowGate(policy.spec.guard.window, now);
      const age = await ageGate(policy, out.compiled, facts, tags, chosen.tag, now, buildTimes, check);
      if (window !== null || age !== null) out.gates = { window, age };
    } else if (r.candidate !== null) {
      // Every tag walked failed verification: out.error says why.
    } else if (out.error === null) {
      const p = r.state.pending;
      out.error = p
        ? `${out.selection?.tag ?? 'the selection'} is older than the high-water mark ${r.state.highWater ?? ''}, which is gone from the registry; waiting for ${policy.spec.guard.staleScan.confirmations} agreeing scans (seen ${p.count})`
        : `the selected tag ${out.selection?.tag ?? ''} does not exist in the registry`;
    }
  } catch (err) {
    out.candidate = null;
    out.error = errorMessage(err);
    // A failure (a HEAD that failed, a store read) is asked again next time.
    out.basis = null;
  }
  if (!opts.readOnly) {
    out.selection = null;
    const at = deps.now();
    out.record = {
      state: stateToKeep,
      events: stateToKeep ? out.events.map((e) => toStoreEvent(e, at, repoKey)) : [],
      selection: {
        policy: name,
        at,
        candidate: out.candidate?.tag ?? null,
        error: out.error,
        unverified: out.unverified,
      },
    };
  }
  if (out.error) deps.log.info({ policy: name, error: out.error }, 'policy has no candidate');
  return out;
}

/**
 * Whether the ratchet's step is a fixed point the registry and the clock cannot move: stepping
 * again from the state it leaves, on the same scan, asks no HEAD and gives the same candidate
 * and state with no event; and nothing after the ratchet reads the registry or the time again
 * (a reflected digest is a HEAD each pass, `spec.verify` checks signatures, `newestBuild` reads
 * build times, the window and `minimumAge` gates read the clock). A daemon may then keep the
 * outcome until the policy, its repository or its scans change (outcome-cache.ts).
 */
function settles(
  policy: ImagePolicy,
  compiled: CompiledPolicy,
  r: { state: RatchetState; candidate: string | null },
  again: Omit<RatchetInput, 'highWaterExists' | 'selectedExists'>,
): boolean {
  const g = policy.spec.guard;
  if (
    policy.spec.verify !== undefined ||
    policy.spec.digestReflectionPolicy !== 'Never' ||
    compiled.strategy === 'newestBuild' ||
    g.window !== undefined ||
    (g.minimumAge !== undefined && g.minimumAge > 0)
  )
    return false;
  const next = ratchetStep({ ...again, highWaterExists: null, selectedExists: null });
  return (
    !next.needHeadOfHighWater &&
    !next.needHeadOfSelected &&
    next.events.length === 0 &&
    next.candidate === r.candidate &&
    sameState(next.state, r.state)
  );
}

function sameState(a: RatchetState, b: RatchetState): boolean {
  const t = (d: Date | null | undefined) => d?.getTime() ?? null;
  return (
    a.specHash === b.specHash &&
    a.highWater === b.highWater &&
    t(a.highWaterAt) === t(b.highWaterAt) &&
    (a.pending === null) === (b.pending === null) &&
    (a.pending === null ||
      (a.pending.candidate === b.pending!.candidate &&
        a.pending.count === b.pending!.count &&
        t(a.pending.firstAt) === t(b.pending!.firstAt) &&
        t(a.pending.lastAt) === t(b.pending!.lastAt)))
  );
}

/**
 * The most tags a pass verifies, the candidate first and then downwards (each costs requests when
 * not cached). Past it the policy has no candidate this pass: `unverified`, its why saying so
 * (docs/gates.md, "Bounds"); the next pass walks the same tags again, from the cache where they
 * verified.
 */
export const MAX_VERIFY_WALK = 20;

/**
 * Verification for one policy and pass: the digest checked is the one the write uses (the
 * reflected digest, platform included, else the tag's HEAD), read fresh each pass, so a tag
 * moved to an unsigned digest after a check is checked again.
 */
class Verification {
  private readonly cache: VerifiedCache;
  constructor(
    private readonly verifier: Verifier,
    private readonly policy: ImagePolicy,
    private readonly facts: ImageFacts,
    private readonly deps: PolicyDeps,
  ) {
    this.cache = deps.store.verifiedCache();
  }

  /** The first verified of `tags` (best first), and why the newest failed when it did. */
  async newest(tags: readonly string[]): Promise<{
    tag: { tag: string; digest?: string } | null;
    unverified: { tag: string; why: string } | null;
  }> {
    let unverified: { tag: string; why: string } | null = null;
    for (const tag of tags.slice(0, MAX_VERIFY_WALK)) {
      const r = await this.check(tag);
      if (r.ok) return { tag: r.candidate, unverified };
      unverified ??= { tag, why: r.why };
    }
    if (unverified && tags.length > MAX_VERIFY_WALK)
      unverified.why += ` (and none of the next ${MAX_VERIFY_WALK - 1} tags below it is verified; pawl checks at most ${MAX_VERIFY_WALK} per pass)`;
    return { tag: null, unverified };
  }

  async check(
    tag: string,
  ): Promise<{ ok: true; candidate: { tag: string; digest?: string } } | { ok: false; why: string }> {
    const reflect = this.policy.spec.digestReflectionPolicy !== 'Never';
    const digest = reflect
      ? await reflectedDigest(this.policy, this.facts, tag)
      : await this.facts.digest(tag);
    if (!digest) return { ok: false, why: 'has no manifest (or no such platform) in the registry now' };
    const v = await verifyDigest(
      this.verifier,
      this.facts.client,
      this.facts.ref,
      digest,
      this.cache,
      this.deps.now(),
    );
    if (!v.verified) return { ok: false, why: `(${digest}) is not verified: ${v.why}` };
    return { ok: true, candidate: { tag, ...(reflect ? { digest } : {}) } };
  }
}

/**
 * The digest a `:digest` marker (and `name:tag@digest`) receives: the index's, as Flux writes, or
 * with `spec.digest.platform` that platform's manifest in it (one GET of the index).
 */
async function reflectedDigest(
  policy: ImagePolicy,
  facts: ImageFacts,
  tag: string,
): Promise<string | undefined> {
  if (policy.spec.digestReflectionPolicy === 'Never') return undefined;
  const platform = policy.spec.digest?.platform;
  return platform ? facts.platformDigest(tag, platform) : facts.digest(tag);
}

/**
 * `guard.minimumAge`: null when the candidate is old enough. A tag without a first-seen time
 * (not in the store yet) counts as seen now; tags of a repository's first scan count from that
 * scan, since pawl cannot know how long they were there before.
 */
async function ageGate(
  policy: ImagePolicy,
  compiled: CompiledPolicy,
  facts: ImageFacts,
  tags: readonly string[],
  candidate: string,
  now: Date,
  buildTimes: Map<string, Date> | undefined,
  check: Verification | null,
): Promise<{ gate: Gate; oldEnough: Candidate | null } | null> {
  const age = policy.spec.guard.minimumAge;
  if (age === undefined || age <= 0) return null;
  const seen = await facts.currentFirstSeen();
  const first = seen.get(candidate) ?? (await facts.firstSeen(candidate)).firstSeen ?? now;
  const at = oldEnoughAt(first, age);
  if (at.getTime() <= now.getTime()) return null;
  const ripe = tags.filter((t) => {
    const f = seen.get(t);
    return f !== undefined && oldEnoughAt(f, age).getTime() <= now.getTime();
  });
  const opts = buildTimes ? { buildTimes } : {};
  const older = (ripe.length > 0 ? compiled.select(ripe, opts).candidates : [])
    .map((c) => c.tag)
    .filter((t) => t !== candidate && (compiled.compare(t, candidate, opts) ?? 1) < 0);
  let oldEnough: Candidate | null = null;
  if (check) {
    // With spec.verify the tag written meanwhile must be verified too.
    const found = (await check.newest(older)).tag;
    if (found) oldEnough = { ...found, name: facts.repository.spec.image };
  } else if (older[0] !== undefined) {
    const digest = await reflectedDigest(policy, facts, older[0]);
    oldEnough = { tag: older[0], name: facts.repository.spec.image, ...(digest ? { digest } : {}) };
  }
  const detail =
    `${candidate} was first seen by pawl at ${first.toISOString()}, less than guard.minimumAge ` +
    `${formatDuration(age)} ago; it writes at ${when(at, now)}` +
    (oldEnough ? ` (the newest tag old enough is ${oldEnough.tag}).` : '.');
  return { gate: { reason: 'too-new', detail }, oldEnough };
}

export function policyReport(o: PolicyOutcome): PolicyReport {
  return {
    name: o.name,
    candidate: o.candidate?.tag ?? null,
    highWater: o.ratchet?.highWater ?? null,
    error: o.error,
    ...(o.unverified ? { unverified: o.unverified } : {}),
  };
}
