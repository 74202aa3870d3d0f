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
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../test/helpers/postgres.js';
import { ROOT } from '../test/helpers/world.js';
import { startServeFleet } from './serve-fleet.js';
import { metricValue, startServe, type ServeProcess } from '../test/helpers/serve.js';

const N = Number(process.env.BENCH_IMAGES ?? 500);
const GITS = 10;
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 60);
const TAGS = ['1.0.0', '1.1.0'];

const pg = await startPostgres();
// Every automation is due every 5 s, far more than the cluster can serve: the figure is capacity.
// Repositories are scanned once (interval 1h): this measures passes.
const fleet = await startServeFleet({
  images: N,
  gitRepositories: GITS,
  tags: TAGS,
  repositoryInterval: '1h',
  automationInterval: '5s',
  name: 'replicas-bench',
});
const { configDir, base } = fleet;

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
  await fleet.close();
  await pg.close();
}
process.exitCode = failed ? 1 : 0;
