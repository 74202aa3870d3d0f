/**
 * `pawl explain POLICY`: why the policy selects what it selects and what pawl would do with
 * every marker — the ranked candidates with their ordering keys, the high-water mark, each
 * marker's value and decision in words, pins, and the anomalies of the last scans. Read-only:
 * it computes what a run would, and records nothing.
 */
import { refKey, type ImagePolicy } from '../config/index.js';
import { adviceFor, explainPin, explainRatchet, REASON_LABELS, type Reason } from '../guard/index.js';
import { describeAnomaly } from '../scan/index.js';
import { errorMessage, plainCommand, type CommandSpeller } from '../util/index.js';
import { splitImage } from '../image/index.js';
import { withAutomationWorkspace } from './automation.js';
import { automationsFor, type PeopleDeps } from './people.js';
import { evaluateAlone } from './policies.js';
import { planTree } from './plan.js';
import type { Explanation } from './explanation.js';

export type { Explanation } from './explanation.js';
import { proposalsOf } from './proposals.js';

export interface ExplainOptions {
  candidates?: number;
  /** How the offered commands are spelled (the caller's -c, --state-dir…); default bare `pawl …`. */
  command?: CommandSpeller;
}

/** The tag a marker's value holds (null for `:name` and `:digest` markers, which hold none). */
function markerTag(setter: string, value: string): string | null {
  if (setter.endsWith(':tag')) return value;
  if (setter.endsWith(':name') || setter.endsWith(':digest')) return null;
  return splitImage(value).tag;
}

/**
 * Below every line: candidates are ranked newest first, so the one after the oldest line's
 * value. A line newer than every candidate (a person's hotfix, downgrade-blocked) has the
 * candidate itself below it; a value the policy does not rank gives no answer.
 */
export function rollbackTarget(
  ranked: readonly string[],
  lines: readonly { tag: string | null; newerThanCandidate: boolean }[],
): string | null {
  if (lines.length === 0 || ranked.length === 0) return null;
  let lowest = -1;
  for (const l of lines) {
    const i = l.tag === null ? -1 : ranked.indexOf(l.tag);
    if (i >= 0) lowest = Math.max(lowest, i + 1);
    else if (l.newerThanCandidate) lowest = Math.max(lowest, 0);
    else return null;
  }
  return ranked[lowest] ?? null;
}

export async function explain(
  deps: PeopleDeps,
  policy: ImagePolicy,
  opts: ExplainOptions = {},
): Promise<Explanation> {
  const command = opts.command ?? plainCommand;
  const now = deps.now ?? (() => new Date());
  const name = refKey(policy.metadata);
  const repoKey = refKey(policy.spec.imageRepositoryRef);
  const repo = deps.config.imageRepositories.get(repoKey);
  const { outcome: o, book } = await evaluateAlone(policy, { ...deps, now }, { readOnly: true });
  const sel = o.selection;
  const state = o.ratchet;
  const [tagCount, scans, events] = await Promise.all([
    sel ? deps.store.currentTags(repoKey).then((t) => t.length) : 0,
    deps.store.scanHistory(repoKey, 5),
    deps.store.events({ policy: name, limit: 10 }),
  ]);
  const p = policy.spec.policy;
  const out: Explanation = {
    policy: name,
    repository: repoKey,
    image: repo?.spec.image ?? '',
    strategy:
      p.strategy === 'semver'
        ? `semver range ${p.range}`
        : p.strategy === 'newestBuild'
          ? 'newestBuild'
          : `${p.strategy} ${p.order}`,
    selected: sel?.tag ?? null,
    candidate: o.candidate?.tag ?? null,
    error: o.error,
    unverified: o.unverified,
    counts: sel
      ? {
          tags: tagCount,
          excluded: sel.excluded,
          filteredOut: sel.filteredOut,
          unparsable: sel.unparsable,
          outOfRange: sel.outOfRange,
        }
      : null,
    candidates: (sel?.candidates ?? [])
      .slice(0, opts.candidates ?? 10)
      .map((c, i) => ({ rank: i + 1, tag: c.tag, extracted: c.extracted, key: c.key })),
    highWater: state?.highWater ?? null,
    highWaterAt: state?.highWaterAt?.toISOString() ?? null,
    pending: state?.pending
      ? {
          ...state.pending,
          firstAt: state.pending.firstAt.toISOString(),
          lastAt: state.pending.lastAt.toISOString(),
        }
      : null,
    ratchet: explainRatchet(
      state,
      policy.spec.guard.staleScan.confirmations,
      policy.spec.guard.staleScan.window,
    ),
    scans: scans.map((s) => ({
      at: s.startedAt.toISOString(),
      outcome: s.outcome,
      tags: s.tagCount,
      added: s.added.length,
      removed: s.removed.length,
      anomalies: s.anomalies.map((a) => describeAnomaly(a)),
      error: s.error,
    })),
    markers: [],
    automationErrors: [],
    proposals: [],
    events: events.map((e) => ({ at: e.at.toISOString(), kind: e.kind, detail: e.detail })),
    rollbackTo: null,
    commands: { rollback: '', release: command(['release', name]), explain: command(['explain', name]) },
  };

  for (const a of automationsFor(deps.config, policy)) {
    const automation = refKey(a.metadata);
    try {
      const plan = await withAutomationWorkspace(
        a,
        { config: deps.config, stateDir: deps.stateDir, log: deps.log, now },
        (ws) => planTree(ws.dir, a.spec.update.path, { byName: new Map([[name, o]]), facts: book }),
      );
      for (const m of plan.plans) {
        const reason = m.decision.reason as Reason;
        out.markers.push({
          automation,
          file: m.marker.file,
          line: m.marker.line,
          setter: m.marker.setter,
          value: m.marker.value,
          action: m.decision.action,
          reason,
          words: REASON_LABELS[reason] ?? reason,
          detail: m.decision.detail,
          advice: adviceFor(reason, {
            policy: name,
            current: m.marker.value,
            candidate: o.candidate?.tag ?? null,
            repository: repoKey,
            command,
          }),
          pin: m.pin
            ? {
                state: m.pin.state,
                detail: explainPin(m.pin),
                ...(m.pin.pin
                  ? {
                      commit: m.pin.pin.commit,
                      author: `${m.pin.pin.author.name} <${m.pin.pin.author.email}>`,
                      time: m.pin.pin.time.toISOString(),
                      previous: m.pin.pin.previous,
                      kind: m.pin.pin.kind,
                      ...(m.pin.pin.reason !== undefined ? { reason: m.pin.pin.reason } : {}),
                    }
                  : {}),
              }
            : null,
        });
      }
    } catch (err) {
      out.automationErrors.push({ automation, error: errorMessage(err) });
    }
  }
  out.proposals = await proposalsOf(deps.store, name, automationsFor(deps.config, policy));
  out.rollbackTo = rollbackTarget(
    (sel?.candidates ?? []).map((c) => c.tag),
    out.markers.map((m) => ({
      tag: markerTag(m.setter, m.value),
      newerThanCandidate: m.reason === 'downgrade-blocked',
    })),
  );
  out.commands.rollback = command(['rollback', name, '--to', out.rollbackTo ?? 'TAG'], { reason: true });
  return out;
}
