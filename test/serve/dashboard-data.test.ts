import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptyConfig, type Config } from '../../src/config/index.js';
import type { DecisionRecord, RunKind } from '../../src/records/index.js';
import {
  calmWords,
  foldAttention,
  foldScanRows,
  forgeCommitUrl,
  markerState,
  overview,
  shownCounts,
  tagPart,
  timeline,
  type DashboardStore,
} from '../../src/serve/dashboard/index.js';
import type { PassEvent } from '../../src/serve/events.js';
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

test('foldAttention: the same words in the same state are one item with a count, in the first one’s place', () => {
  const why = 'no candidate: the last scan failed: 403 denied';
  const folded = foldAttention([
    { state: 'error', title: 'Scans of ops/broken fail', why: '403 denied', href: '#/repository/ops/broken' },
    { state: 'error', title: 'apps/a.yaml:3 — error', why, href: '#/policy/ops/a' },
    { state: 'pinned', title: 'apps/p.yaml:1 — pinned', why, href: '#/policy/ops/p' },
    { state: 'error', title: 'apps/b.yaml:7 — error', why, href: '#/policy/ops/b' },
    { state: 'error', title: 'apps/c.yaml:9 — error', why, href: '#/policy/ops/c' },
  ]);
  assert.deepEqual(
    folded.map((f) => [f.title, f.count, f.others.map((o) => o.title)]),
    [
      ['Scans of ops/broken fail', 1, []],
      ['apps/a.yaml:3 — error', 3, ['apps/b.yaml:7 — error', 'apps/c.yaml:9 — error']],
      ['apps/p.yaml:1 — pinned', 1, []],
    ],
  );
});

test('shownCounts: a failure is drawn at the last count; a repository that never answered has no count, not 0', () => {
  const ok = (tags: number) => ({ outcome: 'ok', tags });
  const failed = { outcome: 'failed', tags: null };
  assert.deepEqual(shownCounts([failed, failed]), [null, null]);
  assert.deepEqual(shownCounts([failed, ok(4), failed, ok(5), failed]), [null, 4, 4, 5, 5]);
});

test('foldScanRows: newest first, a run of failures with the same error is one row with its count and first time', () => {
  const scan = (at: string, outcome: string, error: string | null = null) => ({ at, outcome, error });
  const rows = foldScanRows([
    scan('t1', 'failed', 'denied'),
    scan('t2', 'ok'),
    scan('t3', 'failed', 'denied'),
    scan('t4', 'failed', 'denied'),
    scan('t5', 'failed', 'timeout'),
    scan('t6', 'failed', 'denied'),
  ]);
  assert.deepEqual(
    rows.map((r) => [r.at, r.count, r.firstAt]),
    [
      ['t6', 1, 't6'],
      ['t5', 1, 't5'],
      ['t4', 2, 't3'],
      ['t2', 1, 't2'],
      ['t1', 1, 't1'],
    ],
  );
});

test('tagPart: the tag of a marker value', () => {
  assert.equal(tagPart('registry:5000/org/app:1.2.0@sha256:abc'), '1.2.0');
  assert.equal(tagPart('1.2.0'), '1.2.0');
  assert.equal(tagPart('registry:5000/org/app'), 'registry:5000/org/app');
});

test('timeline: the value in Git after each run, and pawl’s commits to the lines with a rollback’s person and reason', async () => {
  const meta = (name: string) => ({ namespace: 'apps', name });
  const config = {
    ...emptyConfig(),
    imageRepositories: new Map([['apps/app', { metadata: meta('app'), spec: { image: 'reg/org/app' } }]]),
    imagePolicies: new Map([
      ['apps/app', { metadata: meta('app'), spec: { imageRepositoryRef: meta('app') } }],
    ]),
    automations: new Map([['apps/fleet', { metadata: meta('fleet'), spec: { sourceRef: meta('fleet') } }]]),
    gitRepositories: new Map([
      ['apps/fleet', { metadata: meta('fleet'), spec: { url: 'https://github.com/acme/fleet' } }],
    ]),
  } as unknown as Config;
  const at = (m: number) => new Date(Date.UTC(2026, 11, 1, 0, m));
  const decision = (
    runId: number,
    runKind: RunKind,
    m: number,
    action: 'write' | 'keep',
    current: string,
    candidate: string,
  ) => ({
    id: runId,
    runId,
    runKind,
    at: at(m),
    automation: 'apps/fleet',
    file: 'app.yaml',
    line: 9,
    setter: 'apps:app',
    policy: 'apps/app',
    current: `reg/org/app:${current}`,
    candidate: action === 'write' ? `reg/org/app:${candidate}` : candidate,
    reason: action === 'write' ? 'upgrade' : 'up-to-date',
    detail: '',
    action,
  });
  const decisions: DecisionRecord[] = [
    decision(5, 'run', 50, 'write', '1.1.0', '1.3.0'),
    decision(4, 'run', 40, 'keep', '1.1.0', '1.2.0'),
    decision(3, 'rollback', 30, 'write', '1.2.0', '1.1.0'),
    decision(2, 'dry-run', 20, 'write', '1.0.0', '9.9.9'),
    decision(1, 'run', 10, 'write', '1.0.0', '1.2.0'),
  ];
  const results: Record<number, unknown> = {
    1: { automations: [{ name: 'apps/fleet', commit: 'a'.repeat(40) }] },
    5: { automations: [{ name: 'apps/fleet', result: 'failed', commit: null }] },
    3: {
      automations: [{ name: 'apps/fleet', commit: 'b'.repeat(40) }],
      requestedBy: 'Dana <d@x>',
      reason: 'leak',
    },
  };
  const store: DashboardStore = {
    ...nothingStored,
    scanHistory: async () => [],
    decisions: async (f) => decisions.filter((d) => d.policy === f?.policy),
    getRun: async (id) => ({
      id,
      at: at(id * 10),
      kind: 'run',
      endedAt: at(id * 10 + 1),
      result: results[id] ?? null,
    }),
  };
  const t = await timeline(
    { config, store, dryRun: false, lastPass: new Map(), repositoriesOf: new Map(), now: at(50) },
    'apps/app',
    50,
  );
  const p = t!.policies[0]!;
  assert.deepEqual(
    p.inGit.map((g) => [g.at.slice(11, 16), g.value]),
    [
      ['00:11', '1.2.0'],
      ['00:31', '1.1.0'],
      ['00:40', '1.1.0'],
      ['00:50', '1.1.0'],
    ],
    'a write is in Git from its run’s end; dry runs and writes never pushed change nothing there',
  );
  assert.deepEqual(
    p.git.map((g) => [g.kind, g.value, g.commit?.[0], g.url, g.by, g.reason]),
    [
      ['run', '1.2.0', 'a', `https://github.com/acme/fleet/commit/${'a'.repeat(40)}`, null, null],
      [
        'rollback',
        '1.1.0',
        'b',
        `https://github.com/acme/fleet/commit/${'b'.repeat(40)}`,
        'Dana <d@x>',
        'leak',
      ],
    ],
  );
  assert.deepEqual(p.tags, ['1.2.0', '1.1.0'], 'the y axis has the values in Git');
  assert.equal(t!.answered, false);
});

test('overview: a marker that points nowhere is in Needs attention, with its file:line and the pass’s words', async () => {
  const config = {
    ...emptyConfig(),
    automations: new Map([
      [
        'apps/fleet',
        {
          metadata: { namespace: 'apps', name: 'fleet' },
          spec: { sourceRef: { namespace: 'apps', name: 'fleet' } },
        },
      ],
    ]),
  } as unknown as Config;
  const at = new Date('2026-12-01T00:00:00Z');
  const report = {
    repositories: [],
    policies: [],
    automations: [
      {
        name: 'apps/fleet',
        result: 'up-to-date',
        commit: null,
        branch: 'main',
        changes: [],
        kept: [],
        error: null,
        warnings: [
          {
            file: 'apps/web.yaml',
            line: 12,
            message: 'names ImagePolicy apps/wbe, which does not exist; did you mean apps/web?',
          },
          { file: 'apps/link.yaml', message: 'a symlink out of the repository, skipped' },
        ],
      },
    ],
  } as unknown as PassEvent['report'];
  const o = await overview({
    config,
    store: nothingStored,
    dryRun: false,
    lastPass: new Map([
      [
        'apps/fleet',
        {
          automation: 'apps/fleet',
          trigger: 'interval',
          webhooks: 0,
          startedAt: at,
          endedAt: at,
          dryRun: false,
          report,
          runId: 1,
        },
      ],
    ]),
    repositoriesOf: new Map(),
    now: at,
  });
  assert.deepEqual(
    o.attention.map((a) => [a.state, a.title, a.why]),
    [
      [
        'error',
        'apps/web.yaml:12 — marker points nowhere',
        'apps/fleet: names ImagePolicy apps/wbe, which does not exist; did you mean apps/web?',
      ],
    ],
  );
});
