/** The rollback the page and `explain` offer: the newest candidate below every marked line. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rollbackTarget } from '../../src/run/explain.js';

const RANKED = ['1.3.0', '1.2.0', '1.1.0', '1.0.0'];
const line = (tag: string | null, newerThanCandidate = false) => ({ tag, newerThanCandidate });

test('below the line, never the line itself', () => {
  assert.equal(rollbackTarget(RANKED, [line('1.3.0')]), '1.2.0');
  // A line pinned at 1.2.0: the offer is 1.1.0, not 1.2.0 again.
  assert.equal(rollbackTarget(RANKED, [line('1.2.0')]), '1.1.0');
});

test('below every line when they differ', () => {
  assert.equal(rollbackTarget(RANKED, [line('1.3.0'), line('1.2.0')]), '1.1.0');
});

test('a hand-written tag newer than every candidate has the candidate below it', () => {
  assert.equal(rollbackTarget(RANKED, [line('1.4.0-hotfix', true)]), '1.3.0');
});

test('nothing known below: the oldest candidate, a value the policy does not rank, no markers', () => {
  assert.equal(rollbackTarget(RANKED, [line('1.0.0')]), null);
  assert.equal(rollbackTarget(RANKED, [line('latest')]), null);
  assert.equal(rollbackTarget(RANKED, [line(null)]), null);
  assert.equal(rollbackTarget(RANKED, []), null);
  assert.equal(rollbackTarget([], [line('1.0.0')]), null);
});
