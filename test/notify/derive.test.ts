import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  emptyMemory,
  eventsFrom,
  foldEvents,
  guardEventsFromRecords,
  scanAttempts,
} from '../../src/notify/index.js';
import type { AlertMemory, PassObservation, AlertEvent } from '../../src/notify/index.js';
import { toStoreEvent } from '../../src/guard/index.js';
import type { GuardEvent } from '../../src/guard/types.js';
import { BLOCKED, COMMIT, MISSING, PINNED, PIN_COMMIT, automation, kept, report } from './fixtures.js';

const at = (m: number): Date => new Date(Date.UTC(2026, 10, 30, 9, m, 0));

const copyOf = (m: AlertMemory) => Object.entries(m).map(([k, v]) => [k, [...(v as Map<string, unknown>)]]);

/**
 * Folds observations in order; returns the events of each. Each is folded twice: by
 * `eventsFrom`, which must leave the memory it is given as it was, and by `foldEvents` into one
 * memory in place (the daemon's way), which must tell the same events and hold the same memory.
 */
function fold(observations: PassObservation[], memory: AlertMemory = emptyMemory()): AlertEvent[][] {
  const out: AlertEvent[][] = [];
  const inPlace = emptyMemory();
  for (const [k, v] of Object.entries(memory))
    for (const [key, x] of v as Map<string, never>) inPlace[k as keyof typeof inPlace].set(key, x);
  for (const o of observations) {
    const before = copyOf(memory);
    const r = eventsFrom(memory, o);
    assert.deepEqual(copyOf(memory), before, 'eventsFrom leaves the memory it was given as it was');
    assert.deepEqual(foldEvents(inPlace, o), r.events, 'foldEvents tells the same events');
    memory = r.memory;
    assert.deepEqual(copyOf(inPlace), copyOf(memory), 'and holds the same memory');
    out.push(r.events);
  }
  return out;
}

const reasons = (events: AlertEvent[]): string[] => events.map((e) => e.reason);

const STALE: GuardEvent = {
  kind: 'stale-scan',
  policy: 'apps/app',
  selected: '1.0.0',
  highWater: '1.1.0',
  highWaterExists: true,
};

describe('eventsFrom', () => {
  test('a blocked downgrade is reported when it begins, not every pass; again when its values change', () => {
    const pass = (candidate: string, m: number): PassObservation => ({
      at: at(m),
      report: report([automation({ kept: [{ ...BLOCKED, candidate }] })]),
    });
    const [first, second, third] = fold([pass('1.1.0', 1), pass('1.1.0', 2), pass('1.2.0', 3)]);
    assert.deepEqual(reasons(first!), ['DowngradeBlocked']);
    assert.deepEqual(second, []);
    assert.deepEqual(reasons(third!), ['DowngradeBlocked']);
    const e = first![0]!;
    assert.deepEqual(e.object, { kind: 'ImagePolicy', namespace: 'apps', name: 'app' });
    assert.equal(e.severity, 'error');
    assert.equal(e.message, `Downgrade blocked (apps/b.yaml:9): ${BLOCKED.detail}`);
    assert.deepEqual(e.metadata, {
      automation: 'apps/fleet',
      file: 'apps/b.yaml:9',
      current: '2.0.0',
      candidate: '1.1.0',
    });
    assert.deepEqual(e.at, at(1));
  });

  test('a blocked line whose current value changed (same candidate) is reported again', () => {
    const pass = (current: string, m: number): PassObservation => ({
      at: at(m),
      report: report([automation({ kept: [{ ...BLOCKED, current }] })]),
    });
    const r = fold([pass('2.0.0', 1), pass('2.0.0', 2), pass('2.1.0', 3)]);
    assert.deepEqual(r.map(reasons), [['DowngradeBlocked'], [], ['DowngradeBlocked']]);
    assert.equal(r[2]![0]!.metadata.current, '2.1.0');
  });

  test('an automation left out of a pass, or failing, keeps what is known about its lines', () => {
    const blocked: PassObservation = { at: at(1), report: report([automation({ kept: [BLOCKED] })]) };
    const absent: PassObservation = { at: at(2), report: report([]) };
    const failed: PassObservation = {
      at: at(3),
      report: report([automation({ result: 'failed', error: 'push rejected' })]),
    };
    const [, a, f, again] = fold([blocked, absent, failed, { ...blocked, at: at(4) }]);
    assert.deepEqual(a, []);
    assert.deepEqual(reasons(f!), ['UpdateFailed']);
    assert.deepEqual(again, []);
  });

  test('a failing automation is reported once per distinct error, and again after a success', () => {
    const fail = (error: string, m: number): PassObservation => ({
      at: at(m),
      report: report([automation({ result: 'failed', error })]),
    });
    const ok: PassObservation = { at: at(3), report: report([automation({})]) };
    const r = fold([fail('push rejected', 1), fail('push rejected', 2), ok, fail('push rejected', 4)]);
    assert.deepEqual(r.map(reasons), [['UpdateFailed'], [], [], ['UpdateFailed']]);
    assert.equal(r[0]![0]!.message, 'ImageUpdateAutomation apps/fleet failed: push rejected');
    assert.deepEqual(r[0]![0]!.object, { kind: 'ImageUpdateAutomation', namespace: 'apps', name: 'fleet' });
  });

  test('a push with changes is one UpgradeWritten carrying the commit; a dry run says nothing', () => {
    const change = {
      file: 'apps/a.yaml',
      line: 12,
      setter: 'apps:app',
      policy: 'apps/app',
      old: '1.0.0',
      new: '1.1.0',
      reason: 'upgrade' as const,
    };
    const [pushed, dry] = fold([
      { at: at(1), report: report([automation({ result: 'pushed', commit: COMMIT, changes: [change] })]) },
      { at: at(2), report: report([automation({ result: 'dry-run', changes: [change] })]) },
    ]);
    assert.equal(pushed!.length, 1);
    const e = pushed![0]!;
    assert.equal(e.reason, 'UpgradeWritten');
    assert.equal(e.severity, 'info');
    assert.equal(
      e.message,
      `pushed ${COMMIT.slice(0, 12)} to main:\napps/a.yaml:12 apps:app: 1.0.0 → 1.1.0 (upgrade)`,
    );
    assert.deepEqual(e.metadata, { commit: COMMIT, branch: 'main' });
    assert.deepEqual(dry, []);
  });

  test('a pull request opened is one PullRequestOpened; updating it says nothing', () => {
    const pr = (action: 'opened' | 'updated') => ({
      number: 12,
      url: 'https://gitea.example.test/org/fleet/pulls/12',
      action,
      state: 'open' as const,
      closed: [],
    });
    const [opened, updated] = fold([
      {
        at: at(1),
        report: report([automation({ result: 'up-to-date', branch: 'pawl/app', pullRequest: pr('opened') })]),
      },
      {
        at: at(2),
        report: report([
          automation({ result: 'up-to-date', branch: 'pawl/app', pullRequest: pr('updated') }),
        ]),
      },
    ]);
    assert.deepEqual(
      opened!.map((e) => [e.reason, e.message, e.metadata]),
      [
        [
          'PullRequestOpened',
          'opened pull request #12 from pawl/app: https://gitea.example.test/org/fleet/pulls/12',
          { pullRequest: '12', url: 'https://gitea.example.test/org/fleet/pulls/12', branch: 'pawl/app' },
        ],
      ],
    );
    assert.deepEqual(updated, []);
  });

  test('a pin is reported when it appears, with the pinning commit from the guard’s events, and when it is lifted', () => {
    const pinEvent: GuardEvent = {
      kind: 'pin',
      policy: 'apps/app',
      file: 'apps/d.yaml',
      line: 5,
      current: '1.0.0',
      candidate: '1.1.0',
      commit: PIN_COMMIT,
      detail: PINNED.detail,
    };
    const written = {
      file: 'apps/d.yaml',
      line: 5,
      setter: 'apps:app',
      policy: 'apps/app',
      old: '1.0.0',
      new: '1.2.0',
      reason: 'upgrade' as const,
    };
    const [created, still, lifted] = fold([
      { at: at(1), report: report([automation({ kept: [PINNED] })]), guardEvents: [pinEvent] },
      { at: at(2), report: report([automation({ kept: [{ ...PINNED, candidate: '1.1.1' }] })]) },
      {
        at: at(3),
        report: report([automation({ result: 'pushed', commit: COMMIT, changes: [written] })]),
      },
    ]);
    assert.deepEqual(reasons(created!), ['PinCreated']);
    assert.equal(created![0]!.metadata.commit, PIN_COMMIT);
    assert.equal(created![0]!.message, `Pinned (apps/d.yaml:5): ${PINNED.detail}`);
    assert.deepEqual(still, [], 'a new candidate for a pinned line is not a new pin');
    assert.deepEqual(reasons(lifted!), ['UpgradeWritten', 'PinLifted']);
    const e = lifted![1]!;
    assert.equal(e.metadata.commit, COMMIT);
    assert.equal(
      e.message,
      'Pin lifted (apps/d.yaml:5): 1.2.0 written over 1.0.0, pinned since a person moved it back.',
    );
  });

  test('a stale-list episode begins once and ends when a good selection comes back; a failed scan does not end it', () => {
    const r = fold([
      { at: at(1), report: report([]), guardEvents: [STALE] },
      { at: at(2), report: report([]), guardEvents: [{ ...STALE, selected: '0.9.0' }] },
      {
        at: at(3),
        report: report([], 'the last scan of ImageRepository apps/app failed: 503'),
        guardEvents: [],
      },
      { at: at(4), report: report([]), guardEvents: [] },
      { at: at(5), report: report([]), guardEvents: [] },
    ]);
    assert.deepEqual(r.map(reasons), [['StaleTagList'], [], [], ['StaleTagListEnded'], []]);
    assert.equal(
      r[0]![0]!.message,
      'Stale tag list: the scan selected 1.0.0, older than 1.1.0, which still exists; kept 1.1.0.',
    );
    assert.deepEqual(r[0]![0]!.metadata, { selected: '1.0.0', highWater: '1.1.0' });
    assert.equal(
      r[3]![0]!.message,
      'The tag list agrees again: apps/app selects 1.1.0 (high-water mark 1.1.0).',
    );
  });

  test('an accepted regression ends the episode with the guard’s sentence', () => {
    const accepted: GuardEvent = {
      kind: 'regression-accepted',
      policy: 'apps/app',
      from: '1.1.0',
      to: '1.0.0',
      confirmations: 3,
      spanMs: 900_000,
    };
    const r = fold([
      { at: at(1), report: report([]), guardEvents: [{ ...STALE, highWaterExists: false, pendingCount: 1 }] },
      { at: at(2), report: report([]), guardEvents: [accepted] },
    ]);
    assert.deepEqual(r.map(reasons), [['StaleTagList'], ['StaleTagListEnded']]);
    assert.equal(
      r[1]![0]!.message,
      'Regression accepted: 1.1.0 is gone and 3 scans over 900s agreed on 1.0.0.',
    );
  });

  test('scans failing three times in a row are reported once; recovery once; an attempt seen twice counts once', () => {
    const fail = (m: number) => ({ repository: 'apps/app', at: at(m), ok: false, error: 'HTTP 503' });
    const ok = (m: number) => ({ repository: 'apps/app', at: at(m), ok: true, error: null });
    const r = fold([
      { at: at(1), report: report([]), scans: [fail(1), fail(2)] },
      { at: at(2), report: report([]), scans: [fail(2)] },
      { at: at(3), report: report([]), scans: [fail(3)] },
      { at: at(4), report: report([]), scans: [fail(4)] },
      { at: at(5), report: report([]), scans: [ok(5)] },
      { at: at(6), report: report([]), scans: [ok(6)] },
    ]);
    assert.deepEqual(r.map(reasons), [[], [], ['ScanFailing'], [], ['ScanRecovered'], []]);
    assert.equal(r[2]![0]!.message, 'The last 3 scans of ImageRepository apps/app failed: HTTP 503');
    assert.deepEqual(r[2]![0]!.object, { kind: 'ImageRepository', namespace: 'apps', name: 'app' });
  });

  test('failures below the threshold, then a good scan: no ScanFailing, so no ScanRecovered; the count starts over', () => {
    const fail = (m: number) => ({ repository: 'apps/app', at: at(m), ok: false, error: 'HTTP 503' });
    const ok = (m: number) => ({ repository: 'apps/app', at: at(m), ok: true, error: null });
    const r = fold([
      { at: at(1), report: report([]), scans: [fail(1), fail(2)] },
      { at: at(3), report: report([]), scans: [ok(3)] },
      { at: at(4), report: report([]), scans: [fail(4), fail(5)] },
      { at: at(6), report: report([]), scans: [fail(6)] },
    ]);
    assert.deepEqual(r.map(reasons), [[], [], [], ['ScanFailing']]);
  });

  test('scanAttempts turns the scanner’s reports into attempts; suspended repositories made none', () => {
    const base = { image: 'x', tags: 1, anomalies: [], added: [], removed: [], requests: 1 };
    const attempts = scanAttempts(
      [
        { ...base, name: 'apps/a', scanned: true, suspended: false, error: null },
        { ...base, name: 'apps/b', scanned: false, suspended: false, error: 'HTTP 500' },
        { ...base, name: 'apps/c', scanned: false, suspended: true, error: null },
      ],
      at(1),
    );
    assert.deepEqual(attempts, [
      { repository: 'apps/a', at: at(1), ok: true, error: null },
      { repository: 'apps/b', at: at(1), ok: false, error: 'HTTP 500' },
    ]);
  });

  test('the store’s event records read back as the guard’s events', () => {
    const events: GuardEvent[] = [
      STALE,
      { kind: 'regression-accepted', policy: 'apps/app', from: 'b', to: 'a', confirmations: 3, spanMs: 1 },
      {
        kind: 'pin',
        policy: 'apps/app',
        file: 'f.yaml',
        line: 2,
        current: 'a',
        candidate: 'b',
        commit: PIN_COMMIT,
        detail: 'd',
      },
    ];
    const records = events.map((e) => {
      const r = toStoreEvent(e, at(1));
      return { kind: r.kind, policy: r.policy ?? null, detail: r.detail };
    });
    assert.deepEqual(guardEventsFromRecords(records), events);
    assert.deepEqual(guardEventsFromRecords([{ kind: 'stale-scan', policy: null, detail: {} }]), []);
  });

  test('lines that are not notable make no events', () => {
    const [r] = fold([
      {
        at: at(1),
        report: report([
          automation({
            kept: [
              kept('a.yaml', 1, 'up-to-date', '1.0.0', '1.0.0', ''),
              kept('a.yaml', 2, 'equivalent', 'v1.0.0', '1.0.0', ''),
              MISSING,
            ],
          }),
        ]),
      },
    ]);
    assert.deepEqual(reasons(r!), ['CandidateMissing']);
  });
});

describe('eventsFrom: the gates', () => {
  const unverified = (tag: string | null, m: number, candidate = '1.1.0'): PassObservation => {
    const r = report([automation({})]);
    return {
      at: at(m),
      report: {
        ...r,
        policies: r.policies.map((p) => ({
          ...p,
          candidate,
          ...(tag ? { unverified: { tag, why: '(sha256:ab) is not verified: no signature tag' } } : {}),
        })),
      },
    };
  };

  test('an unverified newest tag is an error once per tag, also when an older verified one was written; again after it passed', () => {
    const [first, second, third, fourth, fifth] = fold([
      unverified('1.2.0', 1),
      unverified('1.2.0', 2),
      unverified('1.3.0', 3),
      unverified(null, 4, '1.3.0'),
      unverified('1.4.0', 5),
    ]);
    assert.deepEqual(reasons(first!), ['SignatureUnverified']);
    assert.equal(first![0]!.severity, 'error');
    assert.match(
      first![0]!.message,
      /1\.2\.0 \(sha256:ab\) is not verified: no signature tag; .*newest verified tag, 1\.1\.0/,
    );
    assert.deepEqual(first![0]!.metadata, { tag: '1.2.0', candidate: '1.1.0' });
    assert.deepEqual(second, []);
    assert.deepEqual(reasons(third!), ['SignatureUnverified']);
    assert.deepEqual(fourth, []);
    assert.deepEqual(reasons(fifth!), ['SignatureUnverified']);
  });

  test('too-new and outside-window holds are info, when the hold begins or its candidate changes', () => {
    const held = (reason: 'too-new' | 'outside-window', candidate: string, m: number): PassObservation => ({
      at: at(m),
      report: report([
        automation({ kept: [kept('apps/a.yaml', 3, reason, '1.0.0', candidate, `held ${m}`)] }),
      ]),
    });
    const [first, second, third, fourth] = fold([
      held('outside-window', '1.1.0', 1),
      held('outside-window', '1.1.0', 2),
      held('too-new', '1.1.0', 3),
      held('too-new', '1.2.0', 4),
    ]);
    assert.deepEqual(reasons(first!), ['UpdateHeld']);
    assert.equal(first![0]!.severity, 'info');
    assert.equal(first![0]!.metadata.gate, 'outside-window');
    assert.deepEqual(second, []);
    assert.deepEqual(reasons(third!), ['UpdateHeld']);
    assert.deepEqual(reasons(fourth!), ['UpdateHeld']);
  });

  test('a memory from a pawl without spec.verify (no unverified field) is read', () => {
    const { unverified: _, ...old } = emptyMemory();
    const r = eventsFrom(old, unverified('1.2.0', 1));
    assert.deepEqual(reasons(r.events), ['SignatureUnverified']);
  });
});
