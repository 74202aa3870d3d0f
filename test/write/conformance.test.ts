import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onlyScalarsChanged, runSetterConformance } from '../../scripts/conformance/setters.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = process.env.PAWL_CONFORMANCE_DIR ?? resolve(repoRoot, '..', 'shared', 'conformance', 'flux');

test("Flux's update/ and policy/ setter fixtures all pass", async () => {
  const r = await runSetterConformance(dir);
  assert.deepEqual(r.failed, []);
  // update/setters, policy/one-policy, policy/multiple-policies, policy/update-path
  assert.ok(r.passed >= 4, `only ${r.passed} cases ran`);
});

test('the byte check notices a change outside a marked scalar', () => {
  const input = 'a: 1\nimage: x:1 # {"$imagepolicy": "ns:p"}\n';
  assert.equal(onlyScalarsChanged(input, 'a: 1\nimage: x:2 # {"$imagepolicy": "ns:p"}\n', 'f.yaml'), null);
  assert.match(
    onlyScalarsChanged(input, 'a: 1\n\nimage: x:2 # {"$imagepolicy": "ns:p"}\n', 'f.yaml') ?? '',
    /outside/,
  );
  assert.match(
    onlyScalarsChanged(input, 'a: 1\nimage: x:2 # {"$imagepolicy": "ns:p"}', 'f.yaml') ?? '',
    /outside/,
  );
});
