/** Which ref a workspace checks out: Flux's precedence, and a semver range resolved over the tags. */
import type { GitRef } from '../config/index.js';
import {
  compareVersions,
  newVersion,
  parseSemverRange,
  type SemverRange,
  type SemverVersion,
} from '../go/index.js';
import { RuntimeError } from '../util/index.js';

/** Which ref to check out, with Flux's precedence: commit, name, semver, tag, branch. */
export function chooseRef(...candidates: (GitRef | undefined)[]): GitRef | undefined {
  for (const r of candidates) {
    if (r && (r.commit || r.name || r.semver || r.tag || r.branch)) return r;
  }
  return undefined;
}

/**
 * Highest tag satisfying `range`, as source-controller's semver checkout does with
 * Masterminds/semver (`NewVersion` per tag: leading `v`, missing minor/patch are 0); null when none.
 */
export function selectSemverTag(range: string, tags: readonly string[]): string | null {
  let r: SemverRange;
  try {
    r = parseSemverRange(range);
  } catch (err) {
    throw new RuntimeError(
      `"${range}" is not a valid semver range: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  let best: SemverVersion | null = null;
  for (const tag of tags) {
    const v = newVersion(tag);
    if (!v || !r.check(v)) continue;
    if (!best || compareVersions(v, best) > 0) best = v;
  }
  return best?.original ?? null;
}
