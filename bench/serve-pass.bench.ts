/**
 * The daemon's pass against the one-shot pass (issue 27), in one run on one world: N
 * ImageRepositories and ImagePolicies (BENCH_IMAGES, default 500; tags 1.0.0…1.4.0), one
 * GitRepository of N manifests whose markers hold 1.0.0, one ImageUpdateAutomation over all of
 * them, and a `distribution` Receiver for the first image. Both run as built (`npm run build`'s
 * bundle into bench/out/dist, plain node, as the container image runs them).
 *
 *   one-shot  `pawl run` on an empty state directory: scans N repositories, writes N lines in one
 *             commit and pushes it. CPU from `/usr/bin/time` (pawl's process and the git processes
 *             it waited for).
 *   daemon    the remote's branch put back, `pawl serve` on an empty state directory until its
 *             first pass has pushed: the same work. CPU from /proc/PID/stat (utime + stime: the
 *             daemon; cutime + cstime: the git processes it waited for).
 *   webhook   BENCH_CHANGES times (default 10): a new tag of the first image is pushed, its
 *             notification posted to the Receiver, and the pass that commits it waited for; the
 *             daemon's CPU delta around each (the one changed image among N unchanged).
 *
 * BENCH_PROFILE=DIR writes a V8 CPU profile of the daemon (on its exit) and of the one-shot run.
 * BENCH_GIT_LOG=FILE runs the daemon with a `git` on PATH that appends each invocation to FILE
 * (its bash start-up is then in the children's CPU). Target (#27): the daemon's first pass ≤ the
 * one-shot pass's CPU; a webhook pass ≤ 50 ms of the daemon's own CPU beyond its requests and git.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildCli } from '../scripts/build.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { pushImage, pushTags, seedTags } from '../test/helpers/push.js';
import { freePort, startRegistry } from '../test/helpers/registry.js';
import { metricValue, startServe, type LogRecord } from '../test/helpers/serve.js';
import { GIT_PASSWORD, GIT_USER, ROOT } from '../test/helpers/world.js';
import { HOOK_PATH, RECEIVER, TOKEN } from '../test/serve/fixtures.js';

const execFileP = promisify(execFile);
const N = Number(process.env.BENCH_IMAGES ?? 500);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 10);
const TAGS = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0'];
const PROFILE = process.env.BENCH_PROFILE;
const GIT_LOG = process.env.BENCH_GIT_LOG;
/**
 * BENCH_AB=NAME=DIR[=NODE_ARGS[=SERVE_ARGS]],…: built CLIs (directories under the repository, e.g.
 * bench/out/base) compared, alternated ABBA… for BENCH_ROUNDS rounds; NODE_ARGS and SERVE_ARGS
 * (words joined by `+`) are given to the daemon of that entry only; a flag's own `=` before a
 * digit stays in the flag (`--max-semi-space-size=8`).
 */
const AB = (process.env.BENCH_AB ?? '')
  .split(',')
  .filter(Boolean)
  .map((p) => {
    const [name = '', dir = '', nodeArgs = '', serveArgs = ''] = p.split(/=(?!\d)/);
    const words = (w: string) => w.split('+').filter(Boolean);
    return { name, dir, nodeArgs: words(nodeArgs), serveArgs: words(serveArgs) };
  });
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const AB_WEBHOOKS = Number(process.env.BENCH_AB_WEBHOOKS ?? 0);
const AB_WARM = Number(process.env.BENCH_AB_WARM ?? 5);
const TARGET_WEBHOOK_CPU_MS = 50;

/** The daemon's resident memory now and at its peak (VmRSS/VmHWM), MB. */
const rssOf = async (pid: number): Promise<string> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const mb = (key: string) =>
    Math.round(Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024);
  return `${mb('VmRSS')}/${mb('VmHWM')}`;
};

const loadavg = async (): Promise<string> =>
  (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
/** utime + stime and cutime + cstime of a process, ms (clock ticks of 10 ms). */
async function cpu(pid: number): Promise<{ self: number; children: number }> {
  const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return { self: (Number(f[11]) + Number(f[12])) * 10, children: (Number(f[13]) + Number(f[14])) * 10 };
}

/**
 * The CPU of a process's live threads, ms to the microsecond: the scheduler's `sum_exec_runtime`
 * of each thread (/proc/PID/task/TID/sched). A webhook pass is a few 10 ms ticks, so `cpu`'s
 * figure for one pass is mostly rounding; this one is not. A thread that ended between two reads
 * takes its time with it, so this is for the deltas of a daemon whose threads live as long as it
 * does (libuv's pool, V8's workers). Null where the kernel does not expose it.
 */
async function threadsCpu(pid: number): Promise<number | null> {
  try {
    let ms = 0;
    for (const tid of await readdir(`/proc/${pid}/task`)) {
      const m = /se\.sum_exec_runtime\s*:\s*([\d.]+)/.exec(
        await readFile(`/proc/${pid}/task/${tid}/sched`, 'utf8').catch(() => ''),
      );
      if (m) ms += Number(m[1]);
    }
    return ms > 0 ? ms : null;
  } catch {
    return null;
  }
}

console.log(`serve-pass: ${N} images, load average ${await loadavg()} at the start`);
const registry = await startRegistry({ auth: 'none' });
const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
const base = await mkdtemp(join(tmpdir(), 'pawl-serve-pass-'));
const configDir = join(base, 'config');
await mkdir(configDir);
let failed = false;
let serve: Awaited<ReturnType<typeof startServe>> | undefined;
try {
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
  const files: Record<string, string> = {};
  for (let i = 0; i < N; i++)
    files[`apps/app-${i}/deploy.yaml`] =
      `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  template:\n    spec:\n      containers:\n` +
      `        - name: app\n          image: ${registry.host}/bench/app-${i}:${TAGS[0]} # {"$imagepolicy": "flux-system:app-${i}"}\n`;
  const initial = await git.createBareRepo('fleet', files);
  const docs = [
    `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
    `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl('fleet')}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps\n    strategy: Setters\n`,
    `apiVersion: notification.toolkit.fluxcd.io/v1\nkind: Receiver\nmetadata:\n  name: ${RECEIVER.name}\n  namespace: ${RECEIVER.namespace}\nspec:\n  type: distribution\n  resources:\n    - apiVersion: image.toolkit.fluxcd.io/v1\n      kind: ImageRepository\n      name: app-0\n  secretRef:\n    name: webhook-token\n`,
    `apiVersion: v1\nkind: Secret\nmetadata:\n  name: webhook-token\n  namespace: flux-system\nstringData:\n  token: ${TOKEN}\n`,
  ];
  for (let i = 0; i < N; i++)
    docs.push(
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/bench/app-${i}\n  interval: 1h\n  insecure: true\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
    );
  await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
  const refFile = join(git.repoPath('fleet'), 'refs', 'heads', 'main');
  const remoteHead = async (): Promise<string> => (await readFile(refFile, 'utf8').catch(() => '')).trim();
  const profile = (name: string): string[] =>
    PROFILE ? ['--cpu-prof', '--cpu-prof-dir', PROFILE, '--cpu-prof-name', `${name}.cpuprofile`] : [];
  let env: Record<string, string> = {};
  if (GIT_LOG) {
    const bin = join(base, 'bin');
    await mkdir(bin);
    const real = (await execFileP('sh', ['-c', 'command -v git'])).stdout.trim();
    await writeFile(
      join(bin, 'git'),
      `#!/bin/sh\necho "$*" >> ${JSON.stringify(GIT_LOG)}\nexec ${real} "$@"\n`,
    );
    await chmod(join(bin, 'git'), 0o755);
    env = { PATH: `${bin}:${process.env.PATH ?? ''}` };
  }
  let run = 0;

  /** The one-shot pass on an empty state directory, the remote's branch put back first. */
  const oneShot = async (entry: string, name: string): Promise<number> => {
    await execFileP('git', ['--git-dir', git.repoPath('fleet'), 'update-ref', 'refs/heads/main', initial]);
    const loadBefore = await loadavg();
    const t0 = performance.now();
    const { stderr } = await execFileP(
      '/usr/bin/time',
      [
        '-f',
        'TIME %U %S %M',
        process.execPath,
        ...profile(`one-shot-${name}`),
        entry,
        'run',
        '-c',
        configDir,
      ],
      {
        cwd: ROOT,
        env: { ...process.env, PAWL_STATE_DIR: join(base, `cli-state-${run++}`) },
        maxBuffer: 64 << 20,
      },
    ).catch((err: { stdout?: string; stderr?: string }) => {
      throw new Error(`pawl run failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    });
    const wall = performance.now() - t0;
    const [, u, s, rss] = /TIME (\S+) (\S+) (\S+)/.exec(stderr)!;
    const ms = Math.round((Number(u) + Number(s)) * 1000);
    if ((await remoteHead()) === initial) throw new Error('pawl run did not push');
    console.log(
      `  ${name} one-shot pawl run (cold): ${Math.round(wall)} ms wall, ${Math.round(ms)} ms CPU (pawl + git), peak RSS ${Math.round(Number(rss) / 1024)} MB; load ${loadBefore} → ${await loadavg()}`,
    );
    return ms;
  };

  /** `pawl serve` on an empty state directory until its first pass has pushed: the same work. */
  const daemonFirst = async (
    entry: string,
    name: string,
    nodeArgs: string[] = [],
    serveArgs: string[] = [],
  ): Promise<number> => {
    await execFileP('git', ['--git-dir', git.repoPath('fleet'), 'update-ref', 'refs/heads/main', initial]);
    const port = await freePort();
    const loadDaemon = await loadavg();
    const t1 = performance.now();
    serve = await startServe({
      configDir,
      stateDir: join(base, `daemon-state-${run++}`),
      listenPort: port,
      entry,
      env,
      nodeArgs: [
        ...profile(`daemon-${name}`),
        ...(process.env.BENCH_DAEMON_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
        ...nodeArgs,
      ],
      args: ['--log-level', process.env.BENCH_DAEMON_LOG_LEVEL ?? 'info', ...serveArgs],
    });
    const first = await serve.waitForLog((r) => r.msg === 'pass', 'the first pass', 600_000);
    const daemonWall = performance.now() - t1;
    if (first.result !== 'pushed') throw new Error(`the daemon's first pass: ${JSON.stringify(first)}`);
    const c = await cpu(serve.child.pid!);
    console.log(
      `  ${name} daemon, start to its first pass pushed: ${Math.round(daemonWall)} ms wall, ${c.self + c.children} ms CPU (daemon ${c.self}, git ${c.children}); pass ${String(first.ms)} ms; load ${loadDaemon} → ${await loadavg()}`,
    );
    // What the daemon does right after its first pass (the listeners' apps built, the optimizer
    // on) is not the pass; shown apart.
    await new Promise((r) => setTimeout(r, 3000));
    const later = await cpu(serve.child.pid!);
    console.log(
      `    3 s later: ${later.self + later.children} ms CPU (+${later.self + later.children - c.self - c.children})`,
    );
    return c.self + c.children;
  };

  /** Pushed tags of the changed image so far: every webhook names a newer one, across builds. */
  let changed = 0;

  /**
   * `changes` webhook-triggered passes (one new tag of the first image among N unchanged each);
   * the daemon's CPU around each, and git's (its children), ms a pass.
   */
  async function webhooks(
    sv: NonNullable<typeof serve>,
    name: string,
    changes: number,
  ): Promise<{ self: number[]; git: number[] }> {
    const passes = (): LogRecord[] => sv.records().filter((r) => r.msg === 'pass');
    const selfs: number[] = [];
    /** The same, from the threads' scheduler clocks (threadsCpu). */
    const precise: number[] = [];
    const gits: number[] = [];
    const walls: number[] = [];
    const passMs: number[] = [];
    const loadHooks = await loadavg();
    let gitLines = 0;
    const gitPerPass: number[] = [];
    for (let k = 1; k <= changes; k++) {
      const tag = `1.5.${++changed}`;
      await pushTags(registry.url, 'bench/app-0', [tag]);
      const before = await remoteHead();
      const count = passes().length;
      if (GIT_LOG) gitLines = (await readFile(GIT_LOG, 'utf8').catch(() => '')).split('\n').length;
      const c0 = await cpu(sv.child.pid!);
      const t0 = await threadsCpu(sv.child.pid!);
      const h0 = performance.now();
      const res = await fetch(sv.hookUrl(HOOK_PATH), {
        method: 'POST',
        headers: {
          'content-type': 'application/vnd.docker.distribution.events.v1+json',
          authorization: `Bearer ${TOKEN}`,
        },
        body: JSON.stringify({
          events: [
            {
              id: `bench-${changed}`,
              timestamp: new Date().toISOString(),
              action: 'push',
              target: {
                mediaType: 'application/vnd.oci.image.manifest.v1+json',
                digest: `sha256:${'0'.repeat(64)}`,
                repository: 'bench/app-0',
                tag,
              },
            },
          ],
        }),
      });
      await res.text();
      if (res.status >= 300) throw new Error(`the Receiver answered ${res.status}`);
      const rec = await sv.waitForLog(
        (r) => r.msg === 'pass' && passes().indexOf(r) >= count && r.result === 'pushed',
        `the pass for ${tag}`,
        60_000,
      );
      walls.push(performance.now() - h0);
      if ((await remoteHead()) === before) throw new Error(`no commit for ${tag}`);
      // Anything the pass leaves to do after its log line (events, metrics) is counted too.
      await new Promise((r) => setTimeout(r, 200));
      const c1 = await cpu(sv.child.pid!);
      const t1 = await threadsCpu(sv.child.pid!);
      if (t0 !== null && t1 !== null) precise.push(t1 - t0);
      if (passes().length > count + 1) console.log(`  (${tag}: ${passes().length - count} passes)`);
      selfs.push(c1.self - c0.self);
      gits.push(c1.children - c0.children);
      if (GIT_LOG) {
        const lines = (await readFile(GIT_LOG, 'utf8')).split('\n').length;
        gitPerPass.push(lines - gitLines);
      }
      passMs.push(Number(rec.ms));
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    console.log(
      `  ${name} webhook pass, 1 changed of ${N} (${changes} passes): webhook → pass logged median ${Math.round(median(walls))} ms, max ${Math.round(Math.max(...walls))} ms`,
    );
    console.log(
      `    daemon CPU a pass: mean ${(sum(selfs) / changes).toFixed(0)} ms, median ${median(selfs)} (each ${selfs.join(' ')}; target ≤ ${TARGET_WEBHOOK_CPU_MS} beyond requests and git); git CPU a pass: mean ${(sum(gits) / changes).toFixed(0)} ms`,
    );
    if (precise.length === changes) {
      const sorted = [...precise].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
      console.log(
        `    daemon CPU a pass, to the microsecond (its threads' scheduler clocks): mean ${(sum(precise) / changes).toFixed(1)} ms, median ${median(precise).toFixed(1)}, p90 ${at(0.9).toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)}`,
      );
    }
    console.log(`    the pass's own ms (its record): ${passMs.join(' ')}`);
    if (GIT_LOG) console.log(`    git processes a pass: ${gitPerPass.join(' ')}`);
    console.log(`    load ${loadHooks} → ${await loadavg()}`);
    return { self: selfs, git: gits };
  }

  if (AB.length > 0) {
    // A/B: the builds alternated (ABBA…) on the same world: the daemon's first pass, and with
    // BENCH_AB_WEBHOOKS=K its K webhook passes after it (the first BENCH_AB_WARM of them, default
    // 5, left out of the figure: the optimizer is still compiling the pass).
    const results = new Map<
      string,
      { oneShot: number[]; daemon: number[]; hook: number[]; git: number[]; rss: string[] }
    >();
    for (const { name } of AB) results.set(name, { oneShot: [], daemon: [], hook: [], git: [], rss: [] });
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? AB : [...AB].reverse();
      for (const { name, dir, nodeArgs, serveArgs } of order) {
        const entry = join(ROOT, dir, 'cli', 'main.js');
        const r = results.get(name)!;
        if (!AB_WEBHOOKS) r.oneShot.push(await oneShot(entry, name));
        r.daemon.push(await daemonFirst(entry, name, nodeArgs, serveArgs));
        if (AB_WEBHOOKS) {
          const w = await webhooks(serve!, name, AB_WEBHOOKS);
          r.hook.push(...w.self.slice(AB_WARM));
          r.git.push(...w.git.slice(AB_WARM));
        }
        r.rss.push(await rssOf(serve!.child.pid!));
        await serve!.stop();
        serve = undefined;
      }
    }
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    for (const [name, r] of results)
      if (AB_WEBHOOKS)
        console.log(
          `  ${name}: webhook pass, daemon CPU mean ${mean(r.hook).toFixed(1)} ms, median ${median(r.hook)} (${r.hook.length} passes after the first ${AB_WARM} of each daemon); git CPU mean ${mean(r.git).toFixed(1)} ms; daemon's first pass ${r.daemon.join(' ')} ms; RSS now/peak ${r.rss.join(' ')} MB`,
        );
      else
        console.log(
          `  ${name}: daemon ${r.daemon.join(' ')} ms; one-shot ${r.oneShot.join(' ')} ms; daemon / one-shot ${r.daemon.map((d, i) => (d / r.oneShot[i]!).toFixed(2)).join(' ')} (median daemon ${median(r.daemon)}, one-shot ${median(r.oneShot)}); daemon RSS now/peak ${r.rss.join(' ')} MB`,
        );
    console.log(`  load ${await loadavg()} at the end`);
  } else await single();

  async function single(): Promise<void> {
    // BENCH_ENTRY=DIR: a CLI built before (e.g. bench/out/base) instead of building this tree.
    const out = process.env.BENCH_ENTRY
      ? join(ROOT, process.env.BENCH_ENTRY)
      : join(ROOT, 'bench', 'out', 'dist');
    if (!process.env.BENCH_ENTRY) await buildCli(out);
    const entry = join(out, 'cli', 'main.js');
    const oneShotCpu = await oneShot(entry, '');
    const daemonCpu = await daemonFirst(entry, '');
    const sv = serve!;
    const m = await sv.metrics();
    console.log(
      `  daemon's first pass: ${metricValue(m, 'pawl_scans_total')} scans, ${metricValue(m, 'pawl_automation_runs_total')} automation passes`,
    );
    console.log(`  daemon / one-shot CPU: ${(daemonCpu / oneShotCpu).toFixed(2)} (target ≤ 1)`);
    await new Promise((r) => setTimeout(r, 2000));
    const idle0 = await cpu(sv.child.pid!);
    await new Promise((r) => setTimeout(r, 2000));
    const idle1 = await cpu(sv.child.pid!);
    console.log(`  daemon idle: ${(idle1.self - idle0.self) / 2} ms CPU a second`);

    await webhooks(sv, '', CHANGES);
    const warnings = sv.records().filter((r) => r.level >= 40);
    for (const w of warnings.slice(0, 5)) console.log(`  warning: ${w.msg} ${String(w.error ?? '')}`);
  }
} catch (err) {
  console.error(`FAIL: ${(err as Error).message}`);
  failed = true;
} finally {
  await serve?.stop();
  await git.close();
  await registry.stop();
  await rm(base, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
