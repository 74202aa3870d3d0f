/**
 * SPEC §1 problem 2, exactly: after an outage the registry serves a stale tag list that lacks
 * the current `release-07ef7c53-1655866680` and holds `release-3caa31f4-1651535374`, two months
 * old and already deleted. Then it recovers. pawl makes zero commits through the episode —
 * also when its state directory is deleted in the middle of it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { deleteManifest, pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const CURRENT = 'release-07ef7c53-1655866680';
const STALE = 'release-3caa31f4-1651535374';
const OLDER = 'release-11aa22bb-1650000000';

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: {{REGISTRY}}/shop/web:${CURRENT} # {"$imagepolicy": "flux-system:web"}
`;

const POLICY = imageObjects('web', '{{REGISTRY}}/shop/web', 'numerical:\n  order: asc', {
  filterTags: "pattern: '^release-[a-f0-9]+-(?P<ts>[0-9]+)$'\nextract: '$ts'",
});

async function episode(w: World, opts: { deleteStateAfter?: number } = {}): Promise<RunReport[]> {
  const reports: RunReport[] = [];
  // The outage: for several scans the list is stale.
  w.proxy!.setTagList('shop/web', [OLDER, STALE]);
  for (let i = 0; i < 5; i++) {
    if (opts.deleteStateAfter === i) await rm(w.stateDir, { recursive: true, force: true });
    const r = await w.pawlJson<RunReport>(['run', '--refresh']);
    assert.equal(r.code, 0, r.stderr);
    reports.push(r.json);
  }
  // Recovery.
  w.proxy!.setTagList('shop/web', null);
  reports.push((await w.pawlJson<RunReport>(['run', '--refresh'])).json);
  return reports;
}

async function world(): Promise<World> {
  const w = await startWorld({
    proxy: true,
    files: { 'deploy.yaml': deploy },
    config: { 'git.yaml': gitObjects(), 'web.yaml': POLICY },
  });
  const pushed = await pushTags(w.registry.url, 'shop/web', [OLDER, STALE, CURRENT], {
    createdFor: (_t, i) => new Date(Date.UTC(2022, i * 2, 1)),
  });
  const first = await w.pawlJson<RunReport>(['run']);
  assert.equal(first.json.policies[0]!.candidate, CURRENT, first.stderr);
  assert.equal(first.json.automations[0]!.result, 'up-to-date');
  // The stale tag was deleted from the registry long ago; only the broken cache still lists it.
  await deleteManifest(w.registry.url, 'shop/web', pushed.get(STALE)!.digest);
  return w;
}

describe('a stale tag list after an outage (SPEC §1 problem 2)', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('zero commits through the episode; the stale scans are recorded', async () => {
    const commits = (await w.git.log(w.repoName, 'main')).length;
    const reports = await episode(w);
    for (const r of reports) {
      assert.notEqual(r.automations[0]!.result, 'pushed');
      assert.equal(r.automations[0]!.changes.length, 0);
    }
    // During the outage the ratchet keeps the high-water mark, which still exists.
    for (const r of reports.slice(0, 5)) {
      assert.equal(r.policies[0]!.candidate, CURRENT);
      assert.equal(r.policies[0]!.highWater, CURRENT);
    }
    assert.deepEqual(
      reports[0]!.repositories[0]!.anomalies.map((a) => a.kind),
      ['tags-missing'],
    );
    assert.equal((await w.git.log(w.repoName, 'main')).length, commits);
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), new RegExp(CURRENT));

    const history = await w.pawl(['tags', 'flux-system/web', '--history']);
    assert.equal(history.code, 0, history.stderr);
    assert.match(history.stdout, new RegExp(`-1: ${CURRENT}`));
    assert.match(history.stdout, /tags-missing/);

    const explain = await w.pawlJson<{ events: { kind: string }[] }>(['explain', 'web']);
    assert.ok(explain.json.events.some((e) => e.kind === 'stale-scan'));
  });
});

describe('a stale tag list with the state directory deleted mid-episode', () => {
  let w: World;
  before(async () => (w = await world()));
  after(() => w?.close());

  test('zero commits: the deleted stale tag is never written', async () => {
    const commits = (await w.git.log(w.repoName, 'main')).length;
    const reports = await episode(w, { deleteStateAfter: 2 });
    for (const r of reports)
      assert.equal(r.automations[0]!.changes.length, 0, JSON.stringify(r.automations[0]));
    // Without a high-water mark the stale selection must be verified, and it is gone.
    const afterDelete = reports[2]!.policies[0]!;
    assert.notEqual(afterDelete.candidate, STALE);
    assert.equal((await w.git.log(w.repoName, 'main')).length, commits);
    assert.match(await w.git.show(w.repoName, 'main', 'deploy.yaml'), new RegExp(CURRENT));
  });
});
