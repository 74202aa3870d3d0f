import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spliceSuspend } from '../../src/write/index.js';

const AUTO = { kind: 'ImageUpdateAutomation', namespace: 'flux-system', name: 'fleet' };

const FILE = `# the fleet's automation
apiVersion: v1
kind: ConfigMap
metadata: {name: fleet, namespace: flux-system}
data: {a: b}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata:
  name: fleet
  namespace: flux-system
spec:
    interval: 5m   # keep
    sourceRef: {kind: GitRepository, name: fleet}
`;

function ok(r: ReturnType<typeof spliceSuspend>): { text: string; line: number } {
  assert.ok('changed' in r && r.changed, JSON.stringify(r));
  return r;
}

test('suspend inserts one line at the indentation of spec, in the right document; resume removes it', () => {
  const s = ok(spliceSuspend(FILE, AUTO, true));
  assert.equal(s.text, FILE.replace('spec:\n', 'spec:\n    suspend: true\n'));
  assert.equal(s.line, 13);
  const back = ok(spliceSuspend(s.text, AUTO, false));
  assert.equal(back.text, FILE);
  assert.deepEqual(spliceSuspend(FILE, AUTO, false), {
    changed: false,
    why: 'ImageUpdateAutomation flux-system/fleet is not suspended (no spec.suspend)',
  });
});

test('an existing value is replaced in place: its comment, CRLF and the rest stay', () => {
  const text =
    'kind: ImageRepository\r\nmetadata:\r\n  name: app\r\nspec:\r\n  image: x\r\n  suspend: false # paused on Fridays\r\n';
  const id = { kind: 'ImageRepository', namespace: 'default', name: 'app' };
  const s = ok(spliceSuspend(text, id, true));
  assert.equal(s.text, text.replace('suspend: false', 'suspend: true'));
  assert.ok('why' in spliceSuspend(s.text, id, true));
  // Removing keeps the rest of the file byte for byte, the comment line goes with it.
  assert.equal(
    ok(spliceSuspend(s.text, id, false)).text,
    text.replace('  suspend: false # paused on Fridays\r\n', ''),
  );
  const crlf = ok(
    spliceSuspend('kind: ImageRepository\r\nmetadata:\r\n  name: app\r\nspec:\r\n  image: x\r\n', id, true),
  );
  assert.equal(
    crlf.text,
    'kind: ImageRepository\r\nmetadata:\r\n  name: app\r\nspec:\r\n  suspend: true\r\n  image: x\r\n',
  );
});

test('what cannot be spliced is named, and nothing is changed', () => {
  const flow =
    'kind: ImagePolicy\nmetadata: {name: p, namespace: ns}\nspec: {imageRepositoryRef: {name: p}}\n';
  const id = { kind: 'ImagePolicy', namespace: 'ns', name: 'p' };
  assert.match(String((spliceSuspend(flow, id, true) as { error: string }).error), /no block-style spec/);
  assert.match(
    String((spliceSuspend(flow, { ...id, namespace: 'other' }, true) as { error: string }).error),
    /ImagePolicy other\/p is not defined in this file/,
  );
});
