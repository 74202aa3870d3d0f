/**
 * Policy selection over 100,000 tags with filterTags + extract and a semver range
 * (target: ≤ 150 ms). Prints the median of several runs and the peak RSS.
 */
import os from 'node:os';
import { compilePolicy } from '../src/select/index.js';

const N = 100_000;
const RUNS = 9;

/** A registry's worth of tags: releases, prereleases, branch builds, signatures, noise. */
function makeTags(n: number): string[] {
  const tags: string[] = [];
  let seed = 42;
  const rand = (m: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % m;
  };
  for (let i = 0; i < n; i++) {
    const major = rand(20);
    const minor = rand(50);
    const patch = rand(100);
    switch (i % 5) {
      case 0:
        tags.push(`release-${major}.${minor}.${patch}`);
        break;
      case 1:
        tags.push(`release-${major}.${minor}.${patch}-rc.${rand(10)}`);
        break;
      case 2:
        tags.push(`main-${rand(1e9).toString(16)}-${1_600_000_000 + i}`);
        break;
      case 3:
        tags.push(`sha256-${rand(1e9).toString(16)}${rand(1e9).toString(16)}.sig`);
        break;
      default:
        tags.push(`v${major}.${minor}.${patch}`);
    }
  }
  return tags;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const tags = makeTags(N);
const exclusions = ['^.*\\.sig$'];

function bench(label: string, spec: Parameters<typeof compilePolicy>[0]): void {
  const times: number[] = [];
  const cpu: number[] = [];
  let selected: string | null = null;
  let candidates = 0;
  for (let r = 0; r < RUNS; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const policy = compilePolicy(spec, exclusions);
    const sel = policy.select(tags);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    selected = sel.tag;
    candidates = sel.candidates.length;
  }
  const fmt = (x: number): string => x.toFixed(1);
  process.stdout.write(
    `${label}: median ${fmt(median(times))} ms wall, ${fmt(median(cpu))} ms CPU (min ${fmt(Math.min(...times))}, max ${fmt(Math.max(...times))} wall, ${RUNS} runs) ` +
      `selected ${selected ?? 'none'} from ${candidates} candidates\n`,
  );
}

process.stdout.write(
  `policy selection over ${N.toLocaleString('en')} tags (exclusionList ^.*\\.sig$); load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} CPUs\n`,
);
bench('semver >=1.0.0 <15.0.0, filterTags ^release-(?P<v>.*)$ extract $v', {
  policy: { strategy: 'semver', range: '>=1.0.0 <15.0.0' },
  filterTags: { pattern: '^release-(?P<v>.*)$', extract: '$v' },
});
bench('semver 1.x, no filter', { policy: { strategy: 'semver', range: '1.x' } });
bench('numerical asc, filterTags ^main-[a-f0-9]+-(?P<ts>[0-9]+)$ extract $ts', {
  policy: { strategy: 'numerical', order: 'asc' },
  filterTags: { pattern: '^main-[a-f0-9]+-(?P<ts>[0-9]+)$', extract: '$ts' },
});
bench('alphabetical asc, no filter', { policy: { strategy: 'alphabetical', order: 'asc' } });
process.stdout.write(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB\n`);
