/**
 * pawl's `newestBuild: {}` policy: the newest image by build time (SPEC §4: the manifest's
 * `org.opencontainers.image.created`, else the config's `created`). The registry layer supplies
 * the times; a tag without one cannot be ordered and is not a candidate.
 */

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
