/**
 * The time gates (SPEC §9, docs/gates.md): `guard.window` and `guard.minimumAge`, on an injected
 * clock. A gate only turns a write into a keep; it never picks an older image.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decideMarker, type DecideInput } from '../../src/guard/decide.js';
import { windowGate, windowState } from '../../src/guard/gates.js';
import { parseMarkerValue } from '../../src/guard/values.js';
import { imagePolicySchema } from '../../src/config/schema/imagepolicy.js';
import { imageRepositorySchema } from '../../src/config/schema/imagerepository.js';
import type { Config } from '../../src/config/index.js';
import type { ScanClients } from '../../src/scan/index.js';
import { FactsBook, evaluatePolicy, type PolicyStore } from '../../src/run/policies.js';
import { planTree } from '../../src/run/plan.js';
import { parseCron } from '../../src/util/index.js';
import { guard, noBuildTimes, policyOrder, semver } from './helpers.js';
import { createLogger } from '../../src/util/index.js';

const IMG = 'ghcr.io/org/app';
const sem = policyOrder(semver());
const BERLIN = { schedule: '0 9 * * 1-5', timeZone: 'Europe/Berlin', duration: 8 * 3_600_000 };

function input(value: string, tag: string, over: Partial<DecideInput> = {}): DecideInput {
  return {
    current: parseMarkerValue('image', value),
    candidate: { tag, name: IMG },
    field: 'image',
    guard: guard(),
    order: sem.order,
    buildTimeOrder: noBuildTimes,
    pin: null,
    candidateExists: null,
    orderLabel: 'semver',
    ...over,
  };
}

describe('guard.window', () => {
  test('closed now: held with the next opening in Berlin time; open on time; closed again after the duration', () => {
    // Tuesday 2026-12-01, 07:30 UTC = 08:30 in Berlin (CET, UTC+1): half an hour before it opens.
    const before = new Date('2026-12-01T07:30:00Z');
    const g = windowGate(BERLIN, before);
    assert.equal(g?.reason, 'outside-window');
    assert.match(g!.detail, /writes at 2026-12-01T08:00Z, in 30m/);
    assert.equal(windowGate(BERLIN, new Date('2026-12-01T08:00:00Z')), null, 'opens on time');
    assert.equal(windowGate(BERLIN, new Date('2026-12-01T15:59:00Z')), null);
    const after = windowGate(BERLIN, new Date('2026-12-01T16:00:00Z'));
    assert.match(after!.detail, /writes at 2026-12-02T08:00Z/, 'closes at 17:00 Berlin, opens next morning');
    // Friday evening → Monday.
    assert.match(windowGate(BERLIN, new Date('2026-12-04T17:00:00Z'))!.detail, /2026-12-07T08:00Z/);
  });

  test('summer time moves the opening to 07:00 UTC', () => {
    const st = windowState(BERLIN, new Date('2026-07-01T06:00:00Z'));
    assert.deepEqual(st, { open: false, opens: new Date('2026-07-01T07:00:00Z') });
  });

  test('a plain cron with the default one-minute duration is open through each matching minute', () => {
    const w = { schedule: '* 9-17 * * *', timeZone: 'UTC', duration: 60_000 };
    assert.equal(windowState(w, new Date('2026-12-01T17:59:30Z')).open, true);
    assert.deepEqual(windowState(w, new Date('2026-12-01T18:00:00Z')), {
      open: false,
      opens: new Date('2026-12-02T09:00:00Z'),
    });
  });

  test('the gate turns an upgrade into outside-window, before the HEAD, and leaves keeps alone', () => {
    const gate = windowGate(BERLIN, new Date('2026-12-01T07:30:00Z'));
    const held = decideMarker(input(`${IMG}:1.0.0`, '1.1.0', { gate }));
    assert.deepEqual(
      [held.action, held.reason, held.needsCandidateCheck],
      ['keep', 'outside-window', undefined],
    );
    assert.match(held.detail, /Candidate ghcr\.io\/org\/app:1\.1\.0 waits; keeping 1\.0\.0\./);
    // A downgrade stays a downgrade: the gate is no way round the guard.
    assert.equal(decideMarker(input(`${IMG}:2.0.0`, '1.1.0', { gate })).reason, 'downgrade-blocked');
    assert.equal(decideMarker(input(`${IMG}:1.1.0`, '1.1.0', { gate })).reason, 'up-to-date');
    // downgrades: Allow writes what the policy selects, but not outside the window either.
    const allow = decideMarker(
      input(`${IMG}:2.0.0`, '1.1.0', { gate, guard: guard({ downgrades: 'Allow' }) }),
    );
    assert.equal(allow.reason, 'outside-window');
  });

  test('cron and time zone errors name the field', () => {
    assert.throws(() => parseCron('0 9-17 * *', 'UTC'), /five fields/);
    assert.throws(() => parseCron('0 25 * * *', 'UTC'), /hour field "25" has 25, out of range/);
    const bad = imagePolicySchema.safeParse(
      policyObject({ window: { schedule: '0 9 * * *', timeZone: 'Europe/Berln' } }),
    );
    assert.equal(bad.success, false);
    const issue = bad.error!.issues.find((i) => i.path.join('.') === 'spec.guard.window.timeZone');
    assert.match(issue?.message ?? '', /"Europe\/Berln" is not a time zone/);
  });
});

function policyObject(guardBlock: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    kind: 'ImagePolicy',
    metadata: { name: 'app', namespace: 'flux-system' },
    spec: { imageRepositoryRef: { name: 'app' }, policy: { semver: { range: '*' } }, guard: guardBlock },
  };
}

describe('guard.minimumAge', () => {
  const T0 = new Date('2026-12-01T10:00:00Z');
  const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);
  // 1.0.0 and 1.1.0 are old; 1.2.0 was first seen at T0 (a burst release).
  const seen: Record<string, Date> = { '1.0.0': minutes(-600), '1.1.0': minutes(-300), '1.2.0': T0 };

  async function outcomeAt(now: Date) {
    return (await evaluatedAt(now)).outcome;
  }

  /** The policy evaluated at `now`, and the facts a plan asks through. */
  async function evaluatedAt(now: Date) {
    const policy = {
      ...imagePolicySchema.parse(policyObject({ minimumAge: '1h' })),
      source: { file: 'app.yaml' },
    };
    const repo = {
      source: { file: 'app.yaml' },
      ...imageRepositorySchema.parse({
        apiVersion: 'image.toolkit.fluxcd.io/v1',
        kind: 'ImageRepository',
        metadata: { name: 'app', namespace: 'flux-system' },
        spec: { image: IMG, interval: '1m' },
      }),
    };
    const infos = Object.entries(seen).map(([tag, firstSeen]) => ({
      tag,
      firstSeen,
      lastSeen: now,
      digest: null,
      initial: false,
    }));
    const store = {
      policyStates: async () => new Map(),
      latestScans: async () => new Map(),
      currentTagsOf: async () => new Map([['flux-system/app', Object.keys(seen)]]),
      getPolicyState: async () => null,
      lastFinishedScan: async () => ({ outcome: 'ok', startedAt: now, endedAt: now, error: null }),
      currentTags: async () => Object.keys(seen),
      tagInfo: async (_r: string, tag: string) => infos.find((i) => i.tag === tag) ?? null,
      currentTagInfos: async () => infos,
      buildTimeCache: () => ({ get: async () => null }),
    } as unknown as PolicyStore;
    const clients = {
      client: () => ({ headManifest: async () => ({ exists: true, digest: `sha256:${'a'.repeat(64)}` }) }),
      reference: () => ({ registry: 'ghcr.io', repository: 'org/app' }),
    } as unknown as ScanClients;
    const config = { imageRepositories: new Map([['flux-system/app', repo]]) } as unknown as Config;
    const deps = { config, store, clients, log: createLogger('silent'), now: () => now };
    const outcome = await evaluatePolicy(policy, deps, new FactsBook(deps), { readOnly: true });
    return { outcome, facts: new FactsBook(deps) };
  }

  test('a held line that moves to an older tag leaves no verdict behind for the held candidate', async () => {
    // planTree keeps verdicts in the outcome by the marker's value alone; the older tag's decision
    // is made on a copy of the outcome, and must not answer for the held candidate later (a release,
    // which passes the gate, on the same outcome).
    const { outcome, facts } = await evaluatedAt(minutes(10));
    assert.equal(outcome.gates.age?.oldEnough?.tag, '1.1.0');
    const root = await mkdtemp(join(tmpdir(), 'pawl-gates-plan-'));
    try {
      await writeFile(join(root, 'app.yaml'), `image: ${IMG}:1.1.0 # {"$imagepolicy": "flux-system:app"}\n`);
      const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'ignore' });
      git('init', '-q');
      git('add', '.');
      git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'app');
      const outcomes = { byName: new Map([['flux-system/app', outcome]]), facts };
      const held = await planTree(root, '.', outcomes);
      assert.deepEqual(
        held.plans.map((p) => [p.decision.action, p.decision.reason]),
        [['keep', 'too-new']],
        "the only old-enough tag is the line's own",
      );
      const released = await planTree(root, '.', outcomes, { release: new Set(['flux-system/app']) });
      assert.deepEqual(
        released.plans.map((p) => [p.decision.action, p.decision.reason, p.value]),
        [['write', 'upgrade', `${IMG}:1.2.0`]],
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test('a tag seen 10 minutes ago is held with its time; an hour after it was seen it is written', async () => {
    const early = await outcomeAt(minutes(10));
    assert.equal(early.candidate?.tag, '1.2.0');
    assert.equal(early.gates.age?.gate.reason, 'too-new');
    assert.match(early.gates.age!.gate.detail, /writes at 2026-12-01T11:00Z, in 50m/);
    assert.equal(early.gates.age!.oldEnough?.tag, '1.1.0', 'the newest tag old enough');
    const held = decideMarker(input(`${IMG}:1.1.0`, '1.2.0', { gate: early.gates.age!.gate }));
    assert.deepEqual([held.action, held.reason], ['keep', 'too-new']);

    const later = await outcomeAt(minutes(60));
    assert.equal(later.gates.age, null);
    const d = decideMarker(input(`${IMG}:1.1.0`, '1.2.0', { gate: null, candidateExists: true }));
    assert.deepEqual([d.action, d.reason], ['write', 'upgrade']);
  });

  // What plan.ts does with `oldEnough`: the whole guard decides again over it.
  const table: { current: string; oldEnough: string; want: [string, string] }[] = [
    { current: '1.0.0', oldEnough: '1.1.0', want: ['write', 'upgrade'] },
    { current: '1.1.0', oldEnough: '1.1.0', want: ['keep', 'up-to-date'] },
    { current: '1.1.5', oldEnough: '1.1.0', want: ['keep', 'downgrade-blocked'] },
    { current: '2.0.0', oldEnough: '1.1.0', want: ['keep', 'downgrade-blocked'] },
  ];
  for (const row of table) {
    test(`line ${row.current}, only old-enough tag ${row.oldEnough} → ${row.want.join(' ')}`, () => {
      const d = decideMarker(input(`${IMG}:${row.current}`, row.oldEnough, { candidateExists: true }));
      assert.deepEqual([d.action, d.reason], row.want);
    });
  }
});
