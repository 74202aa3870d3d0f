import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forgeCommitUrl, markerState } from '../../src/serve/dashboard-data.js';

const SHA = '0123456789abcdef0123456789abcdef01234567';

test('forgeCommitUrl links commits on the forges whose layout is known, and nowhere else', () => {
  const cases: [string, string | null][] = [
    ['https://github.com/acme/fleet', `https://github.com/acme/fleet/commit/${SHA}`],
    ['https://github.com/acme/fleet.git', `https://github.com/acme/fleet/commit/${SHA}`],
    ['git@github.com:acme/fleet.git', `https://github.com/acme/fleet/commit/${SHA}`],
    ['ssh://git@github.com/acme/fleet.git', `https://github.com/acme/fleet/commit/${SHA}`],
    ['https://gitlab.com/group/sub/fleet.git', `https://gitlab.com/group/sub/fleet/-/commit/${SHA}`],
    ['https://gitlab.example.org/ops/fleet', `https://gitlab.example.org/ops/fleet/-/commit/${SHA}`],
    ['git@bitbucket.org:team/fleet.git', `https://bitbucket.org/team/fleet/commits/${SHA}`],
    ['https://codeberg.org/me/fleet.git', `https://codeberg.org/me/fleet/commit/${SHA}`],
    ['https://gitea.example.net/me/fleet', `https://gitea.example.net/me/fleet/commit/${SHA}`],
    ['https://user:secret@github.com/acme/fleet.git', `https://github.com/acme/fleet/commit/${SHA}`],
    ['http://127.0.0.1:8080/fleet.git', null],
    ['https://git.internal/acme/fleet', null],
    ['file:///srv/git/fleet', null],
    ['/srv/git/fleet', null],
  ];
  for (const [url, want] of cases) assert.equal(forgeCommitUrl(url, SHA), want, url);
  assert.equal(forgeCommitUrl('https://github.com/acme/fleet', 'not-a-sha'), null);
});

test('markerState: the reason, and the policy’s situation for lines that were kept', () => {
  const fine = { stale: null, error: null, pending: null };
  const stale = { stale: 'stale list', error: null, pending: null };
  assert.equal(markerState('upgrade', fine), 'upgrade');
  assert.equal(markerState('retarget', fine), 'upgrade');
  assert.equal(markerState('pinned', stale), 'pinned');
  assert.equal(markerState('downgrade-blocked', fine), 'downgrade-blocked');
  assert.equal(markerState('candidate-missing', fine), 'candidate-missing');
  assert.equal(markerState('up-to-date', fine), 'up-to-date');
  assert.equal(markerState('up-to-date', stale), 'stale');
  assert.equal(markerState('no-candidate', fine), 'error');
  // spec.verify's refusal needs a person; the time gates are expected holds, not errors.
  assert.equal(markerState('unverified', fine), 'unverified');
  assert.equal(markerState('too-new', fine), 'held');
  assert.equal(markerState('outside-window', fine), 'held');
  assert.equal(markerState('no-candidate', stale), 'stale');
  assert.equal(
    markerState('no-candidate', { ...fine, pending: { candidate: 'x', count: 1, firstAt: '', lastAt: '' } }),
    'stale',
  );
  assert.equal(markerState('undecidable', fine), 'error');
});
