import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  ratchetStep,
  runRatchet,
  policySpecHash,
  toStored,
  fromStored,
  type RatchetState,
} from '../../src/guard/ratchet.js';
import { decideMarker } from '../../src/guard/decide.js';
import { parseMarkerValue } from '../../src/guard/values.js';
import type { GuardSpec } from '../../src/config/types.js';
import type { GuardEvent } from '../../src/guard/types.js';
import { guard, noBuildTimes, policyOrder, release, semver } from './helpers.js';

const sem = policyOrder(semver());
const MIN = 60_000;
const t0 = Date.parse('2026-11-30T00:00:00Z');
const at = (m: number) => new Date(t0 + m * MIN);
const SPEC = policySpecHash({ imageRepositoryRef: { namespace: 'apps', name: 'app' }, ...semver() }, [
  '^.*\\.sig$',
]);

/** One scan through the ratchet with a registry that answers HEAD from `existing`. */
async function scan(
  state: RatchetState | null,
  selected: string | null,
  now: Date,
  existing: Set<string>,
  g: GuardSpec = guard(),
  scanOk = true,
  order = sem.order,
) {
  const heads: string[] = [];
  const r = await runRatchet(
    { state, specHash: SPEC, selected, scanOk, now, guard: g, order },
    async (tag) => {
      heads.push(tag);
      return existing.has(tag);
    },
  );
  return { ...r, asked: heads };
}

describe('selection ratchet', () => {
  test('a first selection becomes H once HEAD confirms it', async () => {
    const r = await scan(null, '1.0.0', at(0), new Set(['1.0.0']));
    assert.equal(r.candidate, '1.0.0');
    assert.equal(r.state.highWater, '1.0.0');
    assert.deepEqual(r.asked, ['1.0.0']);
  });

  test('two-phase: the pure step asks for the HEAD and decides nothing until answered', () => {
    const first = ratchetStep({
      state: null,
      specHash: SPEC,
      selected: '1.0.0',
      scanOk: true,
      now: at(0),
      guard: guard(),
      order: sem.order,
      highWaterExists: null,
    });
    assert.deepEqual(
      [first.needHeadOfSelected, first.needHeadOfHighWater, first.candidate],
      [true, false, null],
    );
    const second = ratchetStep({
      state: null,
      specHash: SPEC,
      selected: '1.0.0',
      scanOk: true,
      now: at(0),
      guard: guard(),
      order: sem.order,
      highWaterExists: null,
      selectedExists: true,
    });
    assert.deepEqual(
      [second.needHeadOfSelected, second.candidate, second.state.highWater],
      [false, '1.0.0', '1.0.0'],
    );
  });

  test('a selection listed but not there (HEAD 404) does not raise H and yields no candidate', async () => {
    const h = (await scan(null, '1.0.0', at(0), new Set(['1.0.0']))).state;
    const r = await scan(h, '1.1.0', at(5), new Set(['1.0.0']));
    assert.equal(r.candidate, null);
    assert.equal(r.state.highWater, '1.0.0');
  });

  test('selection ≥ H: candidate = selection, H rises; the same selection needs no HEAD', async () => {
    let s = (await scan(null, '1.0.0', at(0), new Set(['1.0.0', '1.1.0']))).state;
    const up = await scan(s, '1.1.0', at(5), new Set(['1.0.0', '1.1.0']));
    assert.equal(up.candidate, '1.1.0');
    assert.equal(up.state.highWater, '1.1.0');
    s = up.state;
    const again = await scan(s, '1.1.0', at(10), new Set());
    assert.equal(again.candidate, '1.1.0');
    assert.deepEqual(again.asked, []);
  });

  test('selection < H and H still exists: a stale list, H is kept and a stale-scan recorded', async () => {
    const s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']))).state;
    const r = await scan(s, '1.0.0', at(5), new Set(['1.0.0', '2.0.0']));
    assert.equal(r.candidate, '2.0.0');
    assert.equal(r.state.highWater, '2.0.0');
    assert.deepEqual(r.events, [
      { kind: 'stale-scan', selected: '1.0.0', highWater: '2.0.0', highWaterExists: true },
    ]);
  });

  test('selection < H and H gone: no candidate until `confirmations` agreeing scans spanning `window`', async () => {
    const g = guard({ staleScan: { confirmations: 3, window: 15 * MIN } });
    let s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']), g)).state;
    const gone = new Set(['1.0.0']);
    const events: GuardEvent[] = [];
    const step = async (m: number, sel = '1.0.0') => {
      const r = await scan(s, sel, at(m), gone, g);
      s = r.state;
      events.push(...r.events);
      return r.candidate;
    };
    assert.equal(await step(1), null);
    assert.equal(await step(2), null);
    assert.equal(await step(3), null, 'three scans, but only 2 minutes apart');
    assert.equal(s.pending?.count, 3);
    assert.equal(await step(3), null, 'the same scan stepped twice is counted once');
    assert.equal(s.pending?.count, 3);
    assert.equal(await step(16), '1.0.0', 'four scans over 15 minutes');
    assert.equal(s.highWater, '1.0.0');
    assert.equal(s.pending, null);
    assert.equal(events.at(-1)?.kind, 'regression-accepted');
    assert.deepEqual(
      events.slice(0, 3).map((e) => e.kind),
      ['stale-scan', 'stale-scan', 'stale-scan'],
    );
  });

  test('scans that disagree restart the count; a failed scan breaks the row', async () => {
    const g = guard({ staleScan: { confirmations: 2, window: 0 } });
    let s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']), g)).state;
    const gone = new Set<string>();
    s = (await scan(s, '1.0.0', at(1), gone, g)).state;
    const other = await scan(s, '1.5.0', at(2), gone, g);
    assert.equal(other.candidate, null);
    assert.deepEqual([other.state.pending?.candidate, other.state.pending?.count], ['1.5.0', 1]);
    s = (await scan(other.state, null, at(3), gone, g, false)).state;
    assert.equal(s.pending, null);
    assert.equal(s.highWater, '2.0.0');
    const r = await scan(s, '1.5.0', at(4), gone, g);
    assert.equal(r.candidate, null);
    assert.equal((await scan(r.state, '1.5.0', at(5), gone, g)).candidate, '1.5.0');
  });

  test('the pending regression resets when H is selected again: scans not in a row never add up', async () => {
    const g = guard({ staleScan: { confirmations: 2, window: 0 } });
    let s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']), g)).state;
    const gone = new Set<string>();
    s = (await scan(s, '1.0.0', at(1), gone, g)).state;
    assert.equal(s.pending?.count, 1);
    // H listed and selected again (no HEAD needed): the row of agreeing scans is broken.
    const again = await scan(s, '2.0.0', at(2), gone, g);
    assert.equal(again.candidate, '2.0.0');
    assert.equal(again.state.pending, null);
    const r = await scan(again.state, '1.0.0', at(3), gone, g);
    assert.equal(r.candidate, null, 'one scan since the break is not two in a row');
    assert.equal(r.state.pending?.count, 1);
  });

  test('the pending regression resets when the HEAD of H succeeds again', async () => {
    const g = guard({ staleScan: { confirmations: 2, window: 0 } });
    let s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']), g)).state;
    s = (await scan(s, '1.0.0', at(1), new Set(), g)).state;
    assert.equal(s.pending?.count, 1);
    // The same regression selected, but H answers HEAD this time: a stale list, not a loss.
    const back = await scan(s, '1.0.0', at(2), new Set(['2.0.0']), g);
    assert.equal(back.candidate, '2.0.0');
    assert.equal(back.state.pending, null);
    const r = await scan(back.state, '1.0.0', at(3), new Set(), g);
    assert.equal(r.candidate, null, 'one scan since H was seen is not two in a row');
    assert.equal(r.state.pending?.count, 1);
  });

  test('an empty list, a failed scan or no selection never yields a candidate and keep H', async () => {
    const s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']))).state;
    for (const [sel, ok] of [
      [null, true],
      [null, false],
      ['3.0.0', false],
    ] as const) {
      const r = await scan(s, sel, at(1), new Set(['3.0.0']), guard(), ok);
      assert.equal(r.candidate, null);
      assert.deepEqual(r.state, s);
      assert.deepEqual(r.asked, []);
    }
  });

  test("the spec hash is the same as stores hold: a change of it would reset every policy's high-water mark", () => {
    // Values of pawl 0.1's hashes: a store written then must read the same specs as unchanged.
    const hash = (spec: object, exclusions: string[]) => policySpecHash(spec as never, exclusions);
    assert.equal(
      hash(
        { imageRepositoryRef: { namespace: 'apps', name: 'app' }, policy: { semver: { range: '>=1.0.0' } } },
        ['^.*\\.sig$'],
      ),
      '87513a336692e64d7b296ce5f442d18e69ca7861cc2baa8cd4df9782307887fb',
    );
    assert.equal(
      hash(
        {
          imageRepositoryRef: { namespace: 'apps', name: 'app' },
          policy: { numerical: { order: 'asc' } },
          filterTags: { pattern: '^main-[a-f0-9]+-(?P<ts>[0-9]+)', extract: '$ts' },
        },
        [],
      ),
      '880fbfd08e4b5fd151febb207f842e0eb2bf8a5581ea70d95b41fedc3eb67d49',
    );
    assert.equal(
      hash(
        {
          imageRepositoryRef: { name: 'zé', namespace: 'Ä' },
          policy: { alphabetical: { order: 'desc' } },
          filterTags: undefined,
        },
        ['^a$', '^b$'],
      ),
      '0b0643c46655e98fec8079bfbe2cc72b880b7d32b22273a9fe5a3a5412565a09',
    );
  });

  test('H resets when the spec hash changes (policy spec or exclusionList)', async () => {
    const s = (await scan(null, '6.7.1', at(0), new Set(['6.7.0', '6.7.1']))).state;
    const spec = {
      imageRepositoryRef: { namespace: 'apps', name: 'app' },
      policy: { strategy: 'semver' as const, range: '6.7.x' },
      filterTags: { pattern: '^6\\.7\\.\\d+$', extract: '' },
    };
    const before = policySpecHash(spec, ['^.*\\.sig$']);
    const after = policySpecHash(spec, ['^.*\\.sig$', '^6\\.7\\.1$']);
    assert.notEqual(before, after);
    assert.equal(
      policySpecHash({ ...spec, filterTags: { extract: '', pattern: '^6\\.7\\.\\d+$' } }, ['^.*\\.sig$']),
      before,
      'key order does not matter',
    );
    assert.notEqual(
      policySpecHash({ ...spec, policy: { strategy: 'semver', range: '6.x' } }, ['^.*\\.sig$']),
      before,
    );
    const r = await runRatchet(
      {
        state: { ...s, specHash: before },
        specHash: after,
        selected: '6.7.0',
        scanOk: true,
        now: at(1),
        guard: guard(),
        order: sem.order,
      },
      async () => true,
    );
    assert.equal(r.candidate, '6.7.0', 'the excluded 6.7.1 no longer holds the selection back');
    assert.deepEqual([r.state.specHash, r.state.highWater], [after, '6.7.0']);
    assert.deepEqual(r.events, []);
  });

  test('downgrades: Allow turns the ratchet off (Flux behaviour): no HEADs, the selection is the candidate', async () => {
    const allow = guard({ downgrades: 'Allow' });
    const s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']), allow)).state;
    const r = await scan(s, '1.0.0', at(1), new Set(['2.0.0']), allow);
    assert.equal(r.candidate, '1.0.0');
    assert.deepEqual(r.asked, []);
    assert.deepEqual(r.events, []);
  });

  test('verifyCandidate: false raises H on the listing alone', async () => {
    const r = await scan(null, '1.0.0', at(0), new Set(), guard({ verifyCandidate: false }));
    assert.deepEqual([r.candidate, r.state.highWater, r.asked], ['1.0.0', '1.0.0', []]);
  });

  test('stored form round-trips', async () => {
    const g = guard({ staleScan: { confirmations: 5, window: 0 } });
    let s = (await scan(null, '2.0.0', at(0), new Set(['2.0.0']), g)).state;
    s = (await scan(s, '1.0.0', at(1), new Set(), g)).state;
    assert.deepEqual(fromStored(JSON.parse(JSON.stringify(toStored(s)))), s);
  });
});

describe('scenarios through ratchet and decision', () => {
  /** One run: ratchet, then the decision for one `:tag` marker; returns the written value or null. */
  async function run(
    file: { value: string },
    state: RatchetState | null,
    selected: string | null,
    now: Date,
    existing: Set<string>,
    g: GuardSpec,
    order = sem.order,
  ) {
    const r = await runRatchet(
      { state, specHash: SPEC, selected, scanOk: selected !== null, now, guard: g, order },
      async (t) => existing.has(t),
    );
    const d = decideMarker({
      current: parseMarkerValue('tag', file.value),
      candidate: r.candidate === null ? null : { tag: r.candidate, name: 'ghcr.io/org/app' },
      field: 'tag',
      guard: g,
      order,
      buildTimeOrder: noBuildTimes,
      pin: null,
      candidateExists: r.candidate === null ? null : existing.has(r.candidate),
    });
    let wrote: string | null = null;
    if (d.action === 'write') file.value = wrote = r.candidate!;
    return { state: r.state, wrote, decision: d, events: r.events };
  }

  test('flip-flop: a list alternating between two versions for ten scans → one write, the upgrade', async () => {
    const file = { value: '1.0.0' };
    const existing = new Set(['1.0.0', '1.1.0']);
    let state: RatchetState | null = null;
    const writes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await run(file, state, i % 2 === 0 ? '1.1.0' : '1.0.0', at(i * 5), existing, guard());
      state = r.state;
      if (r.wrote) writes.push(r.wrote);
    }
    assert.deepEqual(writes, ['1.1.0']);
    assert.equal(file.value, '1.1.0');
  });

  test('flip-flop starting on the stale side, with no state: no write at all once 1.1.0 is in the file', async () => {
    const file = { value: '1.1.0' };
    let state: RatchetState | null = null;
    const writes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await run(
        file,
        state,
        i % 2 === 0 ? '1.0.0' : '1.1.0',
        at(i * 5),
        new Set(['1.0.0', '1.1.0']),
        guard(),
      );
      state = r.state;
      if (r.wrote) writes.push(r.wrote);
    }
    assert.deepEqual(writes, []);
  });

  test('flip-flop with downgrades: Allow writes every time, as Flux does', async () => {
    const file = { value: '1.0.0' };
    let state: RatchetState | null = null;
    let writes = 0;
    for (let i = 0; i < 10; i++) {
      const r = await run(
        file,
        state,
        i % 2 === 0 ? '1.1.0' : '1.0.0',
        at(i * 5),
        new Set(['1.0.0', '1.1.0']),
        guard({ downgrades: 'Allow' }),
      );
      state = r.state;
      if (r.wrote) writes++;
    }
    assert.equal(writes, 10);
  });

  test('story 2: stale lists holding the deleted release-3caa31f4, then recovery → zero writes, stale scans recorded; also with the state deleted mid-episode', async () => {
    const rel = policyOrder(release);
    const current = 'release-07ef7c53-1655866680';
    const stale = 'release-3caa31f4-1651535374';
    const existing = new Set([current]); // the stale tag was deleted from the registry
    for (const deleteStateAt of [-1, 2]) {
      const file = { value: current };
      let state: RatchetState | null = (await run(file, null, current, at(0), existing, guard(), rel.order))
        .state;
      const events: GuardEvent[] = [];
      const writes: string[] = [];
      const lists = [stale, stale, stale, stale, stale, current, current];
      for (let i = 0; i < lists.length; i++) {
        if (i === deleteStateAt) state = null;
        const r = await run(file, state, lists[i]!, at(1 + i), existing, guard(), rel.order);
        state = r.state;
        events.push(...r.events);
        if (r.wrote) writes.push(r.wrote);
        assert.notEqual(r.decision.action, 'write');
      }
      assert.deepEqual(writes, []);
      assert.equal(file.value, current);
      assert.ok(events.filter((e) => e.kind === 'stale-scan').length >= (deleteStateAt < 0 ? 5 : 2));
      assert.equal(state?.highWater, current);
    }
  });

  test('story 2 when the deleted tag still answers HEAD and the state is gone: the decision blocks the downgrade', async () => {
    const rel = policyOrder(release);
    const file = { value: 'release-07ef7c53-1655866680' };
    const r = await run(
      file,
      null,
      'release-3caa31f4-1651535374',
      at(0),
      new Set(['release-3caa31f4-1651535374', 'release-07ef7c53-1655866680']),
      guard(),
      rel.order,
    );
    assert.equal(r.wrote, null);
    assert.equal(r.decision.reason, 'downgrade-blocked');
  });
});
