/**
 * `pawl serve` (issue 11): from the registry's answer to a push of a new tag until the commit is
 * on the Git remote. Debian's docker-registry notifies the real daemon (`node --import tsx
 * src/cli/main.ts serve`, a `distribution` Receiver with `Authorization: Bearer TOKEN`); every
 * interval is an hour, so only the notification can cause the commit. 20 pushes (BENCH_PUSHES),
 * one after the other; each waits for its commit. The remote's branch is watched through inotify
 * on the bare repository's refs (bench/ref-watch.ts; no git process, no busy loop). Targets:
 * median ≤ 300 ms, max ≤ 1 s.
 */
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { pushTags } from '../test/helpers/push.js';
import { startServe } from '../test/helpers/serve.js';
import { startServeWorld } from '../test/serve/fixtures.js';
import { watchRefs } from './ref-watch.js';

const PUSHES = Number(process.env.BENCH_PUSHES ?? 20);
const TARGET_MEDIAN_MS = 300;
const TARGET_MAX_MS = 1000;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const { world, port } = await startServeWorld();
await pushTags(world.registry.url, 'team/app', ['1.0.0']);
const serve = await startServe({
  configDir: world.configDir,
  stateDir: world.stateDir,
  listenPort: port,
  args: ['--log-level', 'info'],
});
const refs = watchRefs([join(world.git.repoPath(world.repoName), 'refs', 'heads', 'main')]);
const head = async (): Promise<string> => (await refs.read())[0]!;
let failed = false;
try {
  await serve.waitForLog((r) => r.msg === 'pass', 'the first pass');
  // Warm-up: the first webhook pays for the first fetch of the workspace and JIT.
  const latencies: number[] = [];
  for (let i = 0; i <= PUSHES; i++) {
    const tag = `1.${i + 1}.0`;
    const before = await head();
    await pushTags(world.registry.url, 'team/app', [tag]);
    const answered = performance.now();
    const deadline = answered + 30_000;
    while ((await head()) === before) {
      if (performance.now() > deadline) throw new Error(`push of ${tag}: no commit within 30 s`);
      await refs.changed();
    }
    const ms = performance.now() - answered;
    const content = await world.git.show(world.repoName, 'main', 'apps/app.yaml');
    if (!content.includes(`team/app:${tag} `)) throw new Error(`the commit after ${tag} does not hold it`);
    if (i > 0) latencies.push(ms);
  }
  const med = median(latencies);
  const max = Math.max(...latencies);
  const load = loadavg().map((x) => x.toFixed(2));
  console.log(`serve latency: ${PUSHES} pushes of new tags, registry answer → commit on the remote`);
  console.log(`  each (ms): ${latencies.map((x) => Math.round(x)).join(' ')}`);
  console.log(
    `  median ${Math.round(med)} ms (target ≤ ${TARGET_MEDIAN_MS}), max ${Math.round(max)} ms (target ≤ ${TARGET_MAX_MS})`,
  );
  console.log(`  load average ${load.join(' ')}`);
  if (med > TARGET_MEDIAN_MS || max > TARGET_MAX_MS) console.log('  OVER TARGET');
  const passes = serve.records().filter((r) => r.msg === 'pass' && r.trigger === 'request');
  console.log(
    `  passes run by webhooks: ${passes.length}; pass ms: median ${median(passes.map((p) => Number(p.ms)))}`,
  );
  if (process.env.BENCH_DEBUG)
    for (const r of serve.records()) if (r.level >= 30) console.error(JSON.stringify(r));
} catch (err) {
  console.error(`FAIL: ${(err as Error).message}`);

  failed = true;
} finally {
  refs.close();
  await serve.stop();
  await world.close();
}
process.exitCode = failed ? 1 : 0;
