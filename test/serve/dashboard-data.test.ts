import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyConfig } from '../../src/config/index.js';
import {
  calmWords,
  forgeCommitUrl,
  markerState,
  overview,
  type DashboardStore,
} from '../../src/serve/dashboard-data.js';
import type { Problem } from '../../src/util/index.js';

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

test('calmWords: an empty attention list is good news only when there are lines to be well', () => {
  const base = { paths: ['/etc/pawl'], automations: 1, suspended: 0, policies: 1, repositories: 1 };
  const empty = calmWords({ ...base, automations: 0, policies: 0, repositories: 0, passes: 0, markers: 0 });
  assert.equal(empty.kind, 'nothing-configured');
  assert.match(
    empty.text,
    /^Nothing is configured: pawl found no ImageRepository, ImagePolicy or ImageUpdateAutomation in \/etc\/pawl/,
  );
  const noAutomation = calmWords({
    ...base,
    automations: 0,
    policies: 2,
    repositories: 3,
    passes: 0,
    markers: 0,
  });
  assert.match(noAutomation.text, /3 ImageRepository and 2 ImagePolicy objects but no ImageUpdateAutomation/);
  assert.match(calmWords({ ...base, paths: [], automations: 0, passes: 0, markers: 0 }).text, /no -c path/);
  assert.equal(calmWords({ ...base, suspended: 1, passes: 0, markers: 0 }).kind, 'all-suspended');
  assert.equal(calmWords({ ...base, passes: 0, markers: 0 }).kind, 'no-pass-yet');
  assert.equal(calmWords({ ...base, passes: 1, markers: 0 }).kind, 'no-markers');
  const well = calmWords({ ...base, passes: 1, markers: 4 });
  assert.deepEqual(well.kind, 'all-well');
  assert.match(well.text, /^Nothing needs a person/);
});

/** The store of a daemon that has recorded nothing yet. */
const nothingStored: DashboardStore = {
  policyStates: async () => new Map(),
  latestSelections: async () => new Map(),
  latestEvents: async () => new Map(),
  latestScans: async () => new Map(),
  decisions: async () => [],
  getRun: async () => null,
  scanHistory: async () => [],
  selectionHistory: async () => [],
};

test('overview: each configuration problem first, with its file:line; an empty configuration is not green', async () => {
  const src = {
    config: emptyConfig(),
    store: nothingStored,
    dryRun: false,
    lastPass: new Map(),
    repositoriesOf: new Map(),
    configPaths: ['clusters/prod'],
    now: new Date('2026-12-01T00:00:00Z'),
  };
  const quiet = await overview(src);
  assert.deepEqual(quiet.attention, []);
  assert.equal(quiet.calm?.kind, 'nothing-configured');
  assert.match(quiet.calm!.text, /in clusters\/prod/);
  assert.deepEqual(quiet.configuration, {
    paths: ['clusters/prod'],
    automations: 0,
    policies: 0,
    repositories: 0,
  });

  const problems: Problem[] = [
    {
      location: { file: 'clusters/prod/app.yaml', line: 12 },
      object: 'ImagePolicy apps/app',
      message: 'spec.policy is missing',
      severity: 'error',
    },
    {
      location: { file: 'clusters/prod/fleet.yaml', line: 3 },
      object: 'ImageUpdateAutomation apps/fleet',
      message: 'skipped: ImagePolicy apps/app is invalid',
      severity: 'error',
    },
    { location: { file: 'clusters/prod/sops.yaml' }, message: 'encrypted', severity: 'warning' },
  ];
  const bad = await overview({ ...src, configuration: { refused: false, at: src.now, problems } });
  assert.equal(bad.calm, null);
  assert.deepEqual(
    bad.attention.map((a) => [a.state, a.title, a.why]),
    [
      ['error', 'Configuration: clusters/prod/app.yaml:12', 'ImagePolicy apps/app: spec.policy is missing'],
      [
        'error',
        'Configuration: clusters/prod/fleet.yaml:3',
        'ImageUpdateAutomation apps/fleet: skipped: ImagePolicy apps/app is invalid',
      ],
    ],
  );
});
