import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { pinFor, pinStatus, policyOfSetter, type PinInput } from '../../src/guard/pins.js';
import { decideMarker } from '../../src/guard/decide.js';
import { parseMarkerValue } from '../../src/guard/values.js';
import type { LineChange } from '../../src/git/history.js';
import {
  rollbackTrailers,
  parseTrailerLines,
  releaseTrailers,
  isReleaseOf,
} from '../../src/guard/trailers.js';
import { buildTimes, guard, noBuildTimes, policyOrder, semver, serviceMain } from './helpers.js';

const sem = policyOrder(semver());
const PIN_TIME = new Date('2026-11-10T12:00:00Z');
const before = new Date('2026-11-01T00:00:00Z');
const after = new Date('2026-11-11T00:00:00Z');

function change(previous: string | null, value: string, over: Partial<LineChange> = {}): LineChange {
  return {
    file: 'apps/app.yaml',
    line: 10,
    setter: 'apps:app:tag',
    field: 'tag',
    value,
    previous,
    commit: 'c'.repeat(40),
    parent: 'p'.repeat(40),
    author: { name: 'Jane Doe', email: 'jane@example.com' },
    authorTime: PIN_TIME,
    time: PIN_TIME,
    subject: 'roll back',
    trailers: [],
    ...over,
  };
}

function input(history: LineChange | null, over: Partial<PinInput> = {}): PinInput {
  return {
    history,
    order: sem.order,
    buildTimeOrder: noBuildTimes,
    candidate: '1.1.0',
    candidateFirstSeen: before,
    candidateInitial: false,
    released: false,
    manualEdits: 'Respect',
    ...over,
  };
}

describe('pins', () => {
  test('a person moving the value back pins the line', () => {
    const p = pinFor(input(change('1.1.0', '1.0.0')));
    assert.ok(p);
    assert.deepEqual(
      [p.value, p.previous, p.kind, p.orderedBy, p.author.name],
      ['1.0.0', '1.1.0', 'manual', 'policy', 'Jane Doe'],
    );
    assert.equal(p.time, PIN_TIME);
  });

  test('the pinned line is kept by the decision (`pinned`) while the candidate is the old release', () => {
    const pin = pinFor(input(change('1.1.0', '1.0.0')));
    const d = decideMarker({
      current: parseMarkerValue('tag', '1.0.0'),
      candidate: { tag: '1.1.0', name: 'ghcr.io/org/app' },
      field: 'tag',
      guard: guard(),
      order: sem.order,
      buildTimeOrder: noBuildTimes,
      pin,
      candidateExists: true,
    });
    assert.deepEqual([d.action, d.reason], ['keep', 'pinned']);
  });

  test('pawl rollback commits (trailers) pin the line', () => {
    const trailers = parseTrailerLines(
      rollbackTrailers({ policy: 'apps/app', old: '1.1.0', new: '1.0.0', reason: 'login broken' }),
    );
    const p = pinFor(input(change('1.1.0', '1.0.0', { trailers })));
    assert.deepEqual([p?.kind, p?.reason], ['rollback', 'login broken']);
    // Who (the commit's author: the person who asked) and why, in the words explain shows.
    const s = pinStatus(input(change('1.1.0', '1.0.0', { trailers })));
    assert.match(s.detail, /by Jane Doe \(pawl rollback\) in c{12} at .*, because: login broken;/);
    const d = decideMarker({
      current: parseMarkerValue('tag', '1.0.0'),
      candidate: { tag: '1.1.0', name: 'ghcr.io/org/app' },
      field: 'tag',
      guard: guard(),
      order: sem.order,
      buildTimeOrder: noBuildTimes,
      pin: p,
      candidateExists: true,
    });
    assert.match(d.detail, /pinned by pawl rollback by Jane Doe .*because: login broken\)/);
  });

  test('a rollback commit pins even where the values cannot be ordered; another policy’s trailers do not', () => {
    const trailers = parseTrailerLines(
      rollbackTrailers({ policy: 'apps/app', old: 'latest', new: 'stable' }),
    );
    assert.equal(pinFor(input(change('latest', 'stable', { trailers })))?.kind, 'rollback');
    const other = parseTrailerLines(rollbackTrailers({ policy: 'apps/other', old: 'latest', new: 'stable' }));
    assert.equal(pinFor(input(change('latest', 'stable', { trailers: other }))), null);
  });

  test('a forward move (SPEC problem 1) needs no pin', () => {
    const s = pinStatus(input(change('1.0.0', '1.2.0')));
    assert.equal(s.state, 'not-backwards');
    assert.equal(s.pin, null);
  });

  test('a new line with an old tag is not a pin (upgraded normally)', () => {
    const s = pinStatus(input(change(null, '0.1.0')));
    assert.equal(s.state, 'added');
    assert.equal(pinFor(input(change(null, '0.1.0'))), null);
  });

  test('a new release first seen after the pinning commit lifts the pin', () => {
    const s = pinStatus(input(change('1.1.0', '1.0.0'), { candidate: '1.2.0', candidateFirstSeen: after }));
    assert.equal(s.state, 'lifted');
    assert.equal(
      pinFor(input(change('1.1.0', '1.0.0'), { candidate: '1.2.0', candidateFirstSeen: after })),
      null,
    );
  });

  test('a tag first seen before the commit does not lift it', () => {
    assert.equal(
      pinStatus(input(change('1.1.0', '1.0.0'), { candidate: '1.2.0', candidateFirstSeen: before })).state,
      'pinned',
    );
    assert.equal(
      pinStatus(input(change('1.1.0', '1.0.0'), { candidate: '1.2.0', candidateFirstSeen: PIN_TIME })).state,
      'pinned',
      'not strictly after',
    );
  });

  test("a tag first seen within the pin's second does not lift it: git keeps a commit's time to the second", () => {
    // The rollback was committed at 12:00:00.900, which git stores as 12:00:00; the tag was
    // first seen at 12:00:00.400, before it.
    const seen = (iso: string) =>
      pinStatus(input(change('1.1.0', '1.0.0'), { candidate: '1.2.0', candidateFirstSeen: new Date(iso) }))
        .state;
    assert.equal(seen('2026-11-10T12:00:00.400Z'), 'pinned');
    assert.equal(seen('2026-11-10T12:00:00.999Z'), 'pinned');
    assert.equal(seen('2026-11-10T12:00:01.000Z'), 'lifted');
  });

  test('tags of the very first scan of an empty state never lift a pin (state deleted → pins stay pinned)', () => {
    const s = pinStatus(
      input(change('1.1.0', '1.0.0'), {
        candidate: '1.2.0',
        candidateFirstSeen: after,
        candidateInitial: true,
      }),
    );
    assert.equal(s.state, 'pinned');
    assert.match(s.detail, /first scan/);
    assert.equal(
      pinStatus(input(change('1.1.0', '1.0.0'), { candidate: '1.2.0', candidateFirstSeen: null })).state,
      'pinned',
    );
  });

  test('pawl release lifts the pin', () => {
    assert.equal(pinStatus(input(change('1.1.0', '1.0.0'), { released: true })).state, 'released');
    assert.equal(pinFor(input(change('1.1.0', '1.0.0'), { released: true })), null);
    assert.ok(isReleaseOf(parseTrailerLines(releaseTrailers(['apps/app'])), 'apps/app'));
  });

  test('manualEdits: Override → no pins', () => {
    assert.equal(pinFor(input(change('1.1.0', '1.0.0'), { manualEdits: 'Override' })), null);
    const trailers = parseTrailerLines(rollbackTrailers({ policy: 'apps/app', old: '1.1.0', new: '1.0.0' }));
    assert.equal(pinFor(input(change('1.1.0', '1.0.0', { trailers }), { manualEdits: 'Override' })), null);
  });

  test('no history → no pin', () => {
    assert.equal(pinStatus(input(null)).state, 'none');
  });

  test('values the policy cannot order are ordered by build time', () => {
    const sm = policyOrder(serviceMain);
    const manual = 'manual-service-main-9b8e7d6-124';
    const auto = 'service-main-3f2a9c1-125';
    const bt = buildTimes({ [manual]: '2026-11-01T00:00:00Z', [auto]: '2026-11-02T00:00:00Z' });
    const p = pinFor(input(change(auto, manual), { order: sm.order, buildTimeOrder: bt }));
    assert.equal(p?.orderedBy, 'build-time');
    assert.equal(
      pinFor(input(change(auto, manual), { order: sm.order })),
      null,
      'unknown build times: not shown to be backwards',
    );
  });

  test('compare: BuildTime orders the move by build time only', () => {
    const bt = buildTimes({ '2.0.0': '2026-01-01T00:00:00Z', '1.0.0': '2026-02-01T00:00:00Z' });
    assert.equal(
      pinFor(input(change('1.0.0', '2.0.0'), { compare: 'BuildTime', buildTimeOrder: bt }))?.orderedBy,
      'build-time',
    );
    assert.equal(
      pinFor(input(change('1.0.0', '2.0.0'), { buildTimeOrder: bt })),
      null,
      'by the policy 2.0.0 is forwards',
    );
  });

  test('whole image references: tags compared; a change of image is not a pin', () => {
    const img = (v: string) =>
      change(`ghcr.io/org/app:${v.split('>')[0]}`, `ghcr.io/org/app:${v.split('>')[1]}`, {
        field: 'image',
        setter: 'apps:app',
      });
    assert.ok(pinFor(input(img('1.1.0>1.0.0'))));
    assert.equal(
      pinFor(
        input(
          change('docker.io/old/app:9.0.0', 'ghcr.io/org/app:1.0.0', { field: 'image', setter: 'apps:app' }),
        ),
      ),
      null,
    );
  });

  test('an equally new move is not a pin: v1.0.0 → 1.0.0, or a digest added to the same tag', () => {
    const spelling = pinStatus(input(change('v1.0.0', '1.0.0')));
    assert.equal(spelling.state, 'not-backwards');
    assert.match(spelling.detail, /kept it equally new/);
    const D = `sha256:${'a'.repeat(64)}`;
    const digestAdded = pinStatus(
      input(
        change('ghcr.io/org/app:1.0.0', `ghcr.io/org/app:1.0.0@${D}`, { field: 'image', setter: 'apps:app' }),
      ),
    );
    assert.equal(digestAdded.state, 'not-backwards');
    assert.match(digestAdded.detail, /kept it equally new/);
  });

  test('a :digest line moved to an older image (by build time) pins; forwards or unknown times do not', () => {
    const OLD = `sha256:${'1'.repeat(64)}`;
    const NEW = `sha256:${'2'.repeat(64)}`;
    const bt = buildTimes({ [OLD]: '2026-10-01T00:00:00Z', [NEW]: '2026-11-01T00:00:00Z' });
    const digest = (previous: string, value: string) =>
      change(previous, value, { field: 'digest', setter: 'apps:app:digest' });
    const back = pinFor(input(digest(NEW, OLD), { buildTimeOrder: bt }));
    assert.ok(back);
    assert.deepEqual([back.value, back.previous, back.orderedBy], [OLD, NEW, 'build-time']);
    assert.equal(pinStatus(input(digest(OLD, NEW), { buildTimeOrder: bt })).state, 'not-backwards');
    assert.equal(
      pinStatus(input(digest(NEW, OLD))).state,
      'not-backwards',
      'no build times: not shown backwards',
    );
  });

  test('policyOfSetter', () => {
    assert.equal(policyOfSetter('apps:app'), 'apps/app');
    assert.equal(policyOfSetter('apps:app:tag'), 'apps/app');
    assert.equal(policyOfSetter('bad'), null);
  });
});
