/**
 * pawl's `newestBuild: {}` policy: the newest image by build time (SPEC §4: the manifest's
 * `org.opencontainers.image.created`, else the config's `created`). The registry layer supplies
 * the times; a tag without one cannot be ordered and is not a candidate.
 */
import { compareGoStrings } from '../go/index.js';
import { plural, type Strategy } from './strategy.js';

export function buildTimeKey(time: Date): string {
  return `built ${time.toISOString()}`;
}

/** >0 when `a` is newer, <0 older, 0 the same instant; null when either time is missing or invalid. */
export function compareBuildTimes(a: Date | undefined, b: Date | undefined): number | null {
  if (!a || !b) return null;
  const x = a.getTime();
  const y = b.getTime();
  if (Number.isNaN(x) || Number.isNaN(y)) return null;
  return x === y ? 0 : x > y ? 1 : -1;
}

interface Timed {
  time: Date;
}

export function newestBuildStrategy(): Strategy<Timed> {
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
