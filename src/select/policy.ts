/**
 * Policy selection (SPEC §2, §4 "Order"), pure: tags in, a selection and its reasons out.
 *
 * Pipeline as Flux: the repository's exclusionList drops every tag any pattern matches →
 * `filterTags.pattern` (unanchored) drops tags it does not match → `extract` (Go template; empty
 * means the whole tag) gives the value to order → the strategy orders the values → the tag whose
 * value wins is selected.
 */
import type { ImagePolicy } from '../config/index.js';
import {
  compileRegex,
  type Re2,
  compareGoStrings,
  isWide,
  parseGoFloat,
  compareVersions,
  parseSemverRange,
  parseVersion,
  versionKey,
  type SemverVersion,
} from '../go/index.js';
import { alphabeticalKey } from './strategies/alphabetical.js';
import { buildTimeKey, compareBuildTimes } from './strategies/newestBuild.js';
import { numericalKey } from './strategies/numerical.js';

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

/** How one strategy reads and orders values. */
interface Strategy<T> {
  parse(value: string, tag: string, opts: SelectOptions | undefined): T | null;
  /** >0 when a is newer. */
  newer(a: T, b: T): number;
  /** Selection only: semver's range. */
  eligible(v: T): boolean;
  key(v: T): string;
  /** Among equally new values, >0 when `a` should rank first (Flux's list order decides there). */
  tie(a: string, b: string): number;
  /** Numerical: one unreadable value fails the policy, as in Flux. */
  readonly strict: boolean;
  noCandidate(counts: Counts): string;
}

interface Counts {
  total: number;
  excluded: number;
  filteredOut: number;
  unparsable: number;
  outOfRange: number;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function semverStrategy(range: string): Strategy<SemverVersion> {
  let parsed;
  try {
    parsed = parseSemverRange(range);
  } catch (err) {
    throw new Error(
      `invalid semver range ${JSON.stringify(range)}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const r = parsed;
  return {
    parse: (value) => parseVersion(value),
    newer: compareVersions,
    eligible: (v) => r.check(v),
    key: (v) => `semver ${versionKey(v)}`,
    // Flux reads tags newest-string-first and keeps the first of equal versions: `v1.0.0` before `1.0.0`.
    tie: (a, b) => compareGoStrings(a, b),
    strict: false,
    noCandidate: (c) => {
      const why: string[] = [];
      if (c.unparsable)
        why.push(`${plural(c.unparsable, 'is not a semantic version', 'are not semantic versions')}`);
      if (c.outOfRange) why.push(`${c.outOfRange} outside the range ${JSON.stringify(range)}`);
      return `unable to determine latest version from provided list (${why.join(', ') || 'no versions'})`;
    },
  };
}

interface Str {
  s: string;
  /** Needs the slow UTF-8 order comparison. */
  wide: boolean;
}

function alphabeticalStrategy(order: 'asc' | 'desc'): Strategy<Str> {
  const sign = order === 'asc' ? 1 : -1;
  return {
    parse: (value) => ({ s: value, wide: isWide(value) }),
    newer: (a, b) => {
      if (a.s === b.s) return 0;
      if (a.wide || b.wide) return sign * compareGoStrings(a.s, b.s);
      return a.s < b.s ? -sign : sign;
    },
    eligible: () => true,
    key: (v) => `alphabetical ${alphabeticalKey(v.s)}`,
    tie: () => 0,
    strict: false,
    noCandidate: () => 'version list argument cannot be empty',
  };
}

function numericalStrategy(order: 'asc' | 'desc'): Strategy<number> {
  const sign = order === 'asc' ? 1 : -1;
  return {
    // NaN parses in Go, but it has no order (Flux's pick would depend on list order): refuse it.
    parse: (value) => {
      const n = parseGoFloat(value);
      return n === null || Number.isNaN(n) ? null : n;
    },
    newer: (a, b) => (a === b ? 0 : a > b ? sign : -sign),
    eligible: () => true,
    key: (n) => `numerical ${numericalKey(n)}`,
    // Flux keeps the last of equal values in its newest-string-first list: `1` before `1.0`.
    tie: (a, b) => compareGoStrings(b, a),
    strict: true,
    noCandidate: () => 'version list argument cannot be empty',
  };
}

interface Timed {
  time: Date;
}

function newestBuildStrategy(): Strategy<Timed> {
  return {
    parse: (_value, tag, opts) => {
      const time = opts?.buildTimes?.get(tag);
      return time && !Number.isNaN(time.getTime()) ? { time } : null;
    },
    newer: (a, b) => compareBuildTimes(a.time, b.time) ?? 0,
    eligible: () => true,
    key: (v) => buildTimeKey(v.time),
    tie: (a, b) => compareGoStrings(a, b),
    strict: false,
    noCandidate: (c) =>
      c.unparsable
        ? `no build time is known for ${plural(c.unparsable, 'tag', 'tags')}`
        : 'version list argument cannot be empty',
  };
}

function strategyFor(policy: ImagePolicy['spec']['policy']): Strategy<unknown> {
  switch (policy.strategy) {
    case 'semver':
      return semverStrategy(policy.range) as Strategy<unknown>;
    case 'alphabetical':
      return alphabeticalStrategy(policy.order) as Strategy<unknown>;
    case 'numerical':
      return numericalStrategy(policy.order) as Strategy<unknown>;
    case 'newestBuild':
      return newestBuildStrategy() as Strategy<unknown>;
  }
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
