/**
 * Two `pawl serve --kubernetes` replicas on one PostgreSQL store (`--store postgres://…`), against
 * a real kube-apiserver: they share the jobs (docs/replicas.md) and the decision history, and
 * each writes the status of the jobs it owns — so every object gets its status whichever replica
 * ran it, and the replica that did not run the pass reads its history (the high-water marks).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { apply, FLUX, startKube, waitFor, type TestKube } from '../helpers/kube.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { pushTags } from '../helpers/push.js';
import { eventually, metricValue, startServe, type ServeProcess } from '../helpers/serve.js';
import { preferredOwner } from '../../src/serve/cluster/index.js';
import { repositoryJob } from '../../src/serve/index.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
const APPS = ['a', 'b', 'c', 'd', 'e', 'f'];
const skip = postgresUnavailable();
/**
 * Fixed replica ids, so that the repositories' preferred owners (rendezvous hashing) are known:
 * with random ones, one replica owns all six once in 32 runs and the other scans nothing.
 */
const IDS = ['replica-0', 'replica-1'];

let kube: TestKube;
let world: World;
let pg: TestPostgres;
let base: string;
const replicas: ServeProcess[] = [];
/** Set when the test passed: otherwise the replicas' logs are kept in the temp dir. */
let passed = false;

before(async () => {
  if (skip) return;
  pg = await startPostgres();
  kube = await startKube();
  base = await mkdtemp(join(tmpdir(), 'pawl-kube-replicas-'));
  const files: Record<string, string> = {};
  const config: Record<string, string> = { 'git.yaml': gitObjects().replace('interval: 5m', 'interval: 1h') };
  for (const app of APPS) {
    files[`apps/${app}.yaml`] =
      `image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:${app}"}\n`;
    config[`${app}.yaml`] = imageObjects(app, '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"', {
      interval: '1h',
    });
  }
  world = await startWorld({ files, config });
  await pushTags(world.registry.url, 'team/app', ['1.0.0', '1.1.0']);
  await kube.kubectl(['create', 'namespace', NS]);
  await apply(kube, await readFile(join(world.configDir, 'git.yaml'), 'utf8'));
});

after(async () => {
  for (const r of replicas) await r.stop();
  await world?.close();
  await kube?.close();
  await pg?.close();
  if (!base) return;
  if (passed || skip) await rm(base, { recursive: true, force: true });
  else {
    // The replicas' debug logs, for what each saw and did.
    for (const [i, r] of replicas.entries()) await writeFile(join(base, `replica-${i}.log`), r.output());
    console.error(`the replicas' logs are kept in ${base}`);
  }
});

test(
  'two replicas on PostgreSQL: every object gets its status; the history is shared',
  { skip: skip ?? false },
  async () => {
    const owners = APPS.map((a) => preferredOwner(repositoryJob(`${NS}/${a}`), IDS));
    assert.ok(
      IDS.every((id) => owners.includes(id)),
      `each replica owns some repositories: ${owners.join(', ')}`,
    );
    for (const i of [0, 1])
      replicas.push(
        await startServe({
          stateDir: join(base, `state-${i}`),
          args: [
            '--kubernetes',
            '--kubeconfig',
            kube.kubeconfig,
            '--store',
            pg.urlWithoutPassword,
            '--replica-id',
            IDS[i]!,
          ],
          env: { PAWL_STORE_PASSWORD: pg.password },
        }),
      );
    // Both see each other before the image objects exist, so that the jobs are shared from
    // their first run: each replica scans some of the repositories.
    for (const r of replicas)
      await eventually(async () => {
        const { json } = await r.adminGet<{ replicas: unknown[] }>('/api/v1/replicas');
        return json.replicas.length === 2 ? true : undefined;
      }, 'both replicas known to each');
    for (const f of await readdir(world.configDir))
      if (f !== 'git.yaml') await apply(kube, await readFile(join(world.configDir, f), 'utf8'));
    // The six repositories are shared between the two replicas; each one's status is written.
    for (const app of APPS) await waitFor(kube, NS, `${FLUX.repository}/${app}`, 'condition=Ready', '90s');
    await waitFor(kube, NS, `${FLUX.automation}/fleet`, 'jsonpath={.status.lastPushCommit}', '120s');
    for (const app of APPS)
      await waitFor(kube, NS, `${FLUX.policy}/${app}`, 'jsonpath={.status.latestRef.tag}=1.1.0');
    const scans = await Promise.all(
      replicas.map(async (r) => metricValue(await r.metrics(), 'pawl_scans_total')),
    );
    assert.ok(
      scans.every((n) => n > 0),
      `scans per replica: ${scans.join(', ')}`,
    );
    // Both read the passes' history from the one store (the high-water marks recorded), as a
    // new leader's `pawl explain` would.
    for (const r of replicas) {
      const { json } = await r.adminGet<{ name: string; highWater: string | null }[]>('/api/v1/policies');
      assert.deepEqual(
        json.map((p) => [p.name, p.highWater]),
        APPS.map((a) => [`flux-system/${a}`, '1.1.0']),
      );
    }
    passed = true;
  },
);
