import { test } from 'node:test';
import assert from 'node:assert/strict';
import { referenceOnce } from '../../src/guard/decide.js';

test('a decision names the full image reference once; later mentions are its tags', () => {
  assert.equal(
    referenceOnce('ghcr.io/org/app:1.2.0 is already the candidate ghcr.io/org/app:1.2.0.', 'ghcr.io/org/app'),
    'ghcr.io/org/app:1.2.0 is already the candidate 1.2.0.',
  );
  assert.equal(
    referenceOnce('Candidate r/app:1.3.0@sha256:ab is newer than current r/app:1.2.0 by semver.', 'r/app'),
    'Candidate r/app:1.3.0@sha256:ab is newer than current 1.2.0 by semver.',
  );
  // Another image's reference is never cut.
  assert.equal(referenceOnce('a/b:1 over a/bc:2', 'a/b'), 'a/b:1 over a/bc:2');
});
