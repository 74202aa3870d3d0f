/**
 * A registry that lists names that are not tags (`../../x`, white space, YAML after a newline,
 * 300 characters) behind the fault proxy, and files whose marked values are not image
 * references: the names are dropped and recorded as the scan's `invalid-tags` anomaly, and the
 * odd values are kept (`invalid-value`), never retargeted.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const FILES = {
  'deploy.yaml': 'image: {{REGISTRY}}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n',
  'odd.yaml': [
    'a: "{{REGISTRY}}/org/app:../../x" # {"$imagepolicy": "flux-system:app"}',
    'b: "{{REGISTRY}}/org/app:1.0.0\\nimage: evil" # {"$imagepolicy": "flux-system:app"}',
    'c: "a b" # {"$imagepolicy": "flux-system:app:tag"}',
    '',
  ].join('\n'),
};

describe('a registry that lists names that are not tags', () => {
  let w: World;
  before(async () => {
    w = await startWorld({
      proxy: true,
      files: FILES,
      config: {
        'git.yaml': gitObjects(),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'alphabetical:\n  order: asc'),
      },
    });
    await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0']);
    // `~` and `z` sort after every valid tag: an alphabetical policy would pick them.
    w.proxy!.setTagList('org/app', [
      '1.0.0',
      '1.1.0',
      '~evil',
      'zz z',
      'zz\nimage: evil',
      '../../zz',
      'z'.repeat(300),
    ]);
  });
  after(() => w?.close());

  test('drops them, records the anomaly, selects a real tag; odd values in files are kept, not retargeted', async () => {
    const { json, code, stderr } = await w.pawlJson<RunReport>(['run']);
    assert.equal(code, 0, stderr);
    const repo = json.repositories[0]!;
    assert.equal(repo.tags, 2);
    const anomaly = repo.anomalies.find((a) => a.kind === 'invalid-tags');
    assert.ok(anomaly && anomaly.kind === 'invalid-tags', JSON.stringify(repo.anomalies));
    assert.equal(anomaly.count, 5);
    assert.ok(anomaly.examples.includes('"zz\\nimage: evil"'));
    assert.equal(json.policies[0]!.candidate, '1.1.0');

    const a = json.automations[0]!;
    assert.equal(a.result, 'pushed', a.error ?? '');
    assert.deepEqual(
      a.changes.map((c) => [c.file, c.reason]),
      [['deploy.yaml', 'upgrade']],
    );
    const kept = a.kept.filter((k) => k.file === 'odd.yaml');
    assert.deepEqual(
      kept.map((k) => [k.line, k.reason]),
      [
        [1, 'invalid-value'],
        [2, 'invalid-value'],
        [3, 'invalid-value'],
      ],
    );
    assert.match(kept[0]!.detail, /not a valid image reference/);
    const R = w.registryHost;
    assert.equal(
      await w.git.show(w.repoName, 'main', 'odd.yaml'),
      FILES['odd.yaml'].replaceAll('{{REGISTRY}}', R),
    );

    const tags = await w.pawl(['tags', 'app', '--history']);
    assert.equal(tags.code, 0, tags.stderr);
    assert.match(tags.stdout, /invalid-tags \(5\)/);
  });
});
