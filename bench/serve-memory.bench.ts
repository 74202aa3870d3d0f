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
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRegistry } from '../test/helpers/registry.js';
import { pushImage, seedTags } from '../test/helpers/push.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { GIT_PASSWORD, GIT_USER, ROOT } from '../test/helpers/world.js';
import { metricValue, startServe } from '../test/helpers/serve.js';

const N = Number(process.env.BENCH_IMAGES ?? 500);
const GITS = 10;
const PASSES = Number(process.env.BENCH_SERVE_PASSES ?? 1000);
const INTERVAL = process.env.BENCH_SERVE_INTERVAL ?? '30s';
const TAGS = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0'];
const TARGET_MB = 150;

const registry = await startRegistry({ auth: 'none' });
const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
const base = await mkdtemp(join(tmpdir(), 'pawl-serve-mem-'));
const configDir = join(base, 'config');
const stateDir = join(base, 'state');
await mkdir(configDir);
const t0 = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < N) {
      const i = next++;
      const { digest } = await pushImage(registry.url, `bench/app-${i}`, TAGS[0]!, {
        created: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
      });
      await seedTags(registry.storageDir, `bench/app-${i}`, TAGS.slice(1), digest);
    }
  }),
);
const perGit = Math.ceil(N / GITS);
for (let g = 0; g < GITS; g++) {
  const files: Record<string, string> = {};
  for (let i = g * perGit; i < Math.min(N, (g + 1) * perGit); i++)
    files[`apps/app-${i}/deploy.yaml`] =
      `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  template:\n    spec:\n      containers:\n` +
      `        - name: app\n          image: ${registry.host}/bench/app-${i}:1.4.0 # {"$imagepolicy": "flux-system:app-${i}"}\n`;
  await git.createBareRepo(`fleet-${g}`, files);
}
const docs: string[] = [
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
];
for (let g = 0; g < GITS; g++)
  docs.push(
    `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet-${g}\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl(`fleet-${g}`)}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
  );
for (let i = 0; i < N; i++) {
  const g = Math.floor(i / perGit);
  docs.push(
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/bench/app-${i}\n  interval: ${INTERVAL}\n  insecure: true\n`,
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\n  labels:\n    app: app-${i}\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  interval: ${INTERVAL}\n  sourceRef:\n    kind: GitRepository\n    name: fleet-${g}\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps/app-${i}\n    strategy: Setters\n  policySelector:\n    matchLabels:\n      app: app-${i}\n`,
  );
}
await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
console.log(
  `setup: ${N} repositories, policies and automations on ${GITS} git repositories in ${Math.round(performance.now() - t0)} ms`,
);

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
  await git.close();
  await registry.stop();
  await rm(base, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
