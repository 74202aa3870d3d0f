/**
 * Two `pawl serve --kubernetes` replicas on one PostgreSQL store (`--store postgres://…`), against
 * a real kube-apiserver: they share the jobs (docs/replicas.md) and the decision history, and
 * the replica that ran a scan or pass writes its status — so every object gets its status
 * whichever replica ran it, and the replica that did not run the pass reads its history (the
 * high-water marks).
 *
 * The automation's pass asks for the scans of its six repositories (reconcile through), so the
 * replica that runs it may scan repositories the other one owns (whichever claims first): that
 * one must write their status. Two repositories no automation uses (team-x) are scanned only on
 * their interval, by their preferred owner: each replica owns one, so both scan.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { apply, applyDir, FLUX, startKube, waitFor, type TestKube } from '../helpers/kube.js';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { pushTags } from '../helpers/push.js';
import { eventually, metricValue, startServe, type ServeProcess } from '../helpers/serve.js';
import { preferredOwner } from '../../src/serve/cluster/index.js';
import { automationJob, repositoryJob } from '../../src/serve/index.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';

const NS = 'flux-system';
const APPS = ['a', 'b', 'c', 'd', 'e', 'f'];
const skip = postgresUnavailable();
const SOLO_NS = 'team-x';
const SOLO = ['x0', 'x1'];
/**
 * Fixed replica ids, so that the preferred owners (rendezvous hashing) are known: each owns one
 * of the team-x repositories and some of the six, and the automation's owner is not the owner
 * of `''` (the objects left out), which once wrote every status it saw.
 */
const IDS = ['pawl-0', 'pawl-1'];

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
    const owner = (key: string) => preferredOwner(key, IDS);
    const soloOwners = SOLO.map((x) => owner(repositoryJob(`${SOLO_NS}/${x}`)));
    assert.deepEqual(soloOwners.toSorted(), IDS, 'each replica owns one team-x repository');
    assert.ok(
      IDS.every((id) => APPS.some((a) => owner(repositoryJob(`${NS}/${a}`)) === id)),
      'each replica owns some of the six',
    );
    assert.notEqual(owner(automationJob(`${NS}/fleet`)), owner(''));
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
    await kube.kubectl(['create', 'namespace', SOLO_NS]);
    for (const x of SOLO)
      await apply(
        kube,
        `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ${x}, namespace: ${SOLO_NS}}
spec: {image: ${world.registryHost}/team/app, interval: 1h}
`,
      );
    await applyDir(kube, world.configDir, ['git.yaml']);
    // The six repositories are shared between the two replicas; each one's status is written.
    for (const app of APPS) await waitFor(kube, NS, `${FLUX.repository}/${app}`, 'condition=Ready', '90s');
    for (const x of SOLO) await waitFor(kube, SOLO_NS, `${FLUX.repository}/${x}`, 'condition=Ready', '90s');
    await waitFor(kube, NS, `${FLUX.automation}/fleet`, 'jsonpath={.status.lastPushCommit}', '120s');
    for (const app of APPS)
      await waitFor(kube, NS, `${FLUX.policy}/${app}`, 'jsonpath={.status.latestRef.tag}=1.1.0');
    // Each team-x repository was scanned by its owner (on its interval: nothing else asks).
    for (const [j, x] of SOLO.entries()) {
      const r = replicas[IDS.indexOf(soloOwners[j]!)]!;
      const scans = metricValue(await r.metrics(), 'pawl_scans_total', { repository: `${SOLO_NS}/${x}` });
      assert.ok(scans > 0, `${soloOwners[j]} scanned ${SOLO_NS}/${x}`);
    }
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
