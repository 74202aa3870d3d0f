/**
 * `pawl setters apply` over a generated tree: 5,000 YAML files (~40 MB) holding 2,000 markers,
 * in-process and as the CLI (wall time, peak RSS), against `grep -rlF '"$imagepolicy"'` over the
 * same tree; and one 1 MB file with 2,500 markers. Targets: ≤ 1 s, ≤ 200 MB, within 10× grep;
 * the 1 MB file ≤ 300 ms. Prints figures; asserts nothing.
 *
 * The tree is deterministic: 250 application directories of 20 files; each file is a few
 * Kubernetes documents (Deployment, Service, ConfigMap with a large data block). 1,000 of the
 * files carry a Deployment with two marked containers (2,000 markers, 200 policies).
 */
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applySetters } from '../src/write/setters/apply.js';
import { buildCli } from '../scripts/build.js';
import { findMarkers, findMarkersByLibrary, MARKER_TOKEN } from '../src/write/setters/markers.js';
import type { ImageValue } from '../src/write/setters/rewrite.js';

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const POLICIES = 200;

/** Small deterministic PRNG (mulberry32) so every run builds the same tree. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function deployment(app: string, i: number, marked: boolean, policy: (k: number) => number): string {
  const container = (k: number): string => {
    const p = policy(k);
    const marker = marked ? ` # {"$imagepolicy": "apps:policy-${p}"}` : '';
    return [
      `      - name: c${k}`,
      `        image: registry.example.com/team/svc-${p}:1.0.${i % 7}${marker}`,
      '        ports:',
      '        - containerPort: 8080',
      '        env:',
      `        - name: APP_NAME`,
      `          value: "${app}"`,
      '        resources:',
      '          limits: {cpu: 500m, memory: 256Mi}',
    ].join('\n');
  };
  return [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata:',
    `  name: ${app}-${i}`,
    '  namespace: apps',
    '  labels:',
    `    app.kubernetes.io/name: ${app}`,
    'spec:',
    '  replicas: 2',
    '  template:',
    '    spec:',
    '      containers:',
    container(0),
    container(1),
    '',
  ].join('\n');
}

function filler(r: () => number, bytes: number): string {
  const lines: string[] = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: settings', 'data:'];
  let size = 0;
  for (let k = 0; size < bytes; k++) {
    const line = `  key_${k}: "${Math.floor(r() * 1e12).toString(36)} value ${k} # not a marker"`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n') + '\n';
}

async function generateTree(root: string): Promise<{ files: number; bytes: number; markers: number }> {
  const r = rng(42);
  let files = 0;
  let bytes = 0;
  let markers = 0;
  for (let d = 0; d < 250; d++) {
    const dir = join(root, 'apps', `app-${d}`);
    await mkdir(dir, { recursive: true });
    for (let f = 0; f < 20; f++) {
      const idx = d * 20 + f;
      const marked = idx % 5 === 0; // 1,000 of the 5,000 files
      const service = `apiVersion: v1\nkind: Service\nmetadata:\n  name: app-${d}-${f}\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n`;
      const dep = deployment(`app-${d}`, f, marked, (k) => (idx * 2 + k) % POLICIES);
      const text = `${dep}---\n${service}---\n${filler(r, 8000 - dep.length - service.length)}`;
      const name = f === 19 ? 'kustomization.yml' : `res-${f}.yaml`;
      await writeFile(join(dir, name), text);
      files++;
      bytes += Buffer.byteLength(text);
      if (marked) markers += 2;
    }
  }
  return { files, bytes, markers };
}

function images(tag: string): Map<string, ImageValue> {
  const m = new Map<string, ImageValue>();
  for (let p = 0; p < POLICIES; p++)
    m.set(`apps:policy-${p}`, { name: `registry.example.com/team/svc-${p}`, tag });
  return m;
}

function imageArgs(tag: string): string[] {
  return [...images(tag)].flatMap(([k, v]) => ['--image', `${k}=${v.name}:${v.tag}`]);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const CODE_CACHE = join(tmpdir(), `pawl-bench-setters-code-cache-${process.pid}`);

/** Runs a command under /usr/bin/time -v; wall time measured here, peak RSS from time's report. */
function timed(
  cmd: string,
  args: string[],
): { ms: number; cpuMs: number; rssMB: number; status: number | null; out: string } {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-v', cmd, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    // The built CLI's code cache in the bench's own directory (BENCH_AB below).
    env: { ...process.env, PAWL_USE_DIST: '1', PAWL_CODE_CACHE_DIR: CODE_CACHE },
  });
  const ms = performance.now() - t0;
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
  const user = /User time \(seconds\): ([\d.]+)/.exec(r.stderr);
  const sys = /System time \(seconds\): ([\d.]+)/.exec(r.stderr);
  const cpuMs = user && sys ? (Number(user[1]) + Number(sys[1])) * 1000 : NaN;
  return { ms, cpuMs, rssMB: m ? Number(m[1]) / 1024 : NaN, status: r.status, out: r.stdout };
}

async function child(): Promise<void> {
  // In-process measurement in a fresh process: `--child ROOT TAG`.
  const [, , , root, tag] = process.argv;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const res = await applySetters(root!, '.', images(tag!));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  process.stdout.write(
    JSON.stringify({
      ms,
      cpuMs: (cpu.user + cpu.system) / 1000,
      maxRssMB: process.resourceUsage().maxRSS / 1024,
      changes: res.changes.length,
      written: res.filesWritten.length,
      errors: res.errors.length,
    }) + '\n',
  );
}

async function bigFile(dir: string): Promise<{ bytes: number; ms: number; cpuMs: number }> {
  const lines: string[] = ['# values for a large umbrella chart', 'services:'];
  for (let i = 0; i < 2500; i++) {
    lines.push(
      `  - name: service-${i}`,
      `    image: registry.example.com/team/svc-${i % POLICIES}:1.0.0 # {"$imagepolicy": "apps:policy-${i % POLICIES}"}`,
      `    replicas: ${(i % 3) + 1}`,
      `    env: {LOG_LEVEL: info, REGION: eu-west-1, SHARD: "${i}"}`,
      `    # owner: team-${i % 17}, on-call rotation ${i % 5}; see the runbook for service ${i}`,
      `    annotations: {prometheus.io/scrape: "true", prometheus.io/port: "9090"}`,
    );
  }
  const text = lines.join('\n') + '\n';
  await writeFile(join(dir, 'values.yaml'), text);
  const runs: number[] = [];
  const cpuRuns: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const res = await applySetters(dir, '.', images(k % 2 === 0 ? '2.0.0' : '1.0.0'));
    runs.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpuRuns.push((c.user + c.system) / 1000);
    if (res.changes.length !== 2500) throw new Error(`big file: ${res.changes.length} changes`);
  }
  return { bytes: Buffer.byteLength(text), ms: median(runs), cpuMs: median(cpuRuns) };
}

/**
 * Reading markers alone, over the tree's marked files already in memory: simple.ts's reader (what
 * `findMarkers` uses for plain documents) against composing every marked document with the
 * `yaml` Document API. Medians of 5 after one warm-up run.
 */
async function markerReading(tree: string): Promise<{ files: number; simpleMs: number; libraryMs: number }> {
  const texts: [string, string][] = [];
  for (const entry of await readdir(tree, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path, 'utf8');
    if (text.includes(MARKER_TOKEN)) texts.push([path, text]);
  }
  const time = (find: typeof findMarkers): number => {
    const runs: number[] = [];
    for (let k = 0; k < 6; k++) {
      const c0 = process.cpuUsage();
      for (const [file, text] of texts) find(text, file);
      const c = process.cpuUsage(c0);
      if (k > 0) runs.push((c.user + c.system) / 1000);
    }
    return median(runs);
  };
  return { files: texts.length, simpleMs: time(findMarkers), libraryMs: time(findMarkersByLibrary) };
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') return child();
  if (process.argv[2] === '--generate') {
    // Leaves a tree to look at: `--generate DIR`.
    process.stdout.write(JSON.stringify(await generateTree(process.argv[3]!)) + '\n');
    return;
  }
  const tmp = await mkdtemp(join(tmpdir(), 'pawl-bench-setters-'));
  try {
    const tree = join(tmp, 'tree');
    const gen = await generateTree(tree);
    process.stdout.write(
      `load average: ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${cpus().length} CPUs\n`,
    );
    process.stdout.write(
      `tree: ${gen.files} files, ${(gen.bytes / 1e6).toFixed(1)} MB, ${gen.markers} markers\n`,
    );

    // grep: warm the page cache, then take the median of five.
    const grepRuns: number[] = [];
    for (let k = 0; k < 6; k++) {
      const t0 = performance.now();
      spawnSync('grep', ['-rlF', '"$imagepolicy"', tree]);
      if (k > 0) grepRuns.push(performance.now() - t0);
    }
    const grepMs = median(grepRuns);
    const grepCpu = median([0, 1, 2].map(() => timed('grep', ['-rlF', '"$imagepolicy"', tree]).cpuMs));
    process.stdout.write(`grep -rlF: ${grepMs.toFixed(0)} ms wall, ${grepCpu.toFixed(0)} ms CPU\n`);

    // The floor under the CLI: node starting, and node reading the tree for the token the way
    // pawl's scan does, with pawl's one-shot flags; no parsing, no writing, no pawl.
    const nodeCpu = median([0, 1, 2].map(() => timed(process.execPath, ['--no-opt', '-e', '0']).cpuMs));
    const floor = [0, 1, 2].map(() =>
      timed(process.execPath, ['--no-opt', join(repo, 'bench', 'floors', 'read-tree.mjs'), tree]),
    );
    if (floor.some((f) => f.status !== 0 || Number(f.out.trim()) !== gen.markers / 2))
      throw new Error(`read-tree floor: ${floor.map((f) => f.out.trim()).join(', ')}`);
    const floorCpu = median(floor.map((f) => f.cpuMs));
    const floorMs = median(floor.map((f) => f.ms));
    process.stdout.write(
      `floor: node -e 0 ${nodeCpu.toFixed(0)} ms CPU; node reading the tree for the token (bench/floors/read-tree.mjs) ` +
        `${floorCpu.toFixed(0)} ms CPU (medians of 3) = ${(floorCpu / grepCpu).toFixed(1)}× grep, before parsing 1,000 documents and writing 1,000 files\n`,
    );

    // In-process, each run in a fresh node (so RSS is this work's), alternating tags so every run writes.
    const inproc: { ms: number; cpuMs: number; maxRssMB: number; changes: number }[] = [];
    for (let k = 0; k < 4; k++) {
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', tree, k % 2 === 0 ? '2.0.0' : '3.0.0'],
        { encoding: 'utf8' },
      );
      if (r.status !== 0) throw new Error(r.stderr);
      inproc.push(
        JSON.parse(r.stdout.trim()) as { ms: number; cpuMs: number; maxRssMB: number; changes: number },
      );
    }
    const ip = median(inproc.map((x) => x.ms));
    process.stdout.write(
      `in-process applySetters: ${ip.toFixed(0)} ms wall, ${median(inproc.map((x) => x.cpuMs)).toFixed(0)} ms CPU (medians of 4; ${inproc[0]!.changes} changes), peak RSS ${Math.max(...inproc.map((x) => x.maxRssMB)).toFixed(0)} MB, ${(ip / grepMs).toFixed(1)}× grep\n`,
    );

    // The CLI as shipped: `npm run build` (dist/, an esbuild bundle) run through bin/pawl.js, and
    // through tsx from source (the development path, which compiles TypeScript at start-up).
    const variants: [string, string[]][] = [];
    try {
      await buildCli(join(repo, 'dist'));
      variants.push(['CLI (bin/pawl.js, as built by npm run build)', [join(repo, 'bin', 'pawl.js')]]);
    } catch (err) {
      process.stdout.write(`(the CLI does not build right now: ${String(err).split('\n')[0]})\n`);
    }
    variants.push([
      'CLI (src/cli/main.ts via tsx)',
      ['--import', 'tsx', join(repo, 'src', 'cli', 'main.ts')],
    ]);
    // BENCH_AB=DIR: another checkout with its own dist/ built (say main's, in bench/out/base),
    // run in turn with this one's. Each variant's first run is its first start (the code cache
    // empty: written then) and is reported apart; the medians are of the four after it.
    if (process.env.BENCH_AB)
      variants.unshift(['base CLI (BENCH_AB, bin/pawl.js)', [join(process.env.BENCH_AB, 'bin', 'pawl.js')]]);
    const all = variants.map(() => [] as { ms: number; cpuMs: number; rssMB: number }[]);
    const failed = new Set<number>();
    for (let k = 0; k < 5; k++)
      for (const [v, [, entry]] of variants.entries()) {
        if (failed.has(v)) continue;
        const r = timed(process.execPath, [
          ...entry,
          'setters',
          'apply',
          tree,
          ...imageArgs(k % 2 === 0 ? '4.0.0' : '5.0.0'),
        ]);
        if (r.status !== 0) failed.add(v);
        else all[v]!.push(r);
      }
    await rm(CODE_CACHE, { recursive: true, force: true });
    for (const [v, [label]] of variants.entries()) {
      const [first, ...runs] = all[v]!;
      if (failed.has(v) || !first) {
        process.stdout.write(
          `${label}: did not run (exit status not 0; another command's module may be mid-change)\n`,
        );
        continue;
      }
      const ms = median(runs.map((x) => x.ms));
      const cpu = median(runs.map((x) => x.cpuMs));
      process.stdout.write(
        `${label}: ${ms.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU (medians of 4; the first run ${first.cpuMs.toFixed(0)} ms CPU), peak RSS ${Math.max(...runs.map((x) => x.rssMB)).toFixed(0)} MB, ${(ms / grepMs).toFixed(1)}× grep wall, ${(cpu / grepCpu).toFixed(1)}× grep CPU (target ≤ 5×, issue 12); ` +
          `${(cpu / floorCpu).toFixed(2)}× CPU, ${(ms / floorMs).toFixed(2)}× wall of the read-tree floor (${floorCpu.toFixed(0)} ms CPU, ${floorMs.toFixed(0)} ms wall; target ≤ 1.5×, issue 27: ${cpu <= 1.5 * floorCpu ? 'met' : 'not met'})\n`,
      );
    }

    const reading = await markerReading(tree);
    process.stdout.write(
      `reading markers in the ${reading.files} marked files: ${reading.simpleMs.toFixed(0)} ms CPU (simple reader), ${reading.libraryMs.toFixed(0)} ms CPU (yaml Document API) (medians of 5, warm)\n`,
    );

    const bigDir = join(tmp, 'big');
    await mkdir(bigDir);
    const big = await bigFile(bigDir);
    process.stdout.write(
      `one ${(big.bytes / 1e6).toFixed(2)} MB file, 2,500 markers: ${big.ms.toFixed(0)} ms wall, ${big.cpuMs.toFixed(0)} ms CPU (medians of 5, in-process)\n`,
    );
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

await main();
