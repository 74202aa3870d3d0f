/**
 * Policy selection (SPEC §2, §4 "Order"), pure: tags in, a selection and its reasons out.
 *
 * Pipeline as Flux: the repository's exclusionList drops every tag any pattern matches →
 * `filterTags.pattern` (unanchored) drops tags it does not match → `extract` (Go template; empty
 * means the whole tag) gives the value to order → the strategy orders the values → the tag whose
 * value wins is selected.
 */
import type { ImagePolicy } from '../config/index.js';
import { compileRegex, compareGoStrings, type Re2 } from '../go/index.js';
import { strategyFor } from './factory.js';
import type { Counts } from './strategy.js';

export type PolicySpec = Pick<ImagePolicy['spec'], 'policy' | 'filterTags'>;

export interface SelectOptions {
  /** Build time of each tag (by tag); `newestBuild` needs it, the others ignore it. */
  buildTimes?: ReadonlyMap<string, Date>;
}

export interface RankedCandidate {
  /** The tag as in the registry. */
  tag: string;
  /** The value the policy orders (the tag itself when there is no `extract`). */
  extracted: string;
  /** The ordering key as a person should read it, e.g. `semver 1.2.3`. */
  key: string;
}

export interface Selection {
  /** The selected tag (the original tag, not the extracted value), or null. */
  tag: string | null;
  /** Why there is no tag, in Flux's words where Flux has them; null when a tag was selected. */
  error: string | null;
  /** Every tag that passed exclusion, filter and parse (and, for semver, is in range), best first. */
  candidates: RankedCandidate[];
  /** Tags dropped by the exclusion list. */
  excluded: number;
  /** Tags `filterTags.pattern` did not match. */
  filteredOut: number;
  /** Values the strategy cannot read (not semver, not a number, no build time). */
  unparsable: number;
  /** Semantic versions outside the policy's range (always 0 for other strategies). */
  outOfRange: number;
}

export interface CompiledPolicy {
  readonly strategy: ImagePolicy['spec']['policy']['strategy'];
  select(tags: readonly string[], opts?: SelectOptions): Selection;
  /**
   * >0 when a is newer than b, <0 older, 0 equally new (e.g. 1.0.0 vs v1.0.0), null when either
   * cannot be ordered by this policy (fails filterTags, or does not parse). The semver range and
   * the exclusion list do not matter here: they decide selection, not order.
   */
  compare(a: string, b: string, opts?: SelectOptions): number | null;
  /** The ordering key of one tag as a person should read it, or null when it cannot be ordered. */
  key(tag: string, opts?: SelectOptions): string | null;
}

/** Compiles the exclusion list; throws naming the bad pattern. */
export function compileExclusions(exclusionList: readonly string[]): Re2[] {
  return exclusionList.map((p) => {
    try {
      return compileRegex(p);
    } catch (err) {
      throw new Error(`exclusionList: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  });
}

/** Applies an exclusion list (Flux's `filterOutTags`): keeps tags no pattern matches. */
export function applyExclusions(tags: readonly string[], exclusions: readonly Re2[]): string[] {
  if (exclusions.length === 0) return [...tags];
  return tags.filter((t) => !exclusions.some((re) => re.test(t)));
}

/**
 * Compiles a policy. Throws `Error` for an invalid semver range or regular expression, with the
 * offending text in the message.
 */
export function compilePolicy(spec: PolicySpec, exclusionList: readonly string[]): CompiledPolicy {
  const strategy = strategyFor(spec.policy);
  const exclusions = compileExclusions(exclusionList);
  let filter: Re2 | null = null;
  const template = spec.filterTags?.extract ?? '';
  if (spec.filterTags && spec.filterTags.pattern !== '') {
    try {
      filter = compileRegex(spec.filterTags.pattern);
    } catch (err) {
      throw new Error(`filterTags.pattern: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
  } else if (template !== '') {
    // An empty pattern matches every tag at offset 0 with no groups; only `$$` and literals survive.
    filter = compileRegex('');
  }

  /** The value a tag is ordered by, or null when filterTags drops it. */
  const extract = (tag: string): string | null => {
    if (filter === null) return tag;
    if (template === '') return filter.test(tag) ? tag : null;
    // One submatch search; Re2 rejects most non-matching tags on their literal prefix/suffix first.
    return filter.expand(template, tag);
  };

  const readTag = (
    tag: string,
    opts: SelectOptions | undefined,
  ): { extracted: string; value: unknown } | null => {
    const extracted = extract(tag);
    if (extracted === null) return null;
    const value = strategy.parse(extracted, tag, opts);
    return value === null ? null : { extracted, value };
  };

  return {
    strategy: spec.policy.strategy,

    select(tags, opts) {
      const counts: Counts = {
        total: tags.length,
        excluded: 0,
        filteredOut: 0,
        unparsable: 0,
        outOfRange: 0,
      };
      let firstUnreadable: string | null = null;
      const items: { tag: string; extracted: string; value: unknown }[] = [];
      for (const tag of tags) {
        let excluded = false;
        for (let i = 0; i < exclusions.length && !excluded; i++) excluded = exclusions[i]!.test(tag);
        if (excluded) {
          counts.excluded++;
          continue;
        }
        const extracted = extract(tag);
        if (extracted === null) {
          counts.filteredOut++;
          continue;
        }
        const value = strategy.parse(extracted, tag, opts);
        if (value === null) {
          counts.unparsable++;
          firstUnreadable ??= extracted;
          continue;
        }
        if (!strategy.eligible(value)) {
          counts.outOfRange++;
          continue;
        }
        items.push({ tag, extracted, value });
      }
      items.sort(
        (a, b) =>
          strategy.newer(b.value, a.value) ||
          strategy.tie(b.extracted, a.extracted) ||
          // Equal values from different tags: Flux's filter map keeps the least tag.
          compareGoStrings(a.tag, b.tag),
      );
      const candidates = items.map((i) => ({
        tag: i.tag,
        extracted: i.extracted,
        key: strategy.key(i.value),
      }));
      const base = {
        candidates,
        excluded: counts.excluded,
        filteredOut: counts.filteredOut,
        unparsable: counts.unparsable,
        outOfRange: counts.outOfRange,
      };
      if (tags.length === 0) return { tag: null, error: 'no tags to choose from', ...base };
      if (strategy.strict && firstUnreadable !== null) {
        return { tag: null, error: `failed to parse invalid numeric value '${firstUnreadable}'`, ...base };
      }
      const best = candidates[0];
      if (best) return { tag: best.tag, error: null, ...base };
      if (counts.excluded + counts.filteredOut === counts.total) {
        const why: string[] = [];
        if (counts.excluded) why.push(`${counts.excluded} excluded by the exclusion list`);
        if (counts.filteredOut)
          why.push(
            `${counts.filteredOut} not matching filterTags.pattern ${JSON.stringify(spec.filterTags?.pattern ?? '')}`,
          );
        return { tag: null, error: `version list argument cannot be empty (${why.join(', ')})`, ...base };
      }
      return { tag: null, error: strategy.noCandidate(counts), ...base };
    },

    compare(a, b, opts) {
      const x = readTag(a, opts);
      const y = readTag(b, opts);
      if (x === null || y === null) return null;
      const d = strategy.newer(x.value, y.value);
      return d > 0 ? 1 : d < 0 ? -1 : 0;
    },

    key(tag, opts) {
      const x = readTag(tag, opts);
      return x === null ? null : strategy.key(x.value);
    },
  };
}

/**
 * Policies whose selection specs are equal share one compiled policy while any of them holds
 * it (issue 27: 10,000 policies of one `semver: >=1.0.0` kept 10,000 compilations of a dozen
 * closures each, and each running pass made its own). A compiled policy holds no state of its
 * own (its strategy, its regular expressions), so sharing one changes no answer. Held weakly:
 * a spec no policy uses any more is collected with its compilation. A spec that does not
 * compile throws each time, as `compilePolicy` does.
 */
const shared = new Map<string, WeakRef<CompiledPolicy>>();
const collected = new FinalizationRegistry<string>((key) => {
  if (shared.get(key)?.deref() === undefined) shared.delete(key);
});

export function sharedPolicy(spec: PolicySpec, exclusionList: readonly string[]): CompiledPolicy {
  // Everything compilePolicy reads, and nothing else.
  const key = JSON.stringify([spec.policy, spec.filterTags ?? null, exclusionList]);
  const hit = shared.get(key)?.deref();
  if (hit) return hit;
  const compiled = compilePolicy(spec, exclusionList);
  shared.set(key, new WeakRef(compiled));
  collected.register(compiled, key);
  return compiled;
}

/** How many distinct compiled policies are shared now (tests). */
export function sharedPolicyCount(): number {
  let n = 0;
  for (const ref of shared.values()) if (ref.deref() !== undefined) n++;
  return n;
}
