/**
 * Scale (issue 27): how `pawl run` (one pass, the CLI as shipped: bin/pawl.js over the esbuild
 * bundle) and `pawl serve` (the daemon as built, plain node, its shipped `--heap small`) grow
 * with the number of images and the number of tags per image.
 *
 * Cases (BENCH_SCALE_CASES, default `500x10,2000x10,100x10,100x500,100x5000`; add `10000x10`
 * for the big one, a few minutes): IMAGESxTAGS. Each image is an ImageRepository with a semver
 * ImagePolicy (`>=1.0.0`) and one Deployment manifest whose marker holds the oldest tag; the
 * tags are 1.0.0, 1.1.0, … 1.(TAGS−1).0. BENCH_SCALE_MODE=run or =serve runs one half.
 *
 * The registry is Debian's docker-registry, but its content is written straight into its
 * filesystem storage (distribution's layout) instead of pushed: per image one config blob (its
 * own `created`, so no two images share a digest, as in real registries), one manifest blob, the
 * repository's layer and revision links, and every tag's `current/link`. The
 * registry then lists, HEADs and serves them as if pushed; pushing 10,000 images one request at a
 * time would take longer than the measurements. Writing 5,000 tags' links per image is slow too
 * (~0.5 ms a tag here: 500,000 tags would take minutes), so beyond 10 tags the registry holds
 * only each image's oldest and newest tag and the test proxy (test/helpers/registry-proxy.ts,
 * `setTagList`) answers the tag list with all of them; manifests and blobs still come from the
 * registry. pawl talks to the proxy in every case. A manifest GET, a config GET and a tag list of
 * one generated image check the layout before anything is measured.
 *
 * One pass (`run`): a fresh bare repository and state directory; `cold` moves every marker to the
 * newest tag (one commit touching N lines, verified), `warm` (`run --refresh`) right after
 * rescans everything and finds it up to date (verified). CPU and peak RSS from
 * `/usr/bin/time -f '%U %S %M'` (pawl's process and the git processes it waited for; peak RSS is
 * the largest of them, not their sum), wall measured around the spawn.
 *
 * The daemon (`serve`): the same images over 10 GitRepositories (N/10 manifests each), one
 * ImageUpdateAutomation per GitRepository. Round 1 starts with every marker on the oldest tag:
 * every repository scanned and every automation pushed once. Round 2 (steady state): every
 * repository scanned again and every automation run again, up to date. CPU from
 * /proc/PID/stat (utime + stime: the daemon's own process), peak RSS from /proc/PID/status
 * VmHWM, at the end of each round.
 *
 * BENCH_SCALE_ENTRIES=NAME=DIR[=FLAGS],…: built CLIs (directories under the repository, e.g.
 * bench/out/base) whose daemons are compared, alternated within each case (A B for each case, B A
 * for the next) on the same registry; FLAGS, space-separated, are node flags for that entry's
 * daemon alone (one build under two sets of flags), and among them NAME=VALUE (upper case) its
 * environment (e.g. MALLOC_ARENA_MAX=2). Unset, this tree is built into dist/ and
 * measured alone.
 * BENCH_SCALE_POLL_MS: how often the bench scrapes each daemon's /metrics to see a round's end
 * (default 500; a scrape at 10,000 images is ~2 MB of text, so the rate is part of the peak).
 * BENCH_SCALE_SNAPSHOT=DIR: a heap snapshot of the daemon after each round (after its figures
 * are read: writing one grows the RSS), written into DIR.
 *
 * Per-image figure: CPU of the case / images; the marginal per-image cost between two sizes is
 * the difference of their CPU over the difference of their images (what "linear" means: flat
 * marginal cost). Per-tag: (CPU at 100 × T − CPU at 100 × 10) / (100 × (T − 10)).
 */
import { buildCli } from '../scripts/build.js';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { startRegistry, type TestRegistry } from '../test/helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../test/helpers/registry-proxy.js';
import { startGitServer, type GitServer } from '../test/helpers/git-server.js';
import { GIT_PASSWORD, GIT_USER, ROOT, gitObjects, imageObjects } from '../test/helpers/world.js';
import { metricValue, startServe } from '../test/helpers/serve.js';
import type { RunReport } from '../src/run/report.js';

const execFileP = promisify(execFile);
const CASES = (process.env.BENCH_SCALE_CASES ?? '500x10,2000x10,100x10,100x500,100x5000')
  .split(',')
  .map((c) => {
    const [images, tags] = c.split('x').map(Number);
    if (!images || !tags || tags < 2) throw new Error(`BENCH_SCALE_CASES: "${c}" is not IMAGESxTAGS`);
    return { images, tags };
  });
const MODES = (process.env.BENCH_SCALE_MODE ?? 'run,serve').split(',');
const SHIPPED = join(ROOT, 'bin', 'pawl.js');
const PROFILE_DIR =
  process.env.BENCH_PROFILE === '1' ? join(ROOT, 'bench', 'out', 'profiles') : process.env.BENCH_PROFILE;
const PROFILE = PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
const GITS = 10;
const ENTRIES = (process.env.BENCH_SCALE_ENTRIES ?? '')
  .split(',')
  .filter(Boolean)
  .map((p) => {
    const [name, dir, ...flags] = p.split('=');
    if (!name || !dir) throw new Error(`BENCH_SCALE_ENTRIES: "${p}" is not NAME=DIR[=FLAGS]`);
    const words = flags.join('=').split(' ').filter(Boolean);
    const isEnv = (w: string) => /^[A-Z][A-Z0-9_]*=/.test(w);
    return {
      name,
      entry: join(ROOT, dir, 'cli', 'main.js'),
      nodeArgs: words.filter((w) => !isEnv(w)),
      env: Object.fromEntries(
        words.filter(isEnv).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
      ),
    };
  });
const SNAPSHOT_DIR = process.env.BENCH_SCALE_SNAPSHOT;
/** BENCH_SCALE_NODE_ARGS: node flags for every daemon, space-separated (heap flags: the daemon's own are then not set). */
const NODE_ARGS = (process.env.BENCH_SCALE_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** How long a round may take before the case fails (BENCH_SCALE_ROUND_MINUTES; a loaded machine needs more). */
const ROUND_MINUTES = Number(process.env.BENCH_SCALE_ROUND_MINUTES ?? 8);
const POLL_MS = Number(process.env.BENCH_SCALE_POLL_MS ?? 500);
const TARGET_RSS_MB = 300;

function fail(message: string): never {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

const load = (): string =>
  execFileSync('uptime', { encoding: 'utf8' })
    .trim()
    .replace(/^.*load average:\s*/, '');

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const tagsOf = (n: number): string[] => Array.from({ length: n }, (_, i) => `1.${i}.0`);
const repoOf = (i: number) => `scale/app-${i}`;

/**
 * Beyond 10 tags per image only the oldest and the newest are written into the registry (the
 * markers' and the selection's, which pawl HEADs); the proxy serves the whole generated list.
 */
const stored = (tags: string[]): string[] => (tags.length <= 10 ? tags : [tags[0]!, tags.at(-1)!]);

/**
 * Writes N images with T tags each into the registry's filesystem storage (see the header).
 * Synchronous calls: hundreds of thousands of tiny files, and the thread pool's round trips
 * would cost more than the writes.
 */
function generate(registry: TestRegistry, images: number, tags: string[]): void {
  const v2 = join(registry.storageDir, 'docker/registry/v2');
  const blob = (data: string): string => {
    const hex = sha256(data);
    const dir = join(v2, 'blobs/sha256', hex.slice(0, 2), hex);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'data'), data);
    return hex;
  };
  const link = (path: string, hex: string) => {
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, 'link'), `sha256:${hex}`);
  };
  const layer = 'pawl scale bench layer\n';
  const layerHex = blob(layer);
  for (let i = 0; i < images; i++) {
    const config = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {},
      rootfs: { type: 'layers', diff_ids: [`sha256:${layerHex}`] },
      created: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(),
    });
    const configHex = blob(config);
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: {
        mediaType: 'application/vnd.oci.image.config.v1+json',
        digest: `sha256:${configHex}`,
        size: config.length,
      },
      layers: [
        {
          mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip',
          digest: `sha256:${layerHex}`,
          size: layer.length,
        },
      ],
    });
    const manifestHex = blob(manifest);
    const repo = join(v2, 'repositories', repoOf(i));
    link(join(repo, '_layers/sha256', configHex), configHex);
    link(join(repo, '_layers/sha256', layerHex), layerHex);
    link(join(repo, '_manifests/revisions/sha256', manifestHex), manifestHex);
    for (const tag of stored(tags)) {
      // Only `current`: listing reads the tag directories and a HEAD or GET by tag reads this
      // link; the tag's `index/` (which digests it has pointed to) serves deletes, not pawl.
      link(join(repo, '_manifests/tags', tag, 'current'), manifestHex);
    }
  }
}

/** The registry serves what generate() wrote: the newest tag of the last image, and its config. */
async function checkRegistry(
  registry: TestRegistry | RegistryProxy,
  images: number,
  tags: string[],
): Promise<void> {
  const repo = repoOf(images - 1);
  const accept = 'application/vnd.oci.image.manifest.v1+json';
  const m = await fetch(`${registry.url}/v2/${repo}/manifests/${tags.at(-1)}`, { headers: { accept } });
  if (!m.ok) fail(`generated registry: GET ${repo}:${tags.at(-1)} answered ${m.status}`);
  const manifest = (await m.json()) as { config: { digest: string } };
  const c = await fetch(`${registry.url}/v2/${repo}/blobs/${manifest.config.digest}`);
  if (!c.ok) fail(`generated registry: config blob answered ${c.status}`);
  await c.arrayBuffer();
  const l = await fetch(`${registry.url}/v2/${repo}/tags/list`);
  const listed = ((await l.json()) as { tags: string[] }).tags;
  if (listed.length !== tags.length)
    fail(`generated registry: ${listed.length} tags listed, not ${tags.length}`);
}

/**
 * The bare repository on the git server holding `files` in one commit, made in a scratch work
 * tree and pushed by path: the server's commitFiles runs two git processes a file, minutes for
 * 10,000 files on this machine.
 */
async function bareRepo(git: GitServer, name: string, files: Record<string, string>): Promise<void> {
  await git.createBareRepo(name, {});
  const tree = await mkdtemp(join(tmpdir(), 'pawl-bench-scale-tree-'));
  try {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(tree, path)), { recursive: true });
      writeFileSync(join(tree, path), content);
    }
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 'bench',
      GIT_AUTHOR_EMAIL: 'bench@example.com',
      GIT_COMMITTER_NAME: 'bench',
      GIT_COMMITTER_EMAIL: 'bench@example.com',
    };
    // No automatic gc: it can still be writing into .git when the tree is removed.
    const run = (args: string[]) => execFileP('git', ['-c', 'gc.auto=0', ...args], { cwd: tree, env });
    await run(['init', '--quiet', '--initial-branch=main']);
    await run(['add', '-A']);
    await run(['commit', '--quiet', '-m', 'initial commit']);
    await run(['push', '--quiet', '--force', git.repoPath(name), 'main:main']);
  } finally {
    await rm(tree, { recursive: true, force: true, maxRetries: 5 });
  }
}

const manifestFile = (i: number, host: string, tag: string): string =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n` +
  `        - name: app\n          image: ${host}/${repoOf(i)}:${tag} # {"$imagepolicy": "flux-system:app-${i}"}\n`;

interface Measured {
  wallMs: number;
  cpuMs: number;
  rssMb: number;
}

/** `node bin/pawl.js ARGS` under /usr/bin/time. */
async function timedCli(
  args: string[],
): Promise<Measured & { stdout: string; stderr: string; code: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-bench-time-'));
  const out = join(dir, 'time');
  const t0 = performance.now();
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      '/usr/bin/time',
      ['-o', out, '-f', '%e %U %S %M', process.execPath, ...PROFILE, SHIPPED, ...args],
      {
        cwd: ROOT,
        env: { ...process.env, PAWL_LOG_LEVEL: 'warn', PAWL_USE_DIST: '1' },
        maxBuffer: 1024 * 1024 * 1024,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
  const wallMs = performance.now() - t0;
  const [, user, sys, kib] = (await readFile(out, 'utf8')).trim().split('\n').at(-1)!.split(/\s+/);
  await rm(dir, { recursive: true, force: true });
  return { wallMs, cpuMs: (Number(user) + Number(sys)) * 1000, rssMb: Number(kib) / 1024, ...r };
}

interface Row {
  mode: 'run' | 'serve';
  /** The daemon's build (BENCH_SCALE_ENTRIES), '' for this tree's. */
  build: string;
  images: number;
  tags: number;
  phase: string;
  wallMs: number;
  cpuMs: number;
  rssMb: number;
}
const rows: Row[] = [];

async function onePass(
  registry: RegistryProxy,
  git: GitServer,
  work: string,
  images: number,
  tags: string[],
) {
  const name = `run-${images}x${tags.length}`;
  const files: Record<string, string> = {};
  for (let i = 0; i < images; i++)
    files[`apps/app-${i}/deploy.yaml`] = manifestFile(i, registry.host, tags[0]!);
  await bareRepo(git, name, files);
  const configDir = join(work, name, 'config');
  const stateDir = join(work, name, 'state');
  await mkdir(configDir, { recursive: true });
  await writeFile(join(configDir, 'git.yaml'), gitObjects().replaceAll('{{GIT_URL}}', git.cloneUrl(name)));
  const objects: string[] = [];
  for (let i = 0; i < images; i++)
    objects.push(imageObjects(`app-${i}`, `${registry.host}/${repoOf(i)}`, 'semver:\n  range: ">=1.0.0"'));
  await writeFile(join(configDir, 'images.yaml'), objects.join('---\n'));
  for (const phase of ['cold', 'warm'] as const) {
    const m = await timedCli([
      'run',
      ...(phase === 'warm' ? ['--refresh'] : []),
      '--json',
      '-c',
      configDir,
      '--state-dir',
      stateDir,
    ]);
    let report: RunReport;
    try {
      report = JSON.parse(m.stdout) as RunReport;
    } catch {
      fail(`${name} ${phase}: no JSON (exit ${m.code}): ${m.stderr.slice(0, 2000)}`);
    }
    const a = report.automations[0];
    const want = phase === 'cold' ? 'pushed' : 'up-to-date';
    if (m.code !== 0 || a?.result !== want)
      fail(`${name} ${phase}: ${a?.result} ${a?.error ?? m.stderr.slice(0, 2000)}`);
    if (
      phase === 'cold' &&
      (a.changes.length !== images || a.changes.some((c) => !c.new.endsWith(tags.at(-1)!)))
    )
      fail(`${name} cold: ${a.changes.length} changes, expected ${images} to ${tags.at(-1)}`);
    if (phase === 'warm' && report.repositories.some((r) => !r.scanned || r.error))
      fail(`${name} warm: not every repository was rescanned`);
    rows.push({
      mode: 'run',
      build: '',
      images,
      tags: tags.length,
      phase,
      wallMs: m.wallMs,
      cpuMs: m.cpuMs,
      rssMb: m.rssMb,
    });
    console.log(
      `  run ${images}×${tags.length} ${phase}: ${Math.round(m.wallMs)} ms wall, ${Math.round(m.cpuMs)} ms CPU, ${m.rssMb.toFixed(0)} MB (load ${load()})`,
    );
  }
  const commits = await git.log(name, 'main');
  if (commits.length !== 2) fail(`${name}: ${commits.length - 1} commits, expected 1`);
  await rm(join(work, name), { recursive: true, force: true });
}

async function daemon(
  registry: RegistryProxy,
  git: GitServer,
  work: string,
  entry: string,
  build: string,
  entryArgs: string[],
  entryEnv: Record<string, string>,
  images: number,
  tags: string[],
) {
  const name = `serve-${build ? `${build}-` : ''}${images}x${tags.length}`;
  const per = Math.ceil(images / GITS);
  const docs: string[] = [
    `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
  ];
  // Rounds are counted, not timed: the interval only has to be longer than a round.
  const interval = images >= 5000 ? '10m' : '5m';
  for (let g = 0; g < GITS; g++) {
    const files: Record<string, string> = {};
    for (let i = g * per; i < Math.min(images, (g + 1) * per); i++)
      files[`apps/app-${i}/deploy.yaml`] = manifestFile(i, registry.host, tags[0]!);
    await bareRepo(git, `${name}-${g}`, files);
    docs.push(
      `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet-${g}\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl(`${name}-${g}`)}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: fleet-${g}\n  namespace: flux-system\nspec:\n  interval: ${interval}\n  sourceRef:\n    kind: GitRepository\n    name: fleet-${g}\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./\n    strategy: Setters\n`,
    );
  }
  for (let i = 0; i < images; i++)
    docs.push(
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/${repoOf(i)}\n  interval: ${interval}\n  insecure: true\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
    );
  const configDir = join(work, name, 'config');
  await mkdir(configDir, { recursive: true });
  await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
  const serve = await startServe({
    configDir,
    stateDir: join(work, name, 'state'),
    entry,
    nodeArgs: [
      ...PROFILE,
      ...NODE_ARGS,
      ...entryArgs,
      ...(SNAPSHOT_DIR ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${SNAPSHOT_DIR}`] : []),
    ],
    args: ['--log-level', 'warn', '--start-spread', '1s'],
    env: entryEnv,
  });
  const pid = serve.child.pid!;
  const proc = async () => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return {
      hwm: kb('VmHWM') / 1024,
      rss: kb('VmRSS') / 1024,
      cpuMs: (Number(stat[11]) + Number(stat[12])) * 10,
    };
  };
  const started = performance.now();
  try {
    const counts = async () => {
      const m = await serve.metrics();
      return {
        scans: metricValue(m, 'pawl_scans_total'),
        runs: metricValue(m, 'pawl_automation_runs_total'),
        pushed: metricValue(m, 'pawl_automation_runs_total', { result: 'pushed' }),
        failed:
          metricValue(m, 'pawl_automation_runs_total', { result: 'failed' }) +
          metricValue(m, 'pawl_scans_total', { outcome: 'failed' }),
      };
    };
    const until = async (what: string, done: (c: Awaited<ReturnType<typeof counts>>) => boolean) => {
      for (;;) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        const c = await counts();
        if (c.failed > 0) fail(`${name} ${what}: ${c.failed} failed scans or passes`);
        if (done(c)) return c;
        if (performance.now() - roundStart > ROUND_MINUTES * 60_000)
          fail(`${name}: ${what} not done in ${ROUND_MINUTES} minutes: ${JSON.stringify(c)}`);
      }
    };
    let before = { cpuMs: 0, at: started, scans: 0, runs: 0 };
    let roundStart = started;
    const round = async (phase: string, done: Parameters<typeof until>[1]) => {
      roundStart = performance.now();
      const c = await until(phase, done);
      const p = await proc();
      const at = performance.now();
      rows.push({
        mode: 'serve',
        build,
        images,
        tags: tags.length,
        phase,
        wallMs: at - before.at,
        cpuMs: p.cpuMs - before.cpuMs,
        rssMb: p.hwm,
      });
      console.log(
        `  serve${build ? ` [${build}]` : ''} ${images}×${tags.length} ${phase}: ${Math.round(at - before.at)} ms, ${Math.round(p.cpuMs - before.cpuMs)} ms CPU, VmHWM ${p.hwm.toFixed(0)} MB, VmRSS ${p.rss.toFixed(0)} MB, ${c.scans - before.scans} scans, ${c.runs - before.runs} passes (load ${load()})`,
      );
      if (SNAPSHOT_DIR) {
        process.kill(pid, 'SIGUSR2');
        // The snapshot is written synchronously on the daemon's thread: a metrics answer means it is done.
        await new Promise((r) => setTimeout(r, 1000));
        await serve.metrics();
      }
      before = { cpuMs: p.cpuMs, at: performance.now(), scans: c.scans, runs: c.runs };
    };
    await round('round 1 (cold)', (c) => c.scans >= images && c.pushed >= GITS);
    // Round 2: every repository and automation asked to run now (`pawl reconcile`'s POST,
    // without waiting for the outcome) rather than waiting out the interval; the daemon's CPU
    // for round 2 includes answering these N + 10 requests.
    const base = await counts();
    const asks = [
      ...Array.from({ length: images }, (_, i) => `repositories/flux-system/app-${i}`),
      ...Array.from({ length: GITS }, (_, g) => `automations/flux-system/fleet-${g}`),
    ];
    let nextAsk = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (nextAsk < asks.length) {
          const r = await fetch(`http://${serve.admin}/api/v1/${asks[nextAsk++]}/reconcile?wait=0`, {
            method: 'POST',
          });
          await r.arrayBuffer();
          if (r.status !== 200 && r.status !== 202) fail(`${name}: reconcile answered ${r.status}`);
        }
      }),
    );
    await round('round 2 (steady)', (c) => c.scans >= base.scans + images && c.runs >= base.runs + GITS);
    const m = await serve.metrics();
    if (metricValue(m, 'pawl_automation_runs_total', { result: 'pushed' }) !== GITS)
      fail(`${name}: round 2 pushed again`);
  } finally {
    await serve.stop();
    await rm(join(work, name), { recursive: true, force: true });
  }
}

console.log(`load average at start: ${load()} (${execFileSync('nproc', { encoding: 'utf8' }).trim()} CPUs)`);
if (ENTRIES.length === 0) {
  await buildCli(join(ROOT, 'dist'));
  ENTRIES.push({ name: '', entry: join(ROOT, 'dist', 'cli', 'main.js'), nodeArgs: [], env: {} });
}
const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
const work = await mkdtemp(join(tmpdir(), 'pawl-bench-scale-'));
try {
  for (const { images, tags: t } of CASES) {
    const tags = tagsOf(t);
    const upstream = await startRegistry({ auth: 'none' });
    const registry = await startRegistryProxy(upstream.url);
    try {
      const t0 = performance.now();
      generate(upstream, images, tags);
      if (tags.length > 10) for (let i = 0; i < images; i++) registry.setTagList(repoOf(i), tags);
      await checkRegistry(registry, images, tags);
      console.log(
        `${images} images × ${t} tags written into the registry in ${Math.round(performance.now() - t0)} ms`,
      );
      if (MODES.includes('run')) await onePass(registry, git, work, images, tags);
      if (MODES.includes('serve')) {
        const order =
          CASES.findIndex((c) => c.images === images && c.tags === t) % 2 ? [...ENTRIES].reverse() : ENTRIES;
        for (const { name, entry, nodeArgs, env } of order)
          await daemon(registry, git, work, entry, name, nodeArgs, env, images, tags);
      }
    } finally {
      await registry.stop();
      await upstream.stop();
    }
  }
} finally {
  await git.close();
  await rm(work, { recursive: true, force: true });
}

// --- figures
const get = (mode: string, images: number, tags: number, phase: string, build = '') =>
  rows.find(
    (r) =>
      r.mode === mode &&
      r.build === build &&
      r.images === images &&
      r.tags === tags &&
      r.phase.startsWith(phase),
  );
console.log('\nmode   images × tags  phase             wall ms   CPU ms  peak RSS MB  CPU µs/image');
for (const r of rows)
  console.log(
    `${(r.build ? `${r.mode}[${r.build}]` : r.mode).padEnd(6)} ${`${r.images} × ${r.tags}`.padEnd(14)} ${r.phase.padEnd(16)} ${String(Math.round(r.wallMs)).padStart(8)} ${String(Math.round(r.cpuMs)).padStart(8)} ${r.rssMb.toFixed(0).padStart(12)} ${String(Math.round((r.cpuMs * 1000) / r.images)).padStart(13)}`,
  );
const sizes = [...new Set(rows.filter((r) => r.tags === 10 && r.images >= 500).map((r) => r.images))].sort(
  (a, b) => a - b,
);
console.log('\nmarginal CPU per image (10 tags), between consecutive sizes:');
const builds = [...new Set(rows.map((r) => r.build))];
for (const mode of ['run', 'serve'])
  for (const build of builds)
    for (const phase of mode === 'run' ? ['cold', 'warm'] : ['round 1', 'round 2']) {
      const parts: string[] = [];
      for (let k = 1; k < sizes.length; k++) {
        const a = get(mode, sizes[k - 1]!, 10, phase, build);
        const b = get(mode, sizes[k]!, 10, phase, build);
        if (a && b)
          parts.push(
            `${a.images}→${b.images}: ${(((b.cpuMs - a.cpuMs) * 1000) / (b.images - a.images)).toFixed(0)} µs`,
          );
      }
      if (parts.length) console.log(`  ${mode}${build ? `[${build}]` : ''} ${phase}: ${parts.join(', ')}`);
    }
console.log('marginal CPU per extra tag (100 images), over 100 × 10:');
for (const mode of ['run', 'serve'])
  for (const phase of mode === 'run' ? ['cold', 'warm'] : ['round 1', 'round 2']) {
    const base = get(mode, 100, 10, phase);
    const parts: string[] = [];
    for (const r of rows.filter(
      (x) => x.mode === mode && x.images === 100 && x.tags > 10 && x.phase.startsWith(phase),
    ))
      if (base)
        parts.push(`× ${r.tags}: ${(((r.cpuMs - base.cpuMs) * 1000) / (100 * (r.tags - 10))).toFixed(1)} µs`);
    if (parts.length) console.log(`  ${mode} ${phase}: ${parts.join(', ')}`);
  }
const peak = Math.max(0, ...rows.filter((r) => r.mode === 'serve').map((r) => r.rssMb));
if (peak)
  console.log(
    `daemon peak RSS (VmHWM): ${peak.toFixed(0)} MB (target ≤ ${TARGET_RSS_MB} MB at 10,000 images)`,
  );
console.log(`load average at end: ${load()}`);
