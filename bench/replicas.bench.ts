/**
 * Replicas (issue 16): automation passes per minute that one, two and three `pawl serve`
 * replicas sustain on one PostgreSQL database, and one replica on SQLite for comparison, on the
 * 500-automation workload of serve-memory.bench.ts (500 ImageRepositories, ImagePolicies and
 * ImageUpdateAutomations over 10 GitRepositories, every marker up to date). Every automation's
 * interval is 5 s, far shorter than the cluster can serve, so the figure is capacity: passes
 * completed in a window of BENCH_WINDOW_S seconds (default 60) after every automation has run
 * once (clones done). Repositories are scanned once (interval 1h): this measures passes.
 * The daemons run as built (scripts/build.ts into bench/out/dist). Figures are reported, never
 * asserted; the load average says how busy the machine was.
 */
import { buildCli } from '../scripts/build.js';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRegistry } from '../test/helpers/registry.js';
import { pushImage, seedTags } from '../test/helpers/push.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { GIT_PASSWORD, GIT_USER, ROOT } from '../test/helpers/world.js';
import { metricValue, startServe, type ServeProcess } from '../test/helpers/serve.js';

const N = Number(process.env.BENCH_IMAGES ?? 500);
const GITS = 10;
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 60);
const TAGS = ['1.0.0', '1.1.0'];

const registry = await startRegistry({ auth: 'none' });
const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
const pg = await startPostgres();
const base = await mkdtemp(join(tmpdir(), 'pawl-replicas-bench-'));
const configDir = join(base, 'config');
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
      `        - name: app\n          image: ${registry.host}/bench/app-${i}:${TAGS.at(-1)} # {"$imagepolicy": "flux-system:app-${i}"}\n`;
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
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/bench/app-${i}\n  interval: 1h\n  insecure: true\n`,
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\n  labels:\n    app: app-${i}\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
    `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  interval: 5s\n  sourceRef:\n    kind: GitRepository\n    name: fleet-${g}\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps/app-${i}\n    strategy: Setters\n  policySelector:\n    matchLabels:\n      app: app-${i}\n`,
  );
}
await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
console.log(
  `setup: ${N} repositories, policies and automations on ${GITS} git repositories in ${Math.round(performance.now() - t0)} ms`,
);

const out = join(ROOT, 'bench', 'out', 'dist');
await buildCli(out);
const entry = join(out, 'cli', 'main.js');

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

const passesOf = async (rs: ServeProcess[]): Promise<number[]> =>
  Promise.all(rs.map(async (r) => metricValue(await r.metrics(), 'pawl_automation_runs_total')));

async function measure(label: string, replicas: number, store: 'sqlite' | 'postgres'): Promise<void> {
  const url = store === 'postgres' ? await pg.createDatabase(`bench_${label.replace(/\W/g, '_')}`) : null;
  const rs: ServeProcess[] = [];
  try {
    for (let i = 0; i < replicas; i++)
      rs.push(
        await startServe({
          configDir,
          stateDir: join(base, `${label}-${i}`),
          entry,
          args: ['--log-level', 'warn', ...(url ? ['--store', url.replace(`:${pg.password}@`, '@')] : [])],
          ...(url ? { env: { PAWL_STORE_PASSWORD: pg.password } } : {}),
        }),
      );
    // Warm-up: every automation has run once somewhere (its workspace cloned, its repository scanned).
    const warm = performance.now();
    for (;;) {
      const total = (await passesOf(rs)).reduce((a, b) => a + b, 0);
      if (total >= N) break;
      if (performance.now() - warm > 20 * 60_000)
        throw new Error(`${label}: only ${total} passes in 20 minutes`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const before = await passesOf(rs);
    const started = performance.now();
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    const after = await passesOf(rs);
    const seconds = (performance.now() - started) / 1000;
    const per = after.map((a, i) => a - before[i]!);
    const total = per.reduce((a, b) => a + b, 0);
    const failed = (
      await Promise.all(
        rs.map(async (r) =>
          metricValue(await r.metrics(), 'pawl_automation_runs_total', { result: 'failed' }),
        ),
      )
    ).reduce((a, b) => a + b, 0);
    console.log(
      `${label}: ${Math.round((total / seconds) * 60)} passes/min (per replica ${per
        .map((p) => Math.round((p / seconds) * 60))
        .join(
          ' + ',
        )}), ${failed} failed in all, warm-up ${Math.round((started - warm) / 1000)} s; load average ${load()}`,
    );
  } finally {
    await Promise.all(rs.map((r) => r.stop()));
  }
}

let failed = false;
try {
  console.log(`machine: ${cpus().length} CPUs; load average before ${load()}`);
  await measure('sqlite-1', 1, 'sqlite');
  await measure('postgres-1', 1, 'postgres');
  await measure('postgres-2', 2, 'postgres');
  await measure('postgres-3', 3, 'postgres');
} catch (err) {
  console.error(`FAIL: ${(err as Error).message}`);
  failed = true;
} finally {
  await git.close();
  await registry.stop();
  await pg.close();
  await rm(base, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
