/**
 * `pawl run` end to end (issues 4 and 5): the CLI process over 500 manifests that reference 500
 * images (500 ImageRepositories + 500 semver ImagePolicies, 10 tags each, 1.0.0…1.9.0), with
 * Debian's docker-registry behind the counting proxy and a smart-HTTP git server, all on loopback.
 *
 * Scenarios, each run BENCH_RUNS times (default 3, median reported), guarded (SPEC §4 defaults)
 * and unguarded (`downgrades: Allow, manualEdits: Override, verifyCandidate: false`, Flux's
 * behaviour) interleaved so machine load hits both alike:
 *   cold     empty state dir, no workspace clone: one commit touching the 500 marked lines;
 *   warm     `run --refresh` right after: every repository rescanned, everything up to date;
 *   not-due  `run` right after that: no scan due (interval 1m), markers read, nothing to do;
 *   release  one new release (1.10.0) in 50 repositories, `run --refresh`: one commit, 50 lines.
 * And, guarded only, build times: 50 markers hold `hotfix-1`, a tag that fails the semver
 * policy, so the guard orders it against the candidate by build time (it is newer: kept,
 * `downgrade-blocked`). The first pass reads those build times; a second pass reads none
 * (cached by digest).
 *
 * Wall time: measured here around the spawn of `node --import tsx src/cli/main.ts run …` (so it
 * includes node's and tsx's start-up; the `--help` floor is printed for comparison). Peak RSS:
 * `/usr/bin/time -f %M` of that process (getrusage of the waited child: the largest of pawl's
 * node process and the git processes it waited for, not their sum). Every pass is verified
 * (result, commit count, lines touched); a wrong result fails the bench.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRegistry } from '../test/helpers/registry.js';
import { startRegistryProxy, type RegistryProxy, type RequestKind } from '../test/helpers/registry-proxy.js';
import { pushImage, seedTags } from '../test/helpers/push.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { GIT_PASSWORD, GIT_USER, ROOT, gitObjects, imageObjects } from '../test/helpers/world.js';
import type { RunReport } from '../src/run/report.js';

const execFileP = promisify(execFile);
const N = Number(process.env.BENCH_IMAGES ?? 500);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const RELEASED = Math.max(1, Math.min(50, Math.floor(N / 10)));
const HOTFIX = Math.max(1, Math.min(50, Math.floor(N / 10)));
const TAGS = Array.from({ length: 10 }, (_, i) => `1.${i}.0`);
const CLI = join(ROOT, 'src', 'cli', 'main.ts');
const UNGUARDED = 'downgrades: Allow\nmanualEdits: Override\nverifyCandidate: false';
/** BENCH_PROFILE=DIR: write a V8 CPU profile of every CLI run there (figures then include the profiler). */
const PROFILE = process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROFILE] : [];
const TARGET_WALL_MS = 5000;
const TARGET_RSS_MB = 250;
const TARGET_GUARD = 0.2;

function fail(message: string): never {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const load = (): string =>
  execFileSync('uptime', { encoding: 'utf8' })
    .trim()
    .replace(/^.*load average:\s*/, '');

interface Measured {
  wallMs: number;
  /** User + system CPU of the process and the children it waited for (git): less load-sensitive than wall time. */
  cpuMs: number;
  rssMb: number;
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The CLI as shipped (`npm run build` + bin/pawl.js run compiled JavaScript, no tsx): an esbuild
 * bundle of src/cli/main.ts with the packages external, built once into the temp dir. Null
 * when it does not bundle (another module mid-change); the bundled rows are then left out.
 */
function bundleCli(outDir: string): string | null {
  const r = spawnSync(
    join(ROOT, 'node_modules', '.bin', 'esbuild'),
    [
      CLI,
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--packages=external',
      `--outdir=${outDir}`,
      '--entry-names=[name]',
      '--log-level=error',
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) {
    console.log(
      `(the CLI does not bundle right now, bundled rows left out: ${(r.stderr || r.error?.message || '').trim().split('\n')[0]})`,
    );
    return null;
  }
  return join(outDir, 'main.js');
}

/** Runs the CLI (tsx from source, or the bundle) under /usr/bin/time; wall time measured here, peak RSS from time's %M (KiB). */
async function timedCli(args: string[], bundle?: string): Promise<Measured> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-bench-time-'));
  const out = join(dir, 'time');
  const t0 = performance.now();
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      '/usr/bin/time',
      [
        '-o',
        out,
        '-f',
        '%e %U %S %M',
        process.execPath,
        ...PROFILE,
        ...(bundle ? [bundle] : ['--import', 'tsx', CLI]),
        ...args,
      ],
      { cwd: ROOT, env: { ...process.env, PAWL_LOG_LEVEL: 'warn' }, maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
  const wallMs = performance.now() - t0;
  // The last line: an abnormal exit puts "Command exited with non-zero status N" before it.
  const [, user, sys, kib] = (await readFile(out, 'utf8')).trim().split('\n').at(-1)!.split(/\s+/);
  await rm(dir, { recursive: true, force: true });
  return { wallMs, cpuMs: (Number(user) + Number(sys)) * 1000, rssMb: Number(kib) / 1024, ...r };
}

const KINDS: RequestKind[] = ['ping', 'tags', 'manifest-head', 'manifest-get', 'blob', 'other'];
type Counts = Record<RequestKind, number>;
const counts = (p: RegistryProxy): Counts => Object.fromEntries(KINDS.map((k) => [k, p.count(k)])) as Counts;

const manifest = (i: number, image: string, tag: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-${i}
  namespace: apps
  labels:
    app: app-${i}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: app-${i}
  template:
    metadata:
      labels:
        app: app-${i}
    spec:
      containers:
        - name: app
          image: ${image}:${tag} # {"$imagepolicy": "flux-system:app-${i}"}
          ports:
            - containerPort: 8080
`;

console.log(`load average at start: ${load()} (${execFileSync('nproc', { encoding: 'utf8' }).trim()} CPUs)`);

const registry = await startRegistry({ auth: 'none' });
const proxy = await startRegistryProxy(registry.url);
const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
const work = await mkdtemp(join(tmpdir(), 'pawl-bench-run-'));
const repoOf = (i: number) => `bench/app-${i}`;
const imageOf = (i: number) => `${proxy.host}/${repoOf(i)}`;

try {
  // --- registry: one pushed image per repository, the other nine tags linked to it on disk;
  // `hotfix-1` (newer build) in the first 50 for the build-time scenario.
  const t = performance.now();
  // Distinct build times per repository, so no two repositories share a digest (as in real registries).
  const at = (s: string, i = 0) => new Date(Date.parse(s) + i * 1000);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) {
        const i = next++;
        const { digest } = await pushImage(registry.url, repoOf(i), TAGS[0]!, {
          created: at('2024-01-01T00:00:00Z', i),
        });
        await seedTags(registry.storageDir, repoOf(i), TAGS.slice(1), digest);
        if (i < HOTFIX)
          await pushImage(registry.url, repoOf(i), 'hotfix-1', { created: at('2025-06-01T00:00:00Z', i) });
      }
    }),
  );
  console.log(
    `setup: ${N} repositories × ${TAGS.length} tags (+ hotfix-1 in ${HOTFIX}) in ${Math.round(performance.now() - t)} ms`,
  );

  const images = Array.from({ length: N }, (_, i) => i);
  const objects = (guard: string | undefined) =>
    images
      .map((i) => imageObjects(`app-${i}`, imageOf(i), 'semver:\n  range: ">=1.0.0"', guard ? { guard } : {}))
      .join('---\n');
  const guardedYaml = objects(undefined);
  const unguardedYaml = objects(UNGUARDED);

  let worlds = 0;
  /** A fresh bare repository, config dir and empty state dir. */
  async function world(guard: 'guarded' | 'unguarded', tagFor: (i: number) => string) {
    const name = `fleet-${++worlds}`;
    const files: Record<string, string> = {};
    for (const i of images) files[`apps/app-${i}/deploy.yaml`] = manifest(i, imageOf(i), tagFor(i));
    await git.createBareRepo(name, files);
    const base = join(work, name);
    const configDir = join(base, 'config');
    const stateDir = join(base, 'state');
    await mkdir(configDir, { recursive: true });
    await writeFile(join(configDir, 'git.yaml'), gitObjects().replaceAll('{{GIT_URL}}', git.cloneUrl(name)));
    await writeFile(join(configDir, 'images.yaml'), guard === 'guarded' ? guardedYaml : unguardedYaml);
    return {
      name,
      run: async (extra: string[], bundle?: string) => {
        proxy.resetCounts();
        const m = await timedCli(
          ['run', ...extra, '--json', '-c', configDir, '--state-dir', stateDir],
          bundle,
        );
        let report: RunReport;
        try {
          report = JSON.parse(m.stdout) as RunReport;
        } catch {
          fail(`${name} run ${extra.join(' ')}: no JSON (exit ${m.code}): ${m.stderr.slice(0, 2000)}`);
        }
        return { ...m, report, requests: counts(proxy) };
      },
      commits: async () => (await git.log(name, 'main')).length,
      /** Files and changed lines of the newest commit. */
      lastDiff: async () => {
        const { stdout } = await execFileP('git', [
          '--git-dir',
          git.repoPath(name),
          'diff',
          '--numstat',
          'main~1',
          'main',
        ]);
        const rows = stdout
          .trim()
          .split('\n')
          .map((l) => l.split('\t').map(Number));
        return {
          files: rows.length,
          added: rows.reduce((n, r) => n + r[0]!, 0),
          removed: rows.reduce((n, r) => n + r[1]!, 0),
        };
      },
      close: () => rm(base, { recursive: true, force: true }),
    };
  }

  async function release(on: boolean): Promise<void> {
    for (let i = 0; i < RELEASED; i++) {
      // Every 10th repository: spread over the set rather than its first 50.
      const r = (i * Math.floor(N / RELEASED)) % N;
      const repo = repoOf(r);
      if (on) await pushImage(registry.url, repo, '1.10.0', { created: at('2024-02-01T00:00:00Z', r) });
      else
        await rm(
          join(registry.storageDir, 'docker/registry/v2/repositories', repo, '_manifests/tags/1.10.0'),
          { recursive: true, force: true },
        );
    }
  }

  type Row = { wallMs: number; cpuMs: number; rssMb: number; requests: Counts };
  const results = new Map<string, Row[]>();
  const record = (key: string, r: Row) => results.set(key, [...(results.get(key) ?? []), r]);

  // --- the --help floor
  // Inside the checkout (bench/out is ignored by git) so the bundle's imports resolve from node_modules.
  const bundle = bundleCli(join(ROOT, 'bench', 'out', 'run-cli'));
  for (let k = 0; k < RUNS; k++) {
    record('help', { ...(await timedCli(['--help'])), requests: counts(proxy) });
    if (bundle) record('bundled help', { ...(await timedCli(['--help'], bundle)), requests: counts(proxy) });
  }

  /** A cold pass, verified: one commit touching exactly the N marked lines. */
  async function coldPass(variant: string, w: Awaited<ReturnType<typeof world>>, bundle?: string) {
    const cold = await w.run([], bundle);
    const a = cold.report.automations[0];
    if (cold.code !== 0 || a?.result !== 'pushed')
      fail(`${variant} cold: ${a?.result} ${a?.error ?? cold.stderr.slice(0, 2000)}`);
    if ((await w.commits()) !== 2) fail(`${variant} cold: expected exactly one new commit`);
    const d = await w.lastDiff();
    if (d.files !== N || d.added !== N || d.removed !== N || a.changes.length !== N)
      fail(
        `${variant} cold: expected ${N} files, ${N} lines changed; got ${JSON.stringify(d)}, ${a.changes.length} changes`,
      );
    if (a.changes.some((c) => c.new !== TAGS.at(-1) && !c.new.endsWith(`:${TAGS.at(-1)}`)))
      fail(`${variant} cold: not every marker went to ${TAGS.at(-1)}`);
    return cold;
  }

  for (let k = 0; k < RUNS; k++) {
    for (const variant of k % 2 === 0
      ? (['guarded', 'unguarded'] as const)
      : (['unguarded', 'guarded'] as const)) {
      if (bundle) {
        const wb = await world(variant, () => TAGS[0]!);
        record(`bundled ${variant} cold`, await coldPass(`bundled ${variant}`, wb, bundle));
        await wb.close();
      }
      const w = await world(variant, () => TAGS[0]!);
      record(`${variant} cold`, await coldPass(variant, w));

      const warm = await w.run(['--refresh']);
      const b = warm.report.automations[0];
      if (
        warm.code !== 0 ||
        b?.result !== 'up-to-date' ||
        b.changes.length !== 0 ||
        b.kept.some((x) => x.reason !== 'up-to-date')
      )
        fail(`${variant} warm: expected up-to-date, got ${b?.result} ${b?.error ?? ''}`);
      if (warm.report.repositories.some((r) => !r.scanned || r.error))
        fail(`${variant} warm: not every repository was rescanned`);
      if ((await w.commits()) !== 2) fail(`${variant} warm: made a commit`);
      record(`${variant} warm`, warm);

      // Right after: nothing is due (interval 1m), so no scan; markers read, nothing written.
      const idle = await w.run([]);
      const e = idle.report.automations[0];
      if (idle.code !== 0 || e?.result !== 'up-to-date' || idle.report.repositories.some((r) => r.scanned))
        fail(`${variant} not due: ${e?.result}`);
      record(`${variant} not-due`, idle);

      await release(true);
      const rel = await w.run(['--refresh']);
      await release(false);
      const c = rel.report.automations[0];
      if (rel.code !== 0 || c?.result !== 'pushed' || c.changes.length !== RELEASED)
        fail(`${variant} release: ${c?.result}, ${c?.changes.length} changes ${c?.error ?? ''}`);
      const d2 = await w.lastDiff();
      if ((await w.commits()) !== 3 || d2.added !== RELEASED || d2.removed !== RELEASED)
        fail(`${variant} release: ${JSON.stringify(d2)}`);
      record(`${variant} release`, rel);
      await w.close();
    }

    // Build times: 50 markers on a tag the policy cannot order.
    const w = await world('guarded', (i) => (i < HOTFIX ? 'hotfix-1' : TAGS[0]!));
    for (const pass of ['first', 'second'] as const) {
      const r = await w.run(pass === 'first' ? [] : ['--refresh']);
      const a = r.report.automations[0];
      const blocked = a?.kept.filter((x) => x.reason === 'downgrade-blocked') ?? [];
      const want = pass === 'first' ? 'pushed' : 'up-to-date';
      if (
        r.code !== 0 ||
        a?.result !== want ||
        blocked.length !== HOTFIX ||
        a.changes.length !== (pass === 'first' ? N - HOTFIX : 0)
      )
        fail(
          `build times ${pass}: ${a?.result}, ${a?.changes.length} changes, ${blocked.length} downgrade-blocked ${a?.error ?? ''}`,
        );
      if (pass === 'second' && r.requests['manifest-get'] + r.requests.blob !== 0)
        fail(
          `build times second: read ${r.requests['manifest-get']} manifests and ${r.requests.blob} blobs again`,
        );
      record(`build-time ${pass}`, r);
    }
    await w.close();
  }

  // --- figures
  const loadEnd = load();
  const rows: string[][] = [];
  const med = (key: string) => {
    const xs = results.get(key) ?? [];
    const req = Object.fromEntries(KINDS.map((k) => [k, median(xs.map((x) => x.requests[k]))])) as Counts;
    return {
      wallMs: median(xs.map((x) => x.wallMs)),
      cpuMs: median(xs.map((x) => x.cpuMs)),
      rssMb: median(xs.map((x) => x.rssMb)),
      maxWall: Math.max(...xs.map((x) => x.wallMs)),
      minWall: Math.min(...xs.map((x) => x.wallMs)),
      req,
      n: xs.length,
    };
  };
  const fmtReq = (r: Counts) =>
    `${r.tags} list, ${r['manifest-head']} HEAD, ${r['manifest-get']} GET, ${r.blob} blob${r.ping ? `, ${r.ping} ping` : ''}${r.other ? `, ${r.other} other` : ''}`;
  const order = [
    'help',
    'bundled help',
    'bundled guarded cold',
    'bundled unguarded cold',
    'guarded cold',
    'unguarded cold',
    'guarded warm',
    'unguarded warm',
    'guarded not-due',
    'unguarded not-due',
    'guarded release',
    'unguarded release',
    'build-time first',
    'build-time second',
  ];
  const targets: Record<string, string> = {
    'guarded cold': `≤ ${TARGET_WALL_MS} ms, ≤ ${TARGET_RSS_MB} MB`,
    'bundled guarded cold': `≤ ${TARGET_WALL_MS} ms, ≤ ${TARGET_RSS_MB} MB`,
    'bundled unguarded cold': `≤ ${TARGET_WALL_MS} ms, ≤ ${TARGET_RSS_MB} MB`,
    'unguarded cold': `≤ ${TARGET_WALL_MS} ms, ≤ ${TARGET_RSS_MB} MB`,
    'build-time second': '0 GET, 0 blob',
  };
  for (const key of order) {
    if (!results.has(key)) continue;
    const m = med(key);
    rows.push([
      key.endsWith('help') ? `${key === 'help' ? '' : 'bundled '}pawl --help (start-up floor)` : key,
      `${Math.round(m.wallMs)}`,
      `${Math.round(m.minWall)}–${Math.round(m.maxWall)}`,
      `${Math.round(m.cpuMs)}`,
      m.rssMb.toFixed(0),
      key.endsWith('help') ? '' : fmtReq(m.req),
      targets[key] ?? '',
    ]);
  }
  const head = [
    'scenario',
    'wall ms (median)',
    'range',
    'CPU ms',
    'peak RSS MB',
    'registry requests (median)',
    'target',
  ];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) =>
    r
      .map((x, c) => (c === 1 || c === 3 || c === 4 ? x.padStart(widths[c]!) : x.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  console.log(
    `\n${N} manifests × ${N} images (${TAGS.length} tags each), ${RUNS} runs per scenario, registry behind the counting proxy, git over smart HTTP`,
  );
  console.log(line(head));
  for (const r of rows) console.log(line(r));

  const gc = med('guarded cold');
  const uc = med('unguarded cold');
  const over = (g: number, u: number) => `${(((g - u) / u) * 100).toFixed(0)}%`;
  console.log(`\nguard's cost (target ≤ ${TARGET_GUARD * 100}% over unguarded):`);
  for (const s of ['cold', 'warm', 'not-due', 'release']) {
    const g = med(`guarded ${s}`);
    const u = med(`unguarded ${s}`);
    console.log(
      `  ${s.padEnd(8)} wall: guarded ${Math.round(g.wallMs)} ms vs unguarded ${Math.round(u.wallMs)} ms: ${over(g.wallMs, u.wallMs)}; ` +
        `CPU: ${Math.round(g.cpuMs)} vs ${Math.round(u.cpuMs)} ms: ${over(g.cpuMs, u.cpuMs)}`,
    );
  }
  const bt1 = med('build-time first').req;
  const bt2 = med('build-time second').req;
  console.log(
    `build times: first pass ${bt1['manifest-get']} manifest GET + ${bt1.blob} blob for ${HOTFIX} hand-written tags; ` +
      `second pass ${bt2['manifest-get']} + ${bt2.blob} (target 0: cached by digest)`,
  );
  console.log(
    `cold pass (tsx): ${Math.round(gc.wallMs)} ms / ${gc.rssMb.toFixed(0)} MB guarded, ${Math.round(uc.wallMs)} ms / ${uc.rssMb.toFixed(0)} MB unguarded (targets ≤ ${TARGET_WALL_MS} ms, ≤ ${TARGET_RSS_MB} MB)`,
  );
  if (results.has('bundled guarded cold')) {
    const bg = med('bundled guarded cold');
    const bu = med('bundled unguarded cold');
    console.log(
      `cold pass (bundled, as shipped): ${Math.round(bg.wallMs)} ms / ${bg.rssMb.toFixed(0)} MB guarded, ${Math.round(bu.wallMs)} ms / ${bu.rssMb.toFixed(0)} MB unguarded; ` +
        `guard ${over(bg.wallMs, bu.wallMs)} wall, ${over(bg.cpuMs, bu.cpuMs)} CPU`,
    );
  }
  console.log(`load average at end: ${loadEnd}`);
  console.log(
    'ok: cold passes pushed one commit touching every marked line; warm passes were up to date; releases touched only their lines',
  );
} finally {
  await git.close();
  await proxy.stop();
  await registry.stop();
  await rm(work, { recursive: true, force: true });
}
