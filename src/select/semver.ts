/**
 * Semantic versions as Flux orders them (Masterminds/semver, src/go/semver.ts): the greatest
 * version in the policy's range.
 */
import {
  compareGoStrings,
  compareVersions,
  parseSemverRange,
  parseVersion,
  versionKey,
  type SemverRange,
  type SemverVersion,
} from '../go/index.js';
import { plural, type Strategy } from './strategy.js';

export function semverStrategy(range: string): Strategy<SemverVersion> {
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

/**
 * Flux's `SemVer.Latest`: the greatest version in range; on a tie the first in list order wins.
 * Errors in Flux's words.
 */
export function semverLatest(
  range: SemverRange,
  versions: readonly string[],
): { latest: string } | { error: string } {
  if (versions.length === 0) return { error: 'version list argument cannot be empty' };
  let best: SemverVersion | null = null;
  for (const s of versions) {
    const v = parseVersion(s);
    if (v && range.check(v) && (best === null || compareVersions(v, best) > 0)) best = v;
  }
  return best
    ? { latest: best.original }
    : { error: 'unable to determine latest version from provided list' };
}
