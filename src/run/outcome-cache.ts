/**
 * The daemon's memory of its policies' outcomes between passes (issue 27): a webhook pass for one
 * changed image among 500 re-evaluated the 499 unchanged policies (their store reads, their
 * ratchet steps, their state rewrites) and got the same answers. A policy's outcome is a function
 * of its spec, its repository's spec, its stored state and its repository's scans; when it is
 * also a fixed point of the ratchet that asks neither the registry nor the clock (`settled`,
 * policies.ts), the same outcome follows as long as those are unchanged, so the pass takes it
 * from here and neither reads nor rewrites anything of the policy.
 *
 * Only a daemon holds one (`PassDeps.outcomes`); `pawl run` evaluates everything every time. A
 * restarted daemon starts empty. What a kept outcome never carries into a pass: the registry's
 * facts (HEADs before a write, build times, first-seen times are asked afresh through the pass's
 * own FactsBook) and the work tree (every marked file is read again).
 */
import { refKey, type Config, type ImagePolicy, type ImageRepository } from '../config/index.js';
import type { LatestScans } from '../store/index.js';
import { scanBasis, type PolicyOutcome } from './policies.js';
import type { GuardEvent } from '../guard/index.js';
import { Slots } from '../util/index.js';
import { SharedRows } from './shared-rows.js';

/**
 * A kept outcome is what a later pass uses, the same object in every pass (issue 27: a daemon's
 * pass copied each of 10,000 kept outcomes, ~0.1 KB each, and four passes ran at once). It asks
 * the registry through that pass's own facts (plan.ts asks the pass's FactsBook by repository:
 * nothing the registry said last time is trusted for a write), and it gives the store nothing:
 * its state is the one stored, its events were recorded when they happened, and its selection was
 * recorded when it was made (the history of selections gains a row when a policy is evaluated:
 * after each scan of its repository or change of its spec, not once a pass for an answer that did
 * not change). Frozen: a pass that pushed onto them would write into every later pass.
 */
const NO_EVENTS: readonly GuardEvent[] = Object.freeze([]);
const NOTHING_TO_WRITE: NonNullable<PolicyOutcome['record']> = Object.freeze({
  state: null,
  events: Object.freeze([]),
  selection: null,
});

interface Entry {
  policy: ImagePolicy;
  repository: ImageRepository;
  /** The specs' text, computed when an object is seen again under a new identity (a reload). */
  specs?: string;
  /** `scanBasis` of the scans the outcome was evaluated on. */
  scans: string;
  outcome: PolicyOutcome;
}

export class OutcomeCache {
  readonly #kept = new Map<string, Entry>();
  /**
   * The latest scans passes read, by repository. A finished scan never changes, so every pass
   * that reads the same ones holds this one copy: each running pass read two of each of 10,000
   * repositories (before and after its scans), two records a repository with their dates and
   * lists (issue 27).
   */
  readonly #scans = new Map<string, LatestScans>();
  readonly #evaluating = new Slots(1);
  /** The report rows the passes share (shared-rows.ts). */
  readonly rows = new SharedRows();
  #config: Config | null = null;
  /** Counters, for tests and the bench: outcomes taken from here, and evaluations kept. */
  readonly counts = { reused: 0, kept: 0 };

  /**
   * The outcome kept for `policy` when nothing that decides it changed: the same policy and
   * repository (the same objects, or objects of the same specs after a reload) and the same
   * scans. Undefined otherwise: the pass evaluates the policy.
   */
  lookup(
    policy: ImagePolicy,
    repository: ImageRepository | undefined,
    latest: LatestScans,
  ): PolicyOutcome | undefined {
    const name = refKey(policy.metadata);
    const e = this.#kept.get(name);
    if (!e || !repository) return undefined;
    if (e.scans !== scanBasis(latest)) return undefined;
    if (e.policy !== policy || e.repository !== repository) {
      const specs = specsOf(policy, repository);
      if ((e.specs ??= specsOf(e.policy, e.repository)) !== specs) {
        this.#kept.delete(name);
        return undefined;
      }
      // The same specs under new objects: kept under these from now on.
      e.policy = policy;
      e.repository = repository;
      e.specs = specs;
      e.outcome = { ...e.outcome, policy };
    }
    return e.outcome;
  }

  /**
   * Keeps what a pass evaluated and stored: only outcomes `settled` on the scans they read, and
   * whose state the store now holds (call after the pass's write succeeded). Any other outcome
   * of a policy drops what was kept of it.
   */
  keep(outcomes: Iterable<PolicyOutcome>, config: Config): void {
    if (this.#config !== config) {
      // Policies removed from the configuration are forgotten, once a configuration.
      for (const name of this.#kept.keys()) if (!config.imagePolicies.has(name)) this.#kept.delete(name);
      for (const name of this.#scans.keys())
        if (!config.imageRepositories.has(name)) this.#scans.delete(name);
      this.#config = config;
    }
    for (const o of outcomes) {
      const repository = config.imageRepositories.get(refKey(o.policy.spec.imageRepositoryRef));
      if (!o.basis?.settled || !o.record?.state || !repository) {
        this.#kept.delete(o.name);
        continue;
      }
      // As a later pass takes it (see lookup): nothing more for the store.
      const outcome: PolicyOutcome = { ...o, events: NO_EVENTS, record: NOTHING_TO_WRITE };
      this.#kept.set(o.name, { policy: o.policy, repository, scans: o.basis.scans, outcome });
      this.counts.kept++;
    }
  }

  /**
   * Replaces each of `pairs` (a store's answer for `names`, in their order) by the copy kept here
   * of that repository's entry when its scans are the same ones; the others are kept from now on.
   */
  shareScans(names: readonly string[], pairs: LatestScans[]): void {
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const l = pairs[i]!;
      const k = this.#scans.get(name);
      if (k && k.finished?.id === l.finished?.id && k.good?.id === l.good?.id) pairs[i] = k;
      else if (l.finished !== null || l.good !== null) this.#scans.set(name, l);
    }
  }

  /**
   * Runs a pass's evaluation of its policies after the evaluations of the passes that began
   * theirs earlier. Ten automations over the same 10,000 policies, four passes at a time, had
   * four evaluate every policy at once on the same scans, each holding its outcomes until its
   * end; one at a time, the first evaluates and keeps, and the others take what it kept.
   */
  oneAtATime<T>(evaluate: () => Promise<T>): Promise<T> {
    return this.#evaluating.run(evaluate);
  }

  /** How many policies' outcomes are kept. */
  get size(): number {
    return this.#kept.size;
  }
}

function specsOf(policy: ImagePolicy, repository: ImageRepository): string {
  return JSON.stringify([policy.spec, repository.spec]);
}
