/**
 * What people ask for on purpose (SPEC §4 "Pins", §5): `pawl rollback` writes an older tag and
 * commits it with trailers, which pins the lines; `pawl release` lifts the pin by writing the
 * policy's candidate now. Both go through the same workspace, writer and push retry as a run.
 */
import {
  refKey,
  type Config,
  type ImagePolicy,
  type ImageUpdateAutomation,
  selectPolicies,
} from '../config/index.js';
import { isValidTag, TAG_RULE } from '../image/index.js';
import {
  candidateValue,
  TRAILER_NEW,
  TRAILER_OLD,
  TRAILER_POLICY,
  TRAILER_REASON,
  TRAILER_RELEASE,
} from '../guard/index.js';
import { isScanDue, scanRepositories, type ScanClients, type ScanStore } from '../scan/index.js';
import type { Store } from '../store/index.js';
import { RuntimeError, UsageError, type Logger } from '../util/index.js';
import { runAutomation } from './automation.js';
import {
  blankOutcome,
  evaluateAlone,
  NO_FACTS,
  policyWrites,
  type PolicyOutcome,
  type PolicyStore,
} from './policies.js';
import type { Identity } from '../git/index.js';
import type { Decision, MarkerDecision } from '../records/index.js';
import type { AutomationReport } from './report.js';

/** The store as the people's commands (explain, rollback, release) use it. */
export type PeopleStore = ScanStore &
  PolicyStore &
  Pick<
    Store,
    | 'lastFinishedScan'
    | 'write'
    | 'currentTags'
    | 'scanHistory'
    | 'events'
    | 'beginRun'
    | 'decisions'
    | 'getRun'
    | 'openBatches'
  >;

export interface PeopleDeps {
  config: Config;
  store: PeopleStore;
  stateDir: string;
  clients: ScanClients;
  log: Logger;
  now?: () => Date;
}

/** The automations whose policy set includes `policy` (suspended ones too: a person asked). */
export function automationsFor(config: Config, policy: ImagePolicy): ImageUpdateAutomation[] {
  const key = refKey(policy.metadata);
  return [...config.automations.values()]
    .filter((a) => selectPolicies(config, a).some((p) => refKey(p.metadata) === key))
    .sort((a, b) => refKey(a.metadata).localeCompare(refKey(b.metadata)));
}

/** A rollback writes what the person asked for: the policy is not evaluated, the guard does not decide. */
const rollbackOutcome = (policy: ImagePolicy): PolicyOutcome =>
  blankOutcome(policy, 'a rollback writes the tag a person chose');

/** An automation's decisions on one policy, a written line's in the words of the person's command. */
function decisionsOn(
  made: readonly MarkerDecision[],
  a: ImageUpdateAutomation,
  policy: string,
  written: (d: MarkerDecision) => string,
): Decision[] {
  const automation = refKey(a.metadata);
  return made
    .filter((d) => d.policy === policy)
    .map((d) => ({ ...d, automation, detail: d.action === 'write' ? written(d) : d.detail }));
}

export interface RollbackResult {
  policy: string;
  to: string;
  /** `--reason`, as the commit's `Pawl-Reason` trailer holds it; null without one. */
  reason: string | null;
  /** Who asked: the commit's author (the automation's identity commits); null when unknown. */
  requestedBy: Identity | null;
  automations: AutomationReport[];
}

/** Who asks for a rollback, found as `git commit` finds an author (for the command line). */
export { findPerson, type PersonSource } from '../git/index.js';

/** `Name <email>`, as git prints an identity. */
export const formatIdentity = (i: Identity): string => `${i.name} <${i.email}>`;

export async function rollback(
  deps: PeopleDeps,
  policy: ImagePolicy,
  opts: { to: string; reason?: string; dryRun?: boolean; requestedBy?: Identity },
): Promise<RollbackResult> {
  const name = refKey(policy.metadata);
  const now = deps.now ?? (() => new Date());
  const startedAt = now();
  const reason = opts.reason?.replace(/\s+/g, ' ').trim() || null;
  const requestedBy = opts.requestedBy ?? null;
  // Before anything asks the registry: a registry may normalise `../manifests/1.0.0` into a tag.
  if (!isValidTag(opts.to)) throw new UsageError(`--to ${JSON.stringify(opts.to)} is not a tag; ${TAG_RULE}`);
  const repo = deps.config.imageRepositories.get(refKey(policy.spec.imageRepositoryRef));
  if (!repo) throw new UsageError(`ImagePolicy ${name}: its ImageRepository is not in the configuration`);
  const client = deps.clients.client(repo);
  const head = await client.headManifest(deps.clients.reference(repo), opts.to);
  if (!head.exists) {
    throw new RuntimeError(
      `${repo.spec.image}:${opts.to} does not exist in the registry; pawl only rolls back to an image that exists`,
    );
  }
  const digest = policy.spec.digestReflectionPolicy === 'Never' ? undefined : head.digest;
  const target = { tag: opts.to, name: repo.spec.image, ...(digest ? { digest } : {}) };
  const automations = automationsFor(deps.config, policy);
  if (automations.length === 0)
    throw new UsageError(`no ImageUpdateAutomation applies ImagePolicy ${name}; nothing to roll back`);

  // The person's tag is written as chosen: nothing is asked of the registry but its HEAD above.
  const outcomes = { byName: new Map([[name, rollbackOutcome(policy)]]), facts: NO_FACTS };
  const reports: AutomationReport[] = [];
  const decisions: Decision[] = [];
  for (const a of automations) {
    const { report, decisions: made } = await runAutomation(
      a,
      outcomes,
      { config: deps.config, stateDir: deps.stateDir, log: deps.log, now },
      {
        ...(opts.dryRun ? { dryRun: true } : {}),
        edits: (plan) =>
          plan.plans
            .filter((p) => p.policy === name)
            .map((p) => ({ plan: p, value: candidateValue(p.marker.field, target) }))
            .filter((e) => e.value !== e.plan.marker.value),
        message: (changes) => {
          const olds = [...new Set(changes.map((c) => c.old))];
          return {
            message: `Roll back ${name} to ${opts.to}${opts.reason ? `\n\n${opts.reason}` : ''}`,
            trailers: {
              [TRAILER_POLICY]: name,
              [TRAILER_OLD]: olds,
              [TRAILER_NEW]: opts.to,
              ...(reason ? { [TRAILER_REASON]: reason } : {}),
            },
            ...(requestedBy ? { author: requestedBy } : {}),
          };
        },
      },
    );
    for (const c of report.changes) c.reason = 'rollback';
    reports.push(report);
    decisions.push(...decisionsOn(made, a, name, () => rollbackWords(opts.to, requestedBy, reason)));
  }
  const result: RollbackResult = { policy: name, to: opts.to, reason, requestedBy, automations: reports };
  if (!opts.dryRun) await recordRollback(deps.store, result, decisions, startedAt, now());
  return result;
}

/** What the store keeps of a rollback: its detail sentence names the person and the reason. */
export function rollbackWords(to: string, by: Identity | null, reason: string | null): string {
  return (
    `Rolled back to ${to} on purpose by ${by ? formatIdentity(by) : 'someone pawl does not know (no --author or git user)'}` +
    (reason ? `: ${reason}` : ' (no reason given)') +
    '.'
  );
}

/**
 * A rollback in the store (docs/run.md): a run of kind `rollback` with its decisions, its
 * result (commit, person, reason) and a `rollback` event, beside what Git holds.
 */
async function recordRollback(
  store: PeopleStore,
  r: RollbackResult,
  decisions: readonly Decision[],
  startedAt: Date,
  endedAt: Date,
): Promise<void> {
  const runId = await store.beginRun(startedAt, 'rollback');
  const commits = r.automations
    .filter((a) => a.commit)
    .map((a) => ({ automation: a.name, commit: a.commit! }));
  const by = r.requestedBy ? formatIdentity(r.requestedBy) : null;
  await store.write({
    decisions: { runId, decisions },
    ...(commits.length > 0
      ? {
          events: [
            {
              at: endedAt,
              kind: 'rollback',
              policy: r.policy,
              detail: {
                to: r.to,
                from: [...new Set(decisions.filter((d) => d.action === 'write').map((d) => d.current))],
                reason: r.reason,
                requestedBy: by,
                commits,
                detail: rollbackWords(r.to, r.requestedBy, r.reason),
              },
            },
          ],
        }
      : {}),
    finishRun: {
      runId,
      endedAt,
      result: {
        policy: r.policy,
        to: r.to,
        reason: r.reason,
        requestedBy: by,
        automations: r.automations.map((a) => ({ name: a.name, result: a.result, commit: a.commit ?? null })),
      },
    },
  });
}

export interface ReleaseResult {
  policy: string;
  candidate: string | null;
  error: string | null;
  automations: AutomationReport[];
}

export async function release(
  deps: PeopleDeps,
  policy: ImagePolicy,
  opts: { dryRun?: boolean } = {},
): Promise<ReleaseResult> {
  const now = deps.now ?? (() => new Date());
  const name = refKey(policy.metadata);
  const repo = deps.config.imageRepositories.get(refKey(policy.spec.imageRepositoryRef));
  if (!repo) throw new UsageError(`ImagePolicy ${name}: its ImageRepository is not in the configuration`);
  // Reconcile through: the candidate must come from a fresh enough scan.
  if (isScanDue(repo, await deps.store.lastFinishedScan(refKey(repo.metadata)), now())) {
    await scanRepositories([repo], {
      client: deps.clients.client(repo),
      reference: deps.clients.reference,
      store: deps.store,
      log: deps.log,
      now,
    });
  }
  const { outcome, book } = await evaluateAlone(policy, { ...deps, now });
  await deps.store.write(policyWrites([outcome], book));
  if (!outcome.candidate) return { policy: name, candidate: null, error: outcome.error, automations: [] };
  const automations = automationsFor(deps.config, policy);
  if (automations.length === 0)
    throw new UsageError(`no ImageUpdateAutomation applies ImagePolicy ${name}; nothing to release`);

  const startedAt = now();
  const reports: AutomationReport[] = [];
  const decisions: Decision[] = [];
  for (const a of automations) {
    const { report, decisions: made } = await runAutomation(
      a,
      { byName: new Map([[name, outcome]]), facts: book },
      { config: deps.config, stateDir: deps.stateDir, log: deps.log, now },
      {
        ...(opts.dryRun ? { dryRun: true } : {}),
        release: new Set([name]),
        message: (changes) => ({
          message: `Release ${name}: ${[...new Set(changes.map((c) => c.new))].join(', ')}`,
          trailers: { [TRAILER_RELEASE]: name },
        }),
      },
    );
    reports.push(report);
    decisions.push(
      ...decisionsOn(made, a, name, (d) => `Released: the pin is lifted, ${d.candidate} written.`),
    );
  }
  if (!opts.dryRun) {
    // Beside Git, as a rollback is: the dashboard's timeline marks the release's commit.
    const runId = await deps.store.beginRun(startedAt, 'release');
    await deps.store.write({
      decisions: { runId, decisions },
      finishRun: {
        runId,
        endedAt: now(),
        result: {
          policy: name,
          candidate: outcome.candidate.tag,
          automations: reports.map((r) => ({ name: r.name, result: r.result, commit: r.commit ?? null })),
        },
      },
    });
  }
  return { policy: name, candidate: outcome.candidate.tag, error: null, automations: reports };
}
