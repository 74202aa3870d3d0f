import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { decideMarker, candidateValue, type DecideInput } from '../../src/guard/decide.js';
import { parseMarkerValue } from '../../src/guard/values.js';
import type { MarkerField, Pin } from '../../src/guard/types.js';
import { buildTimes, guard, noBuildTimes, policyOrder, release, semver, serviceMain } from './helpers.js';

const IMG = 'ghcr.io/org/app';
const sem = policyOrder(semver());

function input(
  field: MarkerField,
  value: string,
  candidateTag: string | null,
  over: Partial<DecideInput> = {},
): DecideInput {
  return {
    current: parseMarkerValue(field, value),
    candidate: candidateTag === null ? null : { tag: candidateTag, name: IMG },
    field,
    guard: guard(),
    order: sem.order,
    buildTimeOrder: noBuildTimes,
    pin: null,
    candidateExists: true,
    orderLabel: 'semver',
    ...over,
  };
}

const pin: Pin = {
  value: 'ghcr.io/org/app:1.0.0',
  previous: 'ghcr.io/org/app:1.1.0',
  commit: 'a'.repeat(40),
  author: { name: 'Jane Doe', email: 'jane@example.com' },
  time: new Date('2026-11-01T10:00:00Z'),
  subject: 'roll back',
  kind: 'manual',
  orderedBy: 'policy',
};

describe('decision table (SPEC §4), row by row, in order', () => {
  test('1. no candidate → keep no-candidate', () => {
    const d = decideMarker(input('image', `${IMG}:1.0.0`, null));
    assert.deepEqual([d.action, d.reason], ['keep', 'no-candidate']);
    assert.match(d.detail, /1\.0\.0/);
  });

  test('1 before 2: no candidate wins even over a pin or a missing candidate', () => {
    const d = decideMarker(input('image', `${IMG}:1.0.0`, null, { pin, candidateExists: false }));
    assert.equal(d.reason, 'no-candidate');
  });

  test('2. V equals C → keep up-to-date (also for the other spelling of a Docker Hub name)', () => {
    assert.equal(decideMarker(input('image', `${IMG}:1.2.3`, '1.2.3')).reason, 'up-to-date');
    assert.equal(decideMarker(input('tag', '1.2.3', '1.2.3')).reason, 'up-to-date');
    const hub = decideMarker({
      ...input('image', 'nginx:1.2.3', '1.2.3'),
      candidate: { tag: '1.2.3', name: 'docker.io/library/nginx' },
    });
    assert.equal(hub.reason, 'up-to-date');
  });

  test('2 before 3: a pinned line that already holds the candidate is up to date', () => {
    assert.equal(decideMarker(input('image', `${IMG}:1.0.0`, '1.0.0', { pin })).reason, 'up-to-date');
  });

  test('3. pinned, and C not a new release → keep pinned, naming the commit and author', () => {
    const d = decideMarker(input('image', `${IMG}:1.0.0`, '1.1.0', { pin }));
    assert.deepEqual([d.action, d.reason], ['keep', 'pinned']);
    assert.match(d.detail, /Jane Doe/);
    assert.match(d.detail, /aaaaaaaaaaaa/);
    assert.match(d.detail, /1\.1\.0/);
  });

  test('3 before 4: a pin is checked before the order (the candidate is newer than the pin)', () => {
    assert.equal(
      decideMarker(input('tag', '1.0.0', '2.0.0', { pin, candidateExists: false })).reason,
      'pinned',
    );
  });

  test('4. V newer than C → keep downgrade-blocked, naming both values and the order', () => {
    const d = decideMarker(input('image', `${IMG}:1.3.0`, '1.2.0'));
    assert.deepEqual([d.action, d.reason, d.orderedBy], ['keep', 'downgrade-blocked', 'policy']);
    assert.match(d.detail, /1\.3\.0/);
    assert.match(d.detail, /1\.2\.0/);
    assert.match(d.detail, /semver/);
  });

  test('4 before 7: a blocked downgrade does not need the candidate to exist', () => {
    assert.equal(
      decideMarker(input('tag', '1.3.0', '1.2.0', { candidateExists: false })).reason,
      'downgrade-blocked',
    );
  });

  test('5. V and C equally new (1.0.0 vs v1.0.0) → keep equivalent', () => {
    const d = decideMarker(input('tag', 'v1.0.0', '1.0.0'));
    assert.deepEqual([d.action, d.reason], ['keep', 'equivalent']);
  });

  test('6. V cannot be ordered by the policy and build times cannot be read → keep undecidable', () => {
    const d = decideMarker(input('tag', 'latest', '1.0.0'));
    assert.deepEqual([d.action, d.reason], ['keep', 'undecidable']);
    assert.match(d.detail, /latest/);
  });

  test('6′. V cannot be ordered by the policy → build times decide', () => {
    const bt = buildTimes({
      latest: '2026-01-02T00:00:00Z',
      '1.0.0': '2026-01-01T00:00:00Z',
      '2.0.0': '2026-01-03T00:00:00Z',
    });
    const older = decideMarker(input('tag', 'latest', '1.0.0', { buildTimeOrder: bt }));
    assert.deepEqual([older.reason, older.orderedBy], ['downgrade-blocked', 'build-time']);
    assert.match(older.detail, /build time/);
    const newer = decideMarker(input('tag', 'latest', '2.0.0', { buildTimeOrder: bt }));
    assert.deepEqual([newer.action, newer.reason, newer.orderedBy], ['write', 'upgrade', 'build-time']);
  });

  test('7. C does not exist in the registry now → keep candidate-missing', () => {
    const d = decideMarker(input('tag', '1.0.0', '1.1.0', { candidateExists: false }));
    assert.deepEqual([d.action, d.reason], ['keep', 'candidate-missing']);
  });

  test('7′. not checked yet → write, but flagged for the HEAD before writing', () => {
    const d = decideMarker(input('tag', '1.0.0', '1.1.0', { candidateExists: null }));
    assert.deepEqual([d.action, d.reason, d.needsCandidateCheck], ['write', 'upgrade', true]);
  });

  test('7″. verifyCandidate: false → no HEAD needed, and a missing candidate is not consulted', () => {
    const d = decideMarker(
      input('tag', '1.0.0', '1.1.0', { candidateExists: null, guard: guard({ verifyCandidate: false }) }),
    );
    assert.deepEqual([d.action, d.reason, d.needsCandidateCheck], ['write', 'upgrade', undefined]);
  });

  test('8. otherwise → write upgrade', () => {
    const d = decideMarker(input('image', `${IMG}:1.0.0`, '1.1.0'));
    assert.deepEqual([d.action, d.reason, d.orderedBy], ['write', 'upgrade', 'policy']);
    assert.match(d.detail, /1\.1\.0.*newer.*1\.0\.0/);
  });
});

describe('compare: BuildTime', () => {
  const bt = buildTimes({ '2.0.0': '2026-01-01T00:00:00Z', '1.0.0': '2026-02-01T00:00:00Z' });
  test('orders by build time even where the policy could order', () => {
    // By semver 2.0.0 is newer; by build time 1.0.0 (a rebuilt hotfix) is.
    const d = decideMarker(
      input('tag', '2.0.0', '1.0.0', { guard: guard({ compare: 'BuildTime' }), buildTimeOrder: bt }),
    );
    assert.deepEqual([d.action, d.reason, d.orderedBy], ['write', 'upgrade', 'build-time']);
  });
  test('unknown build times → undecidable, never the policy order', () => {
    const d = decideMarker(input('tag', '1.0.0', '2.0.0', { guard: guard({ compare: 'BuildTime' }) }));
    assert.equal(d.reason, 'undecidable');
  });
});

describe('SPEC §1 story 1: a manual newer tag is not overwritten', () => {
  const sm = policyOrder(serviceMain);
  const cand = 'service-main-3f2a9c1-123';
  test('the person’s tag passes the filter (the last scan predates it) → downgrade-blocked by the policy order', () => {
    const d = decideMarker(
      input('tag', 'service-main-9b8e7d6-124', cand, { order: sm.order, orderLabel: 'numerical on $ts' }),
    );
    assert.deepEqual([d.action, d.reason, d.orderedBy], ['keep', 'downgrade-blocked', 'policy']);
    assert.match(d.detail, /service-main-9b8e7d6-124/);
    assert.match(d.detail, /service-main-3f2a9c1-123/);
  });
  test('manual-service-main-<sha>-124: only build times can order it → downgrade-blocked by build time', () => {
    const manual = 'manual-service-main-9b8e7d6-124';
    assert.equal(sm.order(manual, cand), null, 'the policy cannot order the manual tag');
    const bt = buildTimes({ [manual]: '2026-11-02T12:00:00Z', [cand]: '2026-11-02T11:00:00Z' });
    const d = decideMarker(input('image', `${IMG}:${manual}`, cand, { order: sm.order, buildTimeOrder: bt }));
    assert.deepEqual([d.action, d.reason, d.orderedBy], ['keep', 'downgrade-blocked', 'build-time']);
    assert.match(d.detail, /cannot be ordered by/);
  });
  test('… and when the registry has no build times, it is kept as undecidable, not overwritten', () => {
    const d = decideMarker(
      input('image', `${IMG}:manual-service-main-9b8e7d6-124`, cand, { order: sm.order }),
    );
    assert.deepEqual([d.action, d.reason], ['keep', 'undecidable']);
  });
  test('with downgrades: Allow it is overwritten, as Flux does', () => {
    const d = decideMarker(
      input('tag', 'service-main-9b8e7d6-124', cand, {
        order: sm.order,
        guard: guard({ downgrades: 'Allow' }),
      }),
    );
    assert.deepEqual([d.action, d.reason], ['write', 'upgrade']);
    assert.match(d.detail, /Allow/);
  });
});

describe('SPEC §1 story 2: a stale candidate is never written over the current release', () => {
  const r = policyOrder(release);
  test('release-3caa31f4-1651535374 over release-07ef7c53-1655866680 → downgrade-blocked', () => {
    const d = decideMarker(
      input('tag', 'release-07ef7c53-1655866680', 'release-3caa31f4-1651535374', { order: r.order }),
    );
    assert.deepEqual([d.action, d.reason], ['keep', 'downgrade-blocked']);
  });
});

describe('downgrades: Allow (only rows 1, 2, candidate-missing and upgrade)', () => {
  const allow = guard({ downgrades: 'Allow' });
  test('Flux’s DOWNGRADE case: 6.7.1 → 6.7.0 after an exclusion is written; blocked by default', () => {
    const p = policyOrder(
      {
        policy: { strategy: 'semver', range: '6.7.x' },
        filterTags: { pattern: '^6\\.7\\.\\d+$', extract: '' },
      },
      ['^6\\.7\\.1$'],
    );
    const c = p.select(['6.7.0', '6.7.1']);
    assert.equal(c, '6.7.0');
    const base = input('image', `${IMG}:6.7.1`, c, { order: p.order });
    assert.deepEqual(
      [decideMarker({ ...base, guard: allow }).action, decideMarker({ ...base, guard: allow }).reason],
      ['write', 'upgrade'],
    );
    assert.equal(decideMarker(base).reason, 'downgrade-blocked');
  });
  test('no pins, no equivalence, no undecidable', () => {
    assert.equal(decideMarker(input('tag', '1.0.0', '1.1.0', { guard: allow, pin })).action, 'write');
    assert.equal(decideMarker(input('tag', 'v1.0.0', '1.0.0', { guard: allow })).action, 'write');
    assert.equal(decideMarker(input('tag', 'latest', '1.0.0', { guard: allow })).action, 'write');
  });
  test('rows 1, 2 and candidate-missing still apply', () => {
    assert.equal(decideMarker(input('tag', '1.0.0', null, { guard: allow })).reason, 'no-candidate');
    assert.equal(decideMarker(input('tag', '1.0.0', '1.0.0', { guard: allow })).reason, 'up-to-date');
    assert.equal(
      decideMarker(input('tag', '2.0.0', '1.0.0', { guard: allow, candidateExists: false })).reason,
      'candidate-missing',
    );
  });
});

describe('manualEdits: Override ignores a pin handed in', () => {
  test('writes the upgrade', () => {
    assert.equal(
      decideMarker(input('tag', '1.0.0', '1.1.0', { pin, guard: guard({ manualEdits: 'Override' }) })).reason,
      'upgrade',
    );
  });
});

describe('retarget: a marker naming another image', () => {
  test('is rewritten to the policy’s image, whatever the tags say', () => {
    const d = decideMarker(input('image', 'docker.io/old/app:9.9.9', '1.0.0'));
    assert.deepEqual([d.action, d.reason], ['write', 'retarget']);
    assert.match(d.detail, /docker\.io\/old\/app/);
    assert.match(d.detail, /ghcr\.io\/org\/app:1\.0\.0/);
  });
  test('still needs the candidate to exist', () => {
    assert.equal(
      decideMarker(input('image', 'docker.io/old/app:1.0.0', '1.0.0', { candidateExists: false })).reason,
      'candidate-missing',
    );
  });
  test('a :name line with another name is retargeted; with the same name it is up to date', () => {
    assert.equal(decideMarker(input('name', 'docker.io/old/app', '1.0.0')).reason, 'retarget');
    assert.equal(decideMarker(input('name', IMG, '1.0.0')).reason, 'up-to-date');
  });
  test('a :tag line paired with a name line of another image is retargeted too', () => {
    const i = input('tag', '9.0.0', '1.0.0');
    const d = decideMarker({ ...i, current: { ...i.current, name: 'docker.io/old/app' } });
    assert.equal(d.reason, 'retarget');
  });
});

describe(':name and :digest markers', () => {
  const digA = 'sha256:' + 'a'.repeat(64);
  const digB = 'sha256:' + 'b'.repeat(64);
  test(':name lines carry no version: the same image is up to date even when the tag line is blocked', () => {
    assert.equal(decideMarker(input('name', 'ghcr.io/org/app', '0.1.0')).reason, 'up-to-date');
  });
  test(':digest with the policy reflecting no digest → no-candidate', () => {
    assert.equal(decideMarker(input('digest', digA, '1.0.0')).reason, 'no-candidate');
  });
  test(':digest paired with its tag: decided on the tags', () => {
    const i = input('digest', digA, '1.0.0');
    const blocked = decideMarker({
      ...i,
      current: { ...i.current, tag: '2.0.0' },
      candidate: { tag: '1.0.0', name: IMG, digest: digB },
    });
    assert.equal(blocked.reason, 'downgrade-blocked');
    const up = decideMarker({
      ...i,
      current: { ...i.current, tag: '0.9.0' },
      candidate: { tag: '1.0.0', name: IMG, digest: digB },
    });
    assert.deepEqual([up.action, up.reason], ['write', 'upgrade']);
  });
  test(':digest without a paired tag: decided on the digests’ build times', () => {
    const i = input('digest', digA, '1.0.0');
    const cand = { tag: '1.0.0', name: IMG, digest: digB };
    const older = decideMarker({
      ...i,
      candidate: cand,
      buildTimeOrder: buildTimes({ [digA]: '2026-02-01T00:00:00Z', [digB]: '2026-01-01T00:00:00Z' }),
    });
    assert.equal(older.reason, 'downgrade-blocked');
    const newer = decideMarker({
      ...i,
      candidate: cand,
      buildTimeOrder: buildTimes({ [digA]: '2026-01-01T00:00:00Z', [digB]: '2026-02-01T00:00:00Z' }),
    });
    assert.equal(newer.reason, 'upgrade');
    assert.equal(decideMarker({ ...i, candidate: cand }).reason, 'undecidable');
    assert.equal(decideMarker({ ...i, candidate: { ...cand, digest: digA } }).reason, 'up-to-date');
  });
  test('image with digest: a re-pushed tag refreshes the digest unless build times say it went back', () => {
    const cur = `${IMG}:1.0.0@${digA}`;
    const cand = { tag: '1.0.0', name: IMG, digest: digB };
    const i = input('image', cur, '1.0.0');
    const refresh = decideMarker({ ...i, candidate: cand });
    assert.deepEqual([refresh.action, refresh.reason], ['write', 'upgrade']);
    const back = decideMarker({
      ...i,
      candidate: cand,
      buildTimeOrder: buildTimes({ [digA]: '2026-02-01T00:00:00Z', [digB]: '2026-01-01T00:00:00Z' }),
    });
    assert.equal(back.reason, 'downgrade-blocked');
    assert.equal(decideMarker({ ...i, candidate: { ...cand, digest: digA } }).reason, 'up-to-date');
  });
  test('candidateValue writes what Flux’s setters write', () => {
    const c = { tag: '1.0.0', name: IMG, digest: digA };
    assert.equal(candidateValue('image', c), `${IMG}:1.0.0@${digA}`);
    assert.equal(candidateValue('image', { tag: '1.0.0', name: IMG }), `${IMG}:1.0.0`);
    assert.equal(candidateValue('tag', c), '1.0.0');
    assert.equal(candidateValue('name', c), IMG);
    assert.equal(candidateValue('digest', c), digA);
  });
});

describe('parseMarkerValue', () => {
  test('a registry port is not a tag', () => {
    assert.deepEqual(parseMarkerValue('image', 'localhost:5000/app'), {
      value: 'localhost:5000/app',
      name: 'localhost:5000/app',
      tag: null,
      digest: null,
    });
    assert.deepEqual(parseMarkerValue('image', 'localhost:5000/app:1.0@sha256:x'), {
      value: 'localhost:5000/app:1.0@sha256:x',
      name: 'localhost:5000/app',
      tag: '1.0',
      digest: 'sha256:x',
    });
  });
});

describe('a marked value that is not an image reference is kept, never retargeted', () => {
  const bad: [MarkerField, string][] = [
    ['image', `${IMG}:../../x`],
    ['image', `${IMG}:1.0.0\nimage: evil`],
    ['image', `${IMG}:a b`],
    ['image', `${IMG}:${'x'.repeat(129)}`],
    ['image', `${IMG}:1.0.0@not-a-digest`],
    ['tag', '-1.0.0'],
    ['name', 'ghcr.io/Org/App'],
    ['digest', 'sha256:xyz'],
  ];
  for (const [field, value] of bad) {
    test(`${field} ${JSON.stringify(value)} → keep invalid-value (Block and Allow)`, () => {
      for (const downgrades of ['Block', 'Allow'] as const) {
        const d = decideMarker({
          ...input(field, value, '1.2.3', { guard: guard({ downgrades }) }),
          candidate: { tag: '1.2.3', name: IMG, digest: `sha256:${'a'.repeat(64)}` },
        });
        assert.deepEqual([d.action, d.reason], ['keep', 'invalid-value'], `${downgrades}: ${d.detail}`);
        assert.match(d.detail, /is not a valid/);
      }
    });
  }

  test('valid values of every field still go through the table', () => {
    assert.equal(decideMarker(input('image', `${IMG}:1.0.0`, '1.2.3')).reason, 'upgrade');
    assert.equal(decideMarker(input('image', 'localhost:5000/org/app:1.0.0', '1.2.3')).reason, 'retarget');
    assert.equal(decideMarker(input('tag', '1.0.0', '1.2.3')).reason, 'upgrade');
    assert.equal(
      decideMarker(input('image', '', '1.2.3')).action,
      'write',
      'an empty line receives the candidate',
    );
  });
});

describe('a tag-less name@digest value under alphabetical and numerical policies', () => {
  const D = `sha256:${'d'.repeat(64)}`;
  const policies = {
    alphabetical: policyOrder({ policy: { strategy: 'alphabetical', order: 'asc' } }),
    numerical: policyOrder({ policy: { strategy: 'numerical', order: 'asc' } }),
  };
  for (const [label, p] of Object.entries(policies)) {
    const tag = label === 'alphabetical' ? 'v2' : '20';
    const at = (over: Partial<DecideInput>) =>
      decideMarker({ ...input('image', `${IMG}@${D}`, tag), order: p.order, orderLabel: label, ...over });

    test(`${label}: the digest is never ordered as if it were a tag; build times decide`, () => {
      const unknown = at({});
      assert.equal(unknown.reason, 'undecidable', unknown.detail);
      const older = at({
        buildTimeOrder: buildTimes({ [D]: '2026-01-01T00:00:00Z', [tag]: '2026-02-01T00:00:00Z' }),
      });
      assert.deepEqual([older.action, older.reason, older.orderedBy], ['write', 'upgrade', 'build-time']);
      const newer = at({
        buildTimeOrder: buildTimes({ [D]: '2026-03-01T00:00:00Z', [tag]: '2026-02-01T00:00:00Z' }),
      });
      assert.deepEqual(
        [newer.action, newer.reason, newer.orderedBy],
        ['keep', 'downgrade-blocked', 'build-time'],
      );
    });
  }
});
