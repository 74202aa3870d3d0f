/**
 * `npm run bench -- kube-fleet`: `pawl serve --kubernetes` (the built CLI, as the container image
 * runs it) watching 2,000 objects on a real kube-apiserver (scripts/kube-apiserver.sh): 1,000
 * ImageRepositories and 1,000 ImagePolicies that no automation uses (namespace `fleet`, all on
 * one image of one registry), plus four apps and two ImageUpdateAutomations on a git remote in
 * `flux-system`. Every interval is an hour, so that only the bench causes runs. Reported:
 *
 * - pass 1: from start until every policy of the fleet is Ready (its first status), and the
 *   status writes it made (objects whose resourceVersion moved);
 * - CPU at rest over BENCH_KUBE_REST_S seconds (default 30) after that, from utime + stime in
 *   /proc/PID/stat, and RSS then (VmRSS), and the peak (VmHWM) at the end;
 * - pass 2: every repository and automation reconciled again (the admin API, as `pawl reconcile`)
 *   with nothing changed in the registry or git: the writes it made, per kind.
 *
 * BENCH_KUBE_IMAGES sets the fleet's size (default 1000 of each kind); BENCH_KUBE_TSX=1 runs the
 * sources through tsx instead of the bundle.
 */
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { buildCli } from '../scripts/build.js';
import { FLUX, startKube } from '../test/helpers/kube.js';
import { pushTags } from '../test/helpers/push.js';
import { startServe } from '../test/helpers/serve.js';
import { gitObjects, imageObjects, ROOT, startWorld } from '../test/helpers/world.js';

const N = Number(process.env.BENCH_KUBE_IMAGES ?? 1000);
const REST_S = Number(process.env.BENCH_KUBE_REST_S ?? 30);
const APPS = ['a', 'b', 'c', 'd'];

const files: Record<string, string> = {};
for (const app of APPS)
  files[`apps/${app}.yaml`] =
    `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ${app}}\nspec:\n  template:\n    spec:\n      containers:\n        - name: ${app}\n          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:${app}"}\n`;
const git = gitObjects().replace('interval: 5m', 'interval: 1h');
// A second automation on the same remote, its own folder: "a handful".
const second = git
  .split('---\n')
  .find((d) => d.includes('kind: ImageUpdateAutomation'))!
  .replace('name: fleet\n  namespace', 'name: fleet-b\n  namespace')
  .replace('path: ./\n', 'path: ./apps\n');
const config: Record<string, string> = { 'git.yaml': git, 'second.yaml': second };
for (const app of APPS)
  config[`${app}.yaml`] = imageObjects(app, '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"', {
    interval: '1h',
  });

const kube = await startKube();
const world = await startWorld({ files, config });
let serve: Awaited<ReturnType<typeof startServe>> | undefined;
try {
  await pushTags(world.registry.url, 'team/app', ['1.0.0', '1.1.0', '1.2.0']);
  for (const ns of ['flux-system', 'fleet']) await kube.kubectl(['create', 'namespace', ns]);
  for (const f of Object.keys(config))
    await kube.kubectl(['apply', '-f', '-'], await readFile(join(world.configDir, f), 'utf8'));
  const image = `${world.registryHost}/team/app`;
  const fleet: string[] = [];
  for (let i = 0; i < N; i++)
    fleet.push(
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: r${i}, namespace: fleet}\nspec: {image: ${image}, interval: 1h}\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: p${i}, namespace: fleet}\nspec:\n  imageRepositoryRef: {name: r${i}}\n  policy: {semver: {range: ">=1.0.0"}}\n`,
    );
  const created = performance.now();
  for (let i = 0; i < fleet.length; i += 500)
    await kube.kubectl(['create', '-f', '-'], fleet.slice(i, i + 500).join('---\n'));
  console.log(`created ${fleet.length} objects in ${((performance.now() - created) / 1000).toFixed(1)} s`);

  let entry: string | undefined;
  if (!process.env.BENCH_KUBE_TSX) {
    const out = join(ROOT, 'bench', 'out', 'dist');
    await buildCli(out);
    entry = join(out, 'cli', 'main.js');
  }
  const started = performance.now();
  serve = await startServe({
    stateDir: world.stateDir,
    ...(entry ? { entry } : {}),
    args: ['--kubernetes', '--kubeconfig', kube.kubeconfig, '--log-level', 'warn', '--start-spread', '5s'],
  });
  const pid = serve.child.pid!;
  const proc = async () => {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    // utime and stime, fields 14 and 15 of /proc/PID/stat, in clock ticks (100 a second on Linux).
    const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024, ticks: Number(stat[11]) + Number(stat[12]) };
  };
  const versions = async (): Promise<Map<string, string>> => {
    const { stdout } = await kube.kubectl([
      'get',
      `${FLUX.repository},${FLUX.policy},${FLUX.automation}`,
      '-A',
      '-o',
      'jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\\n"}{end}',
    ]);
    return new Map(stdout.split('\n').flatMap((l) => (l ? [l.split(' ') as [string, string]] : [])));
  };
  const moved = (a: Map<string, string>, b: Map<string, string>) => {
    const by: Record<string, number> = {};
    for (const [k, v] of b) if (a.get(k) !== v) by[k.split('/')[0]!] = (by[k.split('/')[0]!] ?? 0) + 1;
    return by;
  };
  /** Until two readings 3 s apart agree: the daemon's writes of a pass have landed. */
  const settled = async (): Promise<Map<string, string>> => {
    let last = await versions();
    for (;;) {
      await new Promise((r) => setTimeout(r, 3000));
      const now = await versions();
      if (Object.keys(moved(last, now)).length === 0) return now;
      last = now;
    }
  };

  const before = await versions();
  for (;;) {
    const { stdout } = await kube.kubectl([
      'get',
      FLUX.policy,
      '-n',
      'fleet',
      '-o',
      'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
    ]);
    if (stdout.split('\n').filter((s) => s === 'True').length >= N) break;
    if (performance.now() - started > 10 * 60_000)
      throw new Error('the fleet was not Ready within 10 minutes');
    await new Promise((r) => setTimeout(r, 2000));
  }
  const ready = (performance.now() - started) / 1000;
  const afterFirst = await settled();
  console.log(
    `pass 1: every policy Ready ${ready.toFixed(1)} s after start; writes`,
    moved(before, afterFirst),
  );

  const restFrom = await proc();
  await new Promise((r) => setTimeout(r, REST_S * 1000));
  const restTo = await proc();
  const cpu = (restTo.ticks - restFrom.ticks) / 100 / REST_S;
  console.log(
    `at rest over ${REST_S} s: CPU ${(cpu * 100).toFixed(2)}% of a core, RSS ${restTo.rss.toFixed(0)} MB`,
  );

  // Pass 2: the whole fleet again, nothing changed.
  const second0 = performance.now();
  const keys = [
    ...Array.from({ length: N }, (_, i) => `repositories/fleet/r${i}`),
    ...APPS.map((a) => `repositories/flux-system/${a}`),
    'automations/flux-system/fleet',
    'automations/flux-system/fleet-b',
  ];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < keys.length) {
        const k = keys[next++]!;
        const res = await fetch(`http://${serve!.admin}/api/v1/${k}/reconcile?wait=120`, { method: 'POST' });
        await res.body?.cancel();
        if (res.status >= 300) throw new Error(`reconcile ${k}: HTTP ${res.status}`);
      }
    }),
  );
  const afterSecond = await settled();
  console.log(
    `pass 2 (${keys.length} reconciles, nothing changed) in ${((performance.now() - second0) / 1000).toFixed(1)} s; writes`,
    moved(afterFirst, afterSecond),
  );
  const end = await proc();
  console.log(
    `peak RSS ${end.hwm.toFixed(0)} MB; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await serve?.stop();
  await world.close();
  await kube.close();
}
