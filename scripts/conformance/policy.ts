/**
 * Flux's policy tables (policy-cases.json) against pawl's selection: every case of `cases`,
 * `filterCases`, `semverRangeParse`, `semverTagParse` and `exclusionCases`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PolicyChoice } from '../../src/config/types.js';
import {
  alphabeticalLatest,
  applyExclusions,
  compileExclusions,
  compilePolicy,
  numericalLatest,
  semverLatest,
} from '../../src/select/index.js';
import { parseSemverRange, parseVersion } from '../../src/go/index.js';

export interface ConformanceResult {
  passed: number;
  failed: { id: string; message: string }[];
}

interface RawPolicy {
  semver?: { range?: string };
  alphabetical?: { order?: string };
  numerical?: { order?: string };
}

interface RawFilter {
  pattern?: string;
  extract?: string;
}

interface PolicyCase {
  src?: string;
  label: string;
  policy: RawPolicy;
  filterTags?: RawFilter;
  tags: string[] | null;
  expected: string | null;
  error?: string;
}

interface FilterCase {
  label: string;
  filterTags: RawFilter;
  tags: string[];
  expectedItems: string[];
}

interface ExclusionCase {
  label: string;
  exclusionList: string[];
  tags: string[];
  expected: string[] | null;
}

interface Tables {
  cases: PolicyCase[];
  filterCases: FilterCase[];
  semverRangeParse: { valid: string[]; invalid: string[] };
  semverTagParse: { valid: string[]; invalid: string[] };
  exclusionCases: ExclusionCase[];
}

/** Flux's ImagePolicyChoice → pawl's; null where Flux reports "invalid policy". Order is case-insensitive in Flux. */
function choiceOf(raw: RawPolicy): PolicyChoice | null {
  const order = (o: string | undefined): 'asc' | 'desc' | null => {
    const l = (o ?? 'asc').toLowerCase();
    return l === 'asc' || l === 'desc' ? l : null;
  };
  if (raw.semver) return { strategy: 'semver', range: raw.semver.range ?? '' };
  if (raw.alphabetical) {
    const o = order(raw.alphabetical.order);
    return o ? { strategy: 'alphabetical', order: o } : null;
  }
  if (raw.numerical) {
    const o = order(raw.numerical.order);
    return o ? { strategy: 'numerical', order: o } : null;
  }
  return null;
}

function filterOf(raw: RawFilter | undefined): { pattern: string; extract: string } | undefined {
  return raw ? { pattern: raw.pattern ?? '', extract: raw.extract ?? '' } : undefined;
}

/** Errors Flux's policers return verbatim (the other `error` texts describe controller conditions). */
const POLICER_ERRORS = [
  'version list argument cannot be empty',
  'unable to determine latest version from provided list',
  'failed to parse invalid numeric value',
];

function checkCase(c: PolicyCase): string | null {
  const choice = choiceOf(c.policy);
  if (choice === null) return c.expected === null ? null : 'pawl rejects a policy Flux accepts';
  let compiled;
  try {
    compiled = compilePolicy({ policy: choice, filterTags: filterOf(c.filterTags) }, []);
  } catch (err) {
    if (c.expected === null) return null;
    return `pawl rejects the policy: ${err instanceof Error ? err.message : String(err)}`;
  }
  const sel = compiled.select(c.tags ?? []);
  if (sel.tag !== c.expected)
    return `selected ${JSON.stringify(sel.tag)}, Flux ${JSON.stringify(c.expected)} (${sel.error ?? 'no error'})`;
  if (c.expected === null && sel.error === null) return 'no tag and no error';

  // Where the case pins down the policer itself, its result and words must be Flux's too.
  const fluxError = c.error !== undefined ? POLICER_ERRORS.find((e) => c.error!.startsWith(e)) : undefined;
  if (c.src?.includes('internal/policy/') && !c.filterTags) {
    const tags = c.tags ?? [];
    const r =
      choice.strategy === 'semver'
        ? semverLatest(parseSemverRange(choice.range), tags)
        : choice.strategy === 'alphabetical'
          ? alphabeticalLatest(choice.order, tags)
          : choice.strategy === 'numerical'
            ? numericalLatest(choice.order, tags)
            : null;
    if (r !== null) {
      if ('latest' in r && r.latest !== c.expected)
        return `policer chose ${JSON.stringify(r.latest)}, Flux ${JSON.stringify(c.expected)}`;
      if ('error' in r && c.expected !== null) return `policer failed: ${r.error}`;
      if ('error' in r && c.error !== undefined && r.error !== c.error)
        return `policer said ${JSON.stringify(r.error)}, Flux ${JSON.stringify(c.error)}`;
    }
  }
  if (
    fluxError !== undefined &&
    sel.error !== null &&
    !sel.error.startsWith(fluxError) &&
    (c.tags ?? []).length > 0
  ) {
    return `error ${JSON.stringify(sel.error)} does not start with Flux's ${JSON.stringify(fluxError)}`;
  }
  return null;
}

function checkFilter(c: FilterCase): string | null {
  const compiled = compilePolicy(
    { policy: { strategy: 'alphabetical', order: 'asc' }, filterTags: filterOf(c.filterTags) },
    [],
  );
  const items = [...new Set(compiled.select(c.tags).candidates.map((x) => x.extracted))].sort();
  const want = [...c.expectedItems].sort();
  return JSON.stringify(items) === JSON.stringify(want)
    ? null
    : `items ${JSON.stringify(items)}, Flux ${JSON.stringify(want)}`;
}

function checkExclusion(c: ExclusionCase): string | null {
  let kept: string[];
  try {
    kept = applyExclusions(c.tags, compileExclusions(c.exclusionList));
  } catch (err) {
    return c.expected === null
      ? null
      : `pawl rejects the list: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (c.expected === null) return 'pawl accepts an exclusion list Flux rejects';
  return JSON.stringify(kept) === JSON.stringify(c.expected)
    ? null
    : `kept ${JSON.stringify(kept)}, Flux ${JSON.stringify(c.expected)}`;
}

function rangeParses(r: string): boolean {
  try {
    parseSemverRange(r);
    return true;
  } catch {
    return false;
  }
}

export function runPolicyConformance(dir: string): ConformanceResult {
  const tables = JSON.parse(readFileSync(join(dir, 'policy-cases.json'), 'utf8')) as Tables;
  const result: ConformanceResult = { passed: 0, failed: [] };
  const record = (id: string, run: () => string | null): void => {
    let message: string | null;
    try {
      message = run();
    } catch (err) {
      message = `threw: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (message === null) result.passed++;
    else result.failed.push({ id, message });
  };

  tables.cases.forEach((c, i) => record(`cases[${i}] ${c.label}`, () => checkCase(c)));
  tables.filterCases.forEach((c, i) => record(`filterCases[${i}] ${c.label}`, () => checkFilter(c)));
  for (const r of tables.semverRangeParse.valid) {
    record(`semverRangeParse valid ${JSON.stringify(r)}`, () => (rangeParses(r) ? null : 'rejected'));
  }
  for (const r of tables.semverRangeParse.invalid) {
    record(`semverRangeParse invalid ${JSON.stringify(r)}`, () => (rangeParses(r) ? 'accepted' : null));
  }
  for (const t of tables.semverTagParse.valid) {
    record(`semverTagParse valid ${JSON.stringify(t)}`, () => (parseVersion(t) ? null : 'rejected'));
  }
  for (const t of tables.semverTagParse.invalid) {
    record(`semverTagParse invalid ${JSON.stringify(t)}`, () => (parseVersion(t) ? 'accepted' : null));
  }
  tables.exclusionCases.forEach((c, i) => record(`exclusionCases[${i}] ${c.label}`, () => checkExclusion(c)));
  return result;
}
