/**
 * The write window holds pawl's own writes, never a person's (docs/gates.md): with
 * `guard.window` closed now, `pawl run` keeps the line (`outside-window`, with the next
 * opening), and `pawl rollback` writes, commits and pushes through it.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

/**
 * A window that opens for one minute, 30 minutes from now: closed for the whole test, which
 * takes seconds (the pass's clock is the real one; a run that straddles the opening would need
 * 29 minutes).
 */
function closedWindow(now = new Date()): string {
  const minute = (now.getUTCMinutes() + 30) % 60;
  return `window:\n  schedule: "${minute} * * * *"\n  timeZone: UTC\n  duration: 1m`;
}

describe('guard.window and pawl rollback', () => {
  const worlds: World[] = [];
  after(() => Promise.all(worlds.map((w) => w.close())));

  test('a closed window holds pawl run; pawl rollback passes through it', async () => {
    const w = await startWorld({
      files: { 'values.yaml': 'image: {{REGISTRY}}/org/app:1.1.0 # {"$imagepolicy": "flux-system:app"}\n' },
      config: {
        'git.yaml': gitObjects(),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"', {
          guard: closedWindow(),
        }),
      },
    });
    worlds.push(w);
    await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0', '1.2.0']);

    const held = await w.pawlJson<RunReport>(['run']);
    assert.equal(held.code, 0, held.stderr);
    const k = held.json.automations[0]!.kept[0]!;
    assert.equal(k.reason, 'outside-window', JSON.stringify(held.json.automations[0]));
    assert.match(k.detail, /Outside the write window .*writes at .*Candidate .*1\.2\.0 waits/);
    assert.match(await w.git.show(w.repoName, 'main', 'values.yaml'), /org\/app:1\.1\.0 /);

    const rb = await w.pawl(['rollback', 'app', '--to', '1.0.0']);
    assert.equal(rb.code, 0, rb.stderr + rb.stdout);
    assert.match(await w.git.show(w.repoName, 'main', 'values.yaml'), /org\/app:1\.0\.0 /);
  });
});
