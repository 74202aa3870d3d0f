/**
 * `pawl reconcile automation` (issue 23, item 15): from the request to the commit on the Git
 * remote, through a running daemon (in-process; the real registry and git server). The daemon's
 * webhook listener is not the port the registry notifies and every interval is an hour, so only
 * the reconcile makes the commit. 20 rounds (BENCH_ROUNDS) through the admin route, which is what
 * the command calls; then 3 through the CLI itself, whose figure adds node's and tsx's start.
 * Target: a commit within a second on a quiet machine.
 */
import { loadavg } from 'node:os';
import { pushTags } from '../test/helpers/push.js';
import { runCli } from '../test/helpers/world.js';
import { startServer, type PassEvent, type Server } from '../src/serve/index.js';
import { inProcess, startServeWorld } from '../test/serve/fixtures.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const sw = await startServeWorld();
const { world } = sw;
await pushTags(world.registry.url, 'team/app', ['1.0.0']);
let server: Server | undefined;
await new Promise<PassEvent>((resolve) => {
  void startServer(inProcess(sw)).then((s) => {
    server = s;
    s.daemon.events.onReport(resolve);
  });
});
const admin = `http://${server!.admin}`;
let failed = false;

async function round(tag: string, how: 'route' | 'cli'): Promise<number> {
  await pushTags(world.registry.url, 'team/app', [tag]);
  const started = performance.now();
  if (how === 'route') {
    const res = await fetch(`${admin}/api/v1/automations/flux-system/fleet/reconcile`, { method: 'POST' });
    const body = (await res.json()) as { pass?: { result?: string } };
    if (res.status !== 200 || body.pass?.result !== 'pushed')
      throw new Error(`reconcile for ${tag}: ${res.status} ${JSON.stringify(body)}`);
  } else {
    const r = await runCli(['reconcile', 'automation', 'fleet', '--server', admin]);
    if (r.code !== 0 || !/committed [0-9a-f]{40}/.test(r.stdout))
      throw new Error(`pawl reconcile for ${tag}: ${r.code} ${r.stdout}${r.stderr}`);
  }
  const ms = performance.now() - started;
  const content = await world.git.show(world.repoName, 'main', 'apps/app.yaml');
  if (!content.includes(`team/app:${tag} `)) throw new Error(`the commit after ${tag} does not hold it`);
  return ms;
}

try {
  await round('1.0.1', 'route'); // warm-up: the workspace's first fetch, JIT
  const route: number[] = [];
  for (let i = 0; i < ROUNDS; i++) route.push(await round(`1.1.${i}`, 'route'));
  const cli: number[] = [];
  for (let i = 0; i < 3; i++) cli.push(await round(`1.2.${i}`, 'cli'));
  const load = loadavg().map((x) => x.toFixed(2));
  console.log(`reconcile latency: request → commit on the remote (load ${load.join(' ')})`);
  console.log(
    `  admin route, ${ROUNDS} rounds: median ${median(route).toFixed(0)} ms, max ${Math.max(...route).toFixed(0)} ms`,
  );
  console.log(
    `  pawl reconcile (CLI), 3 rounds: median ${median(cli).toFixed(0)} ms, max ${Math.max(...cli).toFixed(0)} ms`,
  );
  if (Math.max(...route) > 1000) {
    console.log('  above the 1 s target');
    failed = true;
  }
} finally {
  await server?.stop(5000);
  await world.close();
}
process.exitCode = failed ? 1 : 0;
