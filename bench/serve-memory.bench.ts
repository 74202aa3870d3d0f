/**
 * `pawl serve` memory (issue 11): the real daemon (`node --import tsx src/cli/main.ts serve`)
 * with 500 ImageRepositories, 500 ImagePolicies and 500 ImageUpdateAutomations (10 GitRepositories
 * of 50 apps each, every marker up to date: the steady state), every interval 30s, until 1,000
 * automation passes have run (BENCH_SERVE_PASSES). RSS is read from /proc/PID/status (VmRSS, and
 * VmHWM for the peak) every second; the figures at each 10% of the passes show whether it grows.
 * Target: peak ≤ 150 MB, flat. The daemon runs as built (`npm run build`'s bundle, scripts/build.ts, into
 * bench/out/dist, run with plain node, as the container image does); BENCH_SERVE_TSX=1 runs the
 * sources through tsx instead (its loader thread adds about 35 MB). BENCH_SERVE_HEAP=default runs
 * the daemon with `--heap default` (node's own heap sizing) instead of its default `small`.
 */
import { buildCli } from '../scripts/build.js';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../test/helpers/world.js';
import { startServeFleet } from './serve-fleet.js';
import { metricValue, startServe } from '../test/helpers/serve.js';

const N = Number(process.env.BENCH_IMAGES ?? 500);
const GITS = 10;
const PASSES = Number(process.env.BENCH_SERVE_PASSES ?? 1000);
const INTERVAL = process.env.BENCH_SERVE_INTERVAL ?? '30s';
const TAGS = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0'];
const TARGET_MB = 150;

const fleet = await startServeFleet({
  images: N,
  gitRepositories: GITS,
  tags: TAGS,
  repositoryInterval: INTERVAL,
  automationInterval: INTERVAL,
  name: 'serve-mem',
});
const { configDir, base } = fleet;
const stateDir = join(base, 'state');

let entry: string | undefined;
if (!process.env.BENCH_SERVE_TSX) {
  const out = join(ROOT, 'bench', 'out', 'dist');
  await buildCli(out);
  entry = join(out, 'cli', 'main.js');
}
const serve = await startServe({
  configDir,
  stateDir,
  ...(entry ? { entry } : {}),
  // BENCH_SERVE_NODE_OPTIONS: V8 flags for the daemon only, e.g. --max-old-space-size=64.
  ...(process.env.BENCH_SERVE_NODE_OPTIONS
    ? { env: { NODE_OPTIONS: process.env.BENCH_SERVE_NODE_OPTIONS } }
    : {}),
  args: [
    '--log-level',
    'warn',
    '--start-spread',
    INTERVAL,
    ...(process.env.BENCH_SERVE_HEAP ? ['--heap', process.env.BENCH_SERVE_HEAP] : []),
  ],
});
const status = async (): Promise<{ rss: number; hwm: number }> => {
  const text = await readFile(`/proc/${serve.child.pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
};
const samples: { passes: number; rss: number; at: number }[] = [];
let failed = false;
try {
  const started = performance.now();
  let passes = 0;
  let failures = 0;
  while (passes < PASSES) {
    await new Promise((r) => setTimeout(r, 1000));
    const m = await serve.metrics();
    passes = metricValue(m, 'pawl_automation_runs_total');
    failures = metricValue(m, 'pawl_automation_runs_total', { result: 'failed' });
    samples.push({ passes, rss: (await status()).rss, at: (performance.now() - started) / 1000 });
    if (performance.now() - started > 30 * 60_000) throw new Error(`only ${passes} passes in 30 minutes`);
  }
  const { hwm } = await status();
  // utime and stime, fields 14 and 15 of /proc/PID/stat, in clock ticks (100 a second on Linux).
  const stat = (await readFile(`/proc/${serve.child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const cpuSeconds = (Number(stat[11]) + Number(stat[12])) / 100;
  const m = await serve.metrics();
  const mb = (name: string, labels: Record<string, string> = {}) =>
    Math.round(metricValue(m, name, labels) / 2 ** 20);
  console.log(
    `  at the end: heap used ${mb('pawl_nodejs_heap_size_used_bytes')} MB of ${mb('pawl_nodejs_heap_size_total_bytes')} MB, ` +
      `external ${mb('pawl_nodejs_external_memory_bytes')} MB, RSS ${mb('pawl_process_resident_memory_bytes')} MB`,
  );
  const scans = metricValue(m, 'pawl_scans_total');
  console.log(
    `serve memory: ${passes} automation passes (${failures} failed), ${scans} scans, in ${Math.round(samples.at(-1)!.at)} s; daemon CPU ${cpuSeconds.toFixed(1)} s`,
  );
  const marks = Array.from(
    { length: 10 },
    (_, k) => samples.find((s) => s.passes >= ((k + 1) * PASSES) / 10) ?? samples.at(-1)!,
  );
  console.log(
    `  RSS (MB) at each 10% of passes: ${marks.map((s) => `${s.passes}:${Math.round(s.rss)}`).join(' ')}`,
  );
  console.log(
    `  peak RSS (VmHWM) ${Math.round(hwm)} MB (target ≤ ${TARGET_MB}), heap mode ${process.env.BENCH_SERVE_HEAP ?? 'small'}`,
  );
  const firstHalf = marks.slice(1, 5).map((s) => s.rss);
  const secondHalf = marks.slice(5).map((s) => s.rss);
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(
    `  growth, second half vs first half (after warm-up): ${Math.round(avg(secondHalf) - avg(firstHalf))} MB`,
  );
  console.log(
    `  load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  if (hwm > TARGET_MB) console.log('  OVER TARGET');
  const problems = new Map<string, number>();
  for (const r of serve.records())
    if (r.level >= 40)
      problems.set(
        String(r.error ?? r.msg).slice(0, 200),
        (problems.get(String(r.error ?? r.msg).slice(0, 200)) ?? 0) + 1,
      );
  for (const [p, n] of problems) console.log(`  warning ×${n}: ${p}`);
} catch (err) {
  console.error(`FAIL: ${(err as Error).message}`);
  failed = true;
} finally {
  await serve.stop();
  await fleet.close();
}
process.exitCode = failed ? 1 : 0;
