import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { refKey } from '../../src/config/index.js';
import { copyString, nameKey, sharedNameKey } from '../../src/util/index.js';

// A real collection before each heap reading, so garbage is not mistaken for what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('nameKey, refKey and sharedNameKey: namespace/name, the same key whichever way it is asked for', () => {
  assert.equal(nameKey('flux-system', 'app'), 'flux-system/app');
  assert.equal(refKey({ namespace: 'flux-system', name: 'app' }), 'flux-system/app');
  assert.equal(sharedNameKey('flux-system/app'), 'flux-system/app');
  assert.equal(nameKey('', 'app'), '/app');
  assert.equal(sharedNameKey('no-namespace'), 'no-namespace', 'a key without a slash is its own');
  assert.equal(nameKey('a', 'b/c'), 'a/b/c');
  assert.equal(sharedNameKey('a/b/c'), 'a/b/c');
});

test('nameKey: what a daemon keeps of 100,000 keys of 100 names is the references to them', () => {
  // Each layer of a daemon kept its own key; a concatenation of two strings is at least two
  // V8 strings of 32 bytes or more. One copy each: the array's 8 bytes a slot.
  const keys: string[] = new Array<string>(100_000);
  const names = Array.from({ length: 100 }, (_, i) => `application-${i}`);
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < keys.length; i++) {
    const name = names[i % names.length]!;
    keys[i] = i % 2 === 0 ? refKey({ namespace: 'flux-system', name }) : sharedNameKey(`flux-system/${name}`);
  }
  gc();
  const kept = process.memoryUsage().heapUsed - before;
  assert.equal(new Set(keys).size, 100);
  assert.ok(kept < 2_000_000, `100,000 keys kept ${kept} bytes beyond their array (one each: 6.4 MB)`);
});

test('copyString and nameKey keep a string with a lone surrogate exactly (a name from a command line or a webhook path)', () => {
  const odd = 'app-\ud800';
  assert.equal(copyString(odd), odd);
  assert.equal(copyString('app-\udc00-x'), 'app-\udc00-x');
  assert.equal(copyString('\ud800\ud800\udc00'), '\ud800\ud800\udc00', 'a lone one before a pair');
  assert.equal(copyString('app-😀'), 'app-😀');
  assert.equal(nameKey('flux-system', odd), `flux-system/${odd}`);
});

test('copyString: a slice with a surrogate pair (an emoji in a commit subject) keeps nothing of its text', () => {
  gc();
  const before = process.memoryUsage().heapUsed;
  // Made in a frame of its own, so that no register of this one holds the text or the slice.
  const copy = (() => {
    const text = `${'x'.repeat(8_000_000)} update 😀 app`;
    return copyString(text.slice(text.length - 13));
  })();
  gc();
  const kept = process.memoryUsage().heapUsed - before;
  assert.equal(copy, 'update 😀 app');
  assert.ok(kept < 1_000_000, `the copy kept ${kept} bytes (its text is 16 MB)`);
});
