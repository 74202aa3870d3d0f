import { DEFAULT_GUARD, type GuardSpec, type ImagePolicy } from '../../src/config/types.js';
import { compilePolicy } from '../../src/select/index.js';
import type { Comparator } from '../../src/guard/types.js';

export function guard(over: Partial<GuardSpec> = {}): GuardSpec {
  return { ...DEFAULT_GUARD, ...over, staleScan: { ...DEFAULT_GUARD.staleScan, ...(over.staleScan ?? {}) } };
}

export type PolicyChoiceSpec = Pick<ImagePolicy['spec'], 'policy' | 'filterTags'>;

/** The policy's compare as the lead passes it to the guard. */
export function policyOrder(
  spec: PolicyChoiceSpec,
  exclusionList: string[] = [],
): { order: Comparator; select: (tags: string[]) => string | null } {
  const p = compilePolicy(spec, exclusionList);
  return { order: (a, b) => p.compare(a, b), select: (tags) => p.select(tags).tag };
}

/** Build-time order over a table of known times (by tag or digest); null when either is unknown. */
export function buildTimes(times: Record<string, string>): Comparator {
  return (a, b) => {
    const x = times[a];
    const y = times[b];
    if (x === undefined || y === undefined) return null;
    return Math.sign(Date.parse(x) - Date.parse(y));
  };
}

export const noBuildTimes: Comparator = () => null;

export const semver = (range = '*'): PolicyChoiceSpec => ({ policy: { strategy: 'semver', range } });

/** SPEC §1 story 1: `service-main-<sha>-<ts>`, numerical on the extracted timestamp. */
export const serviceMain: PolicyChoiceSpec = {
  policy: { strategy: 'numerical', order: 'asc' },
  filterTags: { pattern: '^service-main-[a-f0-9]+-(?P<ts>[0-9]+)$', extract: '$ts' },
};

/** SPEC §1 story 2: `release-<sha>-<unix time>`. */
export const release: PolicyChoiceSpec = {
  policy: { strategy: 'numerical', order: 'asc' },
  filterTags: { pattern: '^release-[a-f0-9]+-(?P<ts>[0-9]+)$', extract: '$ts' },
};
