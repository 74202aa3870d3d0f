/** Pins end to end over a real Git repository: history → pin → decision. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { lineHistory, releasedSince } from '../../src/git/history.js';
import { findMarkers } from '../../src/write/setters/markers.js';
import { pinFor } from '../../src/guard/pins.js';
import { decideMarker } from '../../src/guard/decide.js';
import { parseMarkerValue } from '../../src/guard/values.js';
import { releaseTrailers, rollbackTrailers } from '../../src/guard/trailers.js';
import type { GuardVerdict } from '../../src/guard/types.js';
import { guard, noBuildTimes, policyOrder, semver } from './helpers.js';

const sem = policyOrder(semver());
const IMG = 'ghcr.io/org/app';
const manifest = (tags: string[]) =>
  `containers:\n${tags.map((t, i) => `  - name: c${i}\n    image: ${IMG}:${t} # {"$imagepolicy": "apps:app"}\n`).join('')}`;

function setup(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'pawl-pins-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
  const git = (args: string[], extra: Record<string, string> = {}) =>
    execFileSync('git', args, { cwd: dir, env: { ...env, ...extra }, encoding: 'utf8' }).trim();
  git(['init', '-q', '-b', 'main']);
  git(['config', 'user.name', 'pawl']);
  git(['config', 'user.email', 'pawl@example.com']);
  const commit = (tags: string[], msg: string, when: string, who = 'pawl') => {
    writeFileSync(join(dir, 'app.yaml'), manifest(tags));
    git(['add', '-A']);
    git(['commit', '-q', '-m', msg, `--author=${who} <${who.replace(/ /g, '.')}@example.com>`], {
      GIT_AUTHOR_DATE: when,
      GIT_COMMITTER_DATE: when,
    });
    return git(['rev-parse', 'HEAD']);
  };
  /** One `pawl run` decision per marked line, with the candidate first seen at `firstSeen`. */
  const decide = async (candidate: string, firstSeen: Date, initial = false): Promise<GuardVerdict[]> => {
    const text = readFileSync(join(dir, 'app.yaml'), 'utf8');
    const markers = findMarkers(text, 'app.yaml').markers;
    const h = (await lineHistory(dir, [{ file: 'app.yaml', text, lines: markers }])).get('app.yaml')!;
    const out: GuardVerdict[] = [];
    for (const m of markers) {
      const history = h.get(m.line) ?? null;
      const released = history ? await releasedSince(dir, history.commit, 'apps/app') : false;
      const pin = pinFor({
        history,
        order: sem.order,
        buildTimeOrder: noBuildTimes,
        candidate,
        candidateFirstSeen: firstSeen,
        candidateInitial: initial,
        released,
        manualEdits: 'Respect',
      });
      out.push(
        decideMarker({
          current: parseMarkerValue(m.field, m.value),
          candidate: { tag: candidate, name: IMG },
          field: m.field,
          guard: guard(),
          order: sem.order,
          buildTimeOrder: noBuildTimes,
          pin,
          candidateExists: true,
        }),
      );
    }
    return out;
  };
  return { dir, git, commit, decide };
}

const d = (s: string) => new Date(s);

describe('pins over real Git history', () => {
  test('pawl rollback (trailers) pins; the old release stays kept; a new release upgrades', async (t) => {
    const r = setup(t);
    r.commit(['1.0.0'], 'add', '2026-11-01T00:00:00Z');
    r.commit(['1.1.0'], 'pawl: 1.1.0', '2026-11-02T00:00:00Z');
    const msg = `Roll back apps/app to 1.0.0\n\n${rollbackTrailers({ policy: 'apps/app', old: '1.1.0', new: '1.0.0', reason: 'crash loop' })}`;
    r.commit(['1.0.0'], msg, '2026-11-03T00:00:00Z', 'Jane Doe');
    const kept = await r.decide('1.1.0', d('2026-11-01T12:00:00Z'));
    assert.deepEqual(
      kept.map((x) => x.reason),
      ['pinned'],
    );
    assert.match(kept[0]!.detail, /pawl rollback by Jane Doe/);
    const up = await r.decide('1.2.0', d('2026-11-04T00:00:00Z'));
    assert.deepEqual(
      up.map((x) => [x.action, x.reason]),
      [['write', 'upgrade']],
    );
  });

  test('a person’s backwards commit pins; tags of the first scan of an empty state never lift it', async (t) => {
    const r = setup(t);
    r.commit(['1.0.0'], 'add', '2026-11-01T00:00:00Z');
    r.commit(['1.1.0'], 'pawl: 1.1.0', '2026-11-02T00:00:00Z');
    r.commit(['1.0.0'], '1.1.0 breaks login', '2026-11-03T00:00:00Z', 'Jane Doe');
    assert.equal((await r.decide('1.1.0', d('2026-11-01T12:00:00Z')))[0]!.reason, 'pinned');
    // State deleted: 1.2.0 is in the very first scan; its first-seen time is now, but unknown in truth.
    assert.equal((await r.decide('1.2.0', d('2026-11-05T00:00:00Z'), true))[0]!.reason, 'pinned');
  });

  test('pawl release lifts the pin at once', async (t) => {
    const r = setup(t);
    r.commit(['1.0.0'], 'add', '2026-11-01T00:00:00Z');
    r.commit(['1.1.0'], 'pawl: 1.1.0', '2026-11-02T00:00:00Z');
    r.commit(['1.0.0'], 'back', '2026-11-03T00:00:00Z', 'Jane Doe');
    r.git(['commit', '-q', '--allow-empty', '-m', `Release apps/app\n\n${releaseTrailers(['apps/app'])}`]);
    assert.deepEqual(
      (await r.decide('1.1.0', d('2026-11-01T12:00:00Z'))).map((x) => x.reason),
      ['upgrade'],
    );
  });

  test('a person adding a new marked line with an old tag is upgraded normally; the existing line is not disturbed', async (t) => {
    const r = setup(t);
    r.commit(['1.1.0'], 'add', '2026-11-01T00:00:00Z');
    r.commit(['1.1.0', '0.9.0'], 'add a second container', '2026-11-03T00:00:00Z', 'Jane Doe');
    assert.deepEqual(
      (await r.decide('1.1.0', d('2026-11-01T00:00:00Z'))).map((x) => x.reason),
      ['up-to-date', 'upgrade'],
    );
  });

  test('a person moving a value forwards needs no pin: the downgrade check protects it', async (t) => {
    const r = setup(t);
    r.commit(['1.0.0'], 'add', '2026-11-01T00:00:00Z');
    r.commit(['1.3.0'], 'hand-deployed 1.3.0', '2026-11-03T00:00:00Z', 'Jane Doe');
    assert.deepEqual(
      (await r.decide('1.2.0', d('2026-11-01T00:00:00Z'))).map((x) => x.reason),
      ['downgrade-blocked'],
    );
  });
});
