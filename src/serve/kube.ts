/**
 * Kubernetes mode's side of the daemon (docs/kubernetes.md): what pawl did becomes the status
 * Flux's image controllers write (after every scan and pass, through the status subresource),
 * Events for the guard's refusals and for failures, and `reconcile.fluxcd.io/requestedAt`
 * (`flux reconcile`, notification-controller's Receivers) a run now. Objects the loader left out
 * are reported on their own status. Writes to one object go one at a time, in order.
 */
import { refKey, selectPolicies, type Config, type ImagePolicy } from '../config/index.js';
import { explainEvent, type GuardEvent } from '../guard/index.js';
import {
  imagePolicyStatus,
  imageRepositoryStatus,
  imageUpdateAutomationStatus,
  resourceOf,
  skippedStatus,
  StatusWriter,
  type ImageRef,
  type KubeClient,
  type KubeObject,
  type KubeSource,
  type Resource,
} from '../kube/index.js';
import type { AutomationReport } from '../records/index.js';
import { evaluatePolicy, FactsBook } from '../run/index.js';
import type { Store } from '../store/index.js';
import { errorMessage, type Logger } from '../util/index.js';
import type { Coordinator } from './cluster/index.js';
import type { PassEvent, ScanEvent, ServeEvents } from './events.js';
import { automationJob, publishWebhook, repositoryJob } from './jobs/index.js';
import type { Clock } from './scheduler.js';
import type { Applied, KubeConfigSource, LoadedConfig } from './source/index.js';

export const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';

/** The controller each kind stands in for, as Flux's Events name it (`source.component`). */
const COMPONENT: Record<string, string> = {
  ImageRepository: 'image-reflector-controller',
  ImagePolicy: 'image-reflector-controller',
  ImageUpdateAutomation: 'image-automation-controller',
};

/** Kept reasons that are the guard refusing a candidate, not a marker already current. */
const QUIET_KEPT = new Set(['up-to-date', 'equivalent', 'no-candidate']);

const EVENTS: Resource = { group: '', version: 'v1', plural: 'events', kind: 'Event' };

export interface KubeBridgeOptions {
  client: KubeClient;
  source: KubeSource;
  events: ServeEvents;
  store: Store;
  config: () => LoadedConfig;
  /** Runs now what a webhook naming these would run (publishWebhook). */
  trigger: (repositories: string[], automations: string[]) => Promise<unknown>;
  /** Asks the scheduler for a run of a job now. */
  request: (key: string) => void;
  /**
   * `--events-addr`: notification-controller's event endpoint; each Event is also posted there,
   * in the JSON Flux's controllers post, so that existing Alerts keep working.
   */
  eventsAddr?: string;
  /**
   * This replica acts (it leads, or is alone, and is not a dry run): only then does it write.
   * With `key` (the job a scan or pass belongs to, asked while the run still holds its lease):
   * whether this replica writes what that job did — the replica that ran it does.
   */
  acting?: (key?: string) => boolean;
  /** Told when this replica becomes the leader (the coordinator's `onElected`). */
  onElected?: (cb: () => void) => () => void;
  /** Closed with the bridge: the daemon's connection, which only Kubernetes mode uses. */
  closeClient?: boolean;
  log: Logger;
  clock: Clock;
}

/** What the daemon has that Kubernetes mode needs (the daemon builds the bridge from it). */
export interface DaemonKubeParts {
  connected: { source: KubeConfigSource; client: KubeClient };
  eventsAddr?: string;
  events: ServeEvents;
  store: Store;
  coordinator: Coordinator;
  config: () => LoadedConfig;
  /** Asks the scheduler for a run of a job now. */
  request: (key: string) => void;
  dryRun: boolean;
  log: Logger;
  clock: Clock;
}

/**
 * The daemon's bridge: `requestedAt` runs through the coordinator as a webhook would; it writes
 * only while this replica leads (or is alone) and is not a dry run — beside Flux, Flux's
 * controllers own the status — and re-announces when elected.
 */
export function daemonBridge(p: DaemonKubeParts): KubeBridge {
  const { coordinator } = p;
  return new KubeBridge({
    client: p.connected.client,
    source: p.connected.source.source,
    ...(p.eventsAddr ? { eventsAddr: p.eventsAddr } : {}),
    events: p.events,
    store: p.store,
    config: p.config,
    trigger: (repositories, automations) =>
      publishWebhook(coordinator, p.config(), p.clock.now(), { repositories, automations, tags: [] }),
    request: p.request,
    // What a scan or pass did is written by the replica that ran it, under the job's lease: on
    // PostgreSQL a request (a pass's reconcile through, a webhook) claims a job on whichever
    // replica asks first, and the preferred owner, finding the lease held, skips to its next
    // interval, so a rule by ownership would leave the object unwritten. A leader holds only
    // while it leads. Objects left out of the configuration: the owner of ''.
    acting: (key) => !p.dryRun && (key === undefined ? coordinator.owns('') : coordinator.holds(key)),
    ...(coordinator.onElected ? { onElected: (cb: () => void) => coordinator.onElected!(cb) } : {}),
    closeClient: true,
    log: p.log,
    clock: p.clock,
  });
}

type Kind = 'ImageRepository' | 'ImagePolicy' | 'ImageUpdateAutomation';

export class KubeBridge {
  readonly #writer: StatusWriter;
  readonly #off: (() => void)[] = [];
  /** One chain of writes per object, so that a later status never lands before an earlier one. */
  readonly #chains = new Map<string, Promise<void>>();
  /** `reconcile.fluxcd.io/requestedAt` last seen (`''`: none), per `Kind/ns/name` seen. */
  readonly #requested = new Map<string, string>();
  /** What was last reported for a skipped object (generation and message), to write it once. */
  readonly #skipped = new Map<string, string>();
  /** The guard's last refusal per marker, so that one Event says it, not every pass. */
  readonly #refusals = new Map<string, string>();
  /** Each ImagePolicy's spec as last applied (JSON), to see a policy appear or change; null before the first. */
  #policySpecs: Map<string, string> | null = null;
  #closed = false;

  constructor(private readonly opts: KubeBridgeOptions) {
    this.#writer = new StatusWriter(opts.client, { now: () => new Date(opts.clock.now()) });
    this.#off.push(
      opts.events.onScan((e) => {
        const key = repositoryJob(e.report.name);
        if (this.#acting(key)) this.#enqueue(key, () => this.#scanned(e));
      }),
      opts.events.onReport((e) => {
        if (this.#acting(automationJob(e.automation)) && !e.dryRun) this.#passed(e);
      }),
      ...(opts.onElected ? [opts.onElected(() => this.reannounce())] : []),
    );
  }

  /**
   * This replica just became the one that writes (it was elected): what a follower leaves
   * unwritten — the status of objects left out of the configuration — is written now, and
   * `requestedAt` checked, as after a configuration with nothing added, removed or changed.
   */
  reannounce(): void {
    if (this.#closed) return;
    const loaded = this.opts.config();
    if (this.#acting()) this.#reportSkipped(loaded);
    this.#handleRequests(loaded.config);
  }

  /**
   * A configuration just became the current one: objects left out are reported, a new
   * `requestedAt` runs its object now, and a changed spec (a new generation) too, as Flux
   * reconciles on a generation change.
   */
  applied(loaded: LoadedConfig, applied: Applied): void {
    if (this.#closed) return;
    if (this.#acting()) this.#reportSkipped(loaded);
    this.#handleRequests(loaded.config);
    this.#newPolicies(loaded.config, applied);
    for (const key of applied.changed) this.opts.request(key);
  }

  /**
   * A policy no automation uses gets its status after its repository's scans; one that appears,
   * or whose spec changes, in a later configuration than its repository would wait for the next
   * scan (an interval: an hour by default), where image-reflector-controller reconciles a policy
   * when it changes. So it is evaluated now from the repository's last scan, unless its
   * repository's job is new or changed (that scan, due at once, reports it).
   */
  #newPolicies(config: Config, applied: Applied): void {
    const before = this.#policySpecs;
    const now = new Map<string, string>();
    const scanning = new Set([...applied.added, ...applied.changed]);
    const byRepo = new Map<string, Set<string>>();
    for (const p of config.imagePolicies.values()) {
      const name = refKey(p.metadata);
      const spec = JSON.stringify(p.spec);
      now.set(name, spec);
      const repo = refKey(p.spec.imageRepositoryRef);
      if (before === null || before.get(name) === spec || scanning.has(repositoryJob(repo))) continue;
      byRepo.set(repo, (byRepo.get(repo) ?? new Set()).add(name));
    }
    this.#policySpecs = now;
    if (byRepo.size === 0 || !this.#acting()) return;
    for (const [repo, names] of byRepo) this.#unusedPolicies(repo, names);
  }

  #acting(key?: string): boolean {
    return this.opts.acting?.(key) ?? true;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const off of this.#off.splice(0)) off();
    await Promise.allSettled([...this.#chains.values()]);
    if (this.opts.closeClient) await this.opts.client.close();
  }

  #enqueue(key: string, write: () => Promise<void>): void {
    if (this.#closed) return;
    const next = (this.#chains.get(key) ?? Promise.resolve())
      .then(write)
      .catch((err: unknown) =>
        this.opts.log.warn({ object: key, err: errorMessage(err) }, 'cannot write the status of this object'),
      );
    this.#chains.set(key, next);
    void next.then(() => {
      if (this.#chains.get(key) === next) this.#chains.delete(key);
    });
  }

  async #scanned(e: ScanEvent): Promise<void> {
    const name = e.report.name;
    const repo = this.opts.config().config.imageRepositories.get(name);
    const resource = repo && resourceOf(repo.apiVersion, 'ImageRepository');
    if (!repo || !resource) return;
    const tags = e.report.error === null ? await this.opts.store.currentTags(name) : undefined;
    const written = await this.#writer.write(resource, repo.metadata.namespace, repo.metadata.name, (state) =>
      imageRepositoryStatus(state, {
        image: repo.spec.image,
        exclusionList: repo.spec.exclusionList,
        report: e.report,
        ...(tags ? { tags, scanTime: e.at } : {}),
      }),
    );
    if (written && e.report.error !== null)
      await this.#event(written, 'Warning', 'ReadOperationFailed', `scan failed: ${e.report.error}`);
    if (!e.report.suspended) this.#unusedPolicies(name);
  }

  /**
   * The policies of this repository that no automation selects: image-reflector-controller
   * writes `latestRef` and Ready for every policy after a scan, used or not, and tools read
   * them. Evaluated read-only (as `pawl explain`): with no marker to guard, there is no
   * high-water mark to keep, so latestRef is the policy's selection. A policy an automation
   * uses gets its status from the pass instead, with what the guard did to its markers.
   */
  #unusedPolicies(repoKey: string, only?: ReadonlySet<string>): void {
    const loaded = this.opts.config();
    const { config } = loaded;
    const used = new Set<string>();
    for (const a of config.automations.values())
      for (const p of selectPolicies(config, a)) used.add(refKey(p.metadata));
    const unused: ImagePolicy[] = [];
    for (const p of config.imagePolicies.values())
      if (
        refKey(p.spec.imageRepositoryRef) === repoKey &&
        !used.has(refKey(p.metadata)) &&
        !p.spec.suspend &&
        (only === undefined || only.has(refKey(p.metadata)))
      )
        unused.push(p);
    if (unused.length === 0) return;
    const image = config.imageRepositories.get(repoKey)?.spec.image;
    if (!image) return;
    const deps = {
      config,
      store: this.opts.store,
      clients: loaded.clients,
      log: this.opts.log,
      now: () => new Date(this.opts.clock.now()),
    };
    const book = new FactsBook(deps);
    for (const p of unused) {
      const resource = resourceOf(p.apiVersion, 'ImagePolicy');
      if (!resource) continue;
      const pname = refKey(p.metadata);
      this.#enqueue(`ImagePolicy/${pname}`, async () => {
        const out = await evaluatePolicy(p, deps, book, { readOnly: true });
        const dependencyNotReady =
          out.error !== null && (await this.opts.store.currentTags(repoKey)).length === 0;
        const written = await this.#writer.write(resource, p.metadata.namespace, p.metadata.name, (state) =>
          imagePolicyStatus(state, {
            image,
            candidate: out.candidate?.tag ?? null,
            ...(out.candidate?.digest ? { digest: out.candidate.digest } : {}),
            error: out.error,
            ...(dependencyNotReady ? { dependencyNotReady } : {}),
          }),
        );
        if (written && out.error !== null) await this.#event(written, 'Warning', 'Failure', out.error);
      });
    }
  }

  #passed(e: PassEvent): void {
    const { config } = this.opts.config();
    // By name, once: a lookup a policy in the report's list was quadratic in the policies.
    const reported = new Map(e.report.policies.map((x) => [x.name, x]));
    for (const ar of e.report.automations) {
      const automation = config.automations.get(ar.name);
      if (!automation) continue;
      const policies = selectPolicies(config, automation);
      const refs: Record<string, ImageRef> = {};
      for (const p of policies) {
        const pname = refKey(p.metadata);
        const pr = reported.get(pname);
        const repoKey = refKey(p.spec.imageRepositoryRef);
        const image = config.imageRepositories.get(repoKey)?.spec.image;
        if (pr?.candidate && image) refs[p.metadata.name] = { name: image, tag: pr.candidate };
        if (!pr || !image) continue;
        const resource = resourceOf(p.apiVersion, 'ImagePolicy');
        if (!resource) continue;
        const kept = ar.kept.find((k) => k.policy === pname && !QUIET_KEPT.has(k.reason));
        this.#enqueue(`ImagePolicy/${pname}`, async () => {
          const dependencyNotReady =
            pr.error !== null && (await this.opts.store.currentTags(repoKey)).length === 0;
          const written = await this.#writer.write(resource, p.metadata.namespace, p.metadata.name, (state) =>
            imagePolicyStatus(state, {
              image,
              candidate: pr.candidate,
              error: pr.error,
              ...(dependencyNotReady ? { dependencyNotReady } : {}),
              ...(kept ? { kept: { current: kept.current, reason: kept.reason, detail: kept.detail } } : {}),
            }),
          );
          if (written) await this.#policyEvents(written, pname, ar, pr.error);
          if (written) await this.#staleEvents(written, pname, e.startedAt);
        });
      }
      const resource = resourceOf(automation.apiVersion, 'ImageUpdateAutomation');
      if (!resource) continue;
      // The automation's status last: once it shows the pass, its policies' status and Events do.
      const policyWrites = policies.flatMap(
        (p) => this.#chains.get(`ImagePolicy/${refKey(p.metadata)}`) ?? [],
      );
      this.#enqueue(`ImageUpdateAutomation/${ar.name}`, async () => {
        await Promise.all(policyWrites);
        const written = await this.#writer.write(
          resource,
          automation.metadata.namespace,
          automation.metadata.name,
          (state) =>
            imageUpdateAutomationStatus(state, {
              report: ar,
              runTime: e.endedAt,
              policies: refs,
              ...(automation.spec.git.push?.branch ? { branch: automation.spec.git.push.branch } : {}),
            }),
        );
        if (!written) return;
        if (ar.result === 'failed')
          await this.#event(written, 'Warning', 'GitOperationFailed', ar.error ?? 'the automation failed');
        else if (ar.result === 'pushed' && ar.commit)
          await this.#event(
            written,
            'Normal',
            'Succeeded',
            `pushed commit '${ar.commit.slice(0, 7)}' to branch '${ar.branch ?? ''}'\n${ar.changes
              .map((c) => `${c.file}: ${c.old} -> ${c.new}`)
              .join('\n')}`,
          );
      });
    }
  }

  /** One Event per new refusal of the guard on this policy's markers, and on a failed selection. */
  async #policyEvents(
    obj: KubeObject,
    policy: string,
    ar: AutomationReport,
    error: string | null,
  ): Promise<void> {
    if (error !== null) await this.#event(obj, 'Warning', 'Failure', error);
    for (const k of ar.kept) {
      if (k.policy !== policy) continue;
      const marker = `${ar.name} ${k.file}:${k.line}`;
      if (QUIET_KEPT.has(k.reason)) {
        this.#refusals.delete(marker);
        continue;
      }
      const said = `${k.reason}|${k.current}|${k.candidate ?? ''}`;
      if (this.#refusals.get(marker) === said) continue;
      this.#refusals.set(marker, said);
      await this.#event(obj, 'Warning', pascal(k.reason), `${k.file}:${k.line}: ${k.detail}`);
    }
  }

  /**
   * `StaleTagList`: the scan selected a tag older than the guard's high-water mark, so the
   * guard kept the mark (the registry answered with an old or partial list, or a regression
   * waits for its confirmations). Once per episode (selection and mark), not every pass.
   */
  async #staleEvents(obj: KubeObject, policy: string, since: Date): Promise<void> {
    const records = await this.opts.store.events({ kind: 'stale-scan', policy, since, limit: 10 });
    const stale = records
      .map((r): GuardEvent | undefined => {
        const d = r.detail;
        if (typeof d.selected !== 'string' || typeof d.highWater !== 'string') return undefined;
        return {
          kind: 'stale-scan',
          policy,
          selected: d.selected,
          highWater: d.highWater,
          highWaterExists: d.highWaterExists === true,
          ...(typeof d.pendingCount === 'number' ? { pendingCount: d.pendingCount } : {}),
        };
      })
      .find((x) => x !== undefined);
    const key = `stale ${policy}`;
    if (!stale || stale.kind !== 'stale-scan') {
      this.#refusals.delete(key);
      return;
    }
    const said = `${stale.selected}|${stale.highWater}`;
    if (this.#refusals.get(key) === said) return;
    this.#refusals.set(key, said);
    await this.#event(obj, 'Warning', 'StaleTagList', explainEvent(stale));
  }

  #reportSkipped(loaded: LoadedConfig): void {
    const still = new Set<string>();
    for (const s of loaded.skipped) {
      if (!(s.kind in COMPONENT)) continue;
      const label = `${s.kind} ${s.namespace}/${s.name}`;
      const own = loaded.errors.filter((p) => p.object === label).map((p) => p.message);
      const message =
        s.reason === 'dependency' ? `skipped: needs ${s.dependsOn}` : own.join('; ') || 'invalid';
      for (const obj of this.opts.source.lookup(s.kind, s.namespace, s.name)) {
        const resource = resourceOf(obj.apiVersion ?? '', s.kind);
        if (!resource) continue;
        const key = `${resource.group}/${s.kind}/${s.namespace}/${s.name}`;
        still.add(key);
        const said = `${obj.metadata.generation ?? 0}|${message}`;
        if (this.#skipped.get(key) === said) continue;
        this.#skipped.set(key, said);
        this.#enqueue(`${s.kind}/${s.namespace}/${s.name}`, async () => {
          const written = await this.#writer.write(resource, s.namespace, s.name, (state) =>
            skippedStatus(state, { kind: s.kind, message, dependency: s.reason === 'dependency' }),
          );
          if (written)
            await this.#event(
              written,
              'Warning',
              s.reason === 'dependency'
                ? 'DependencyNotReady'
                : s.kind === 'ImagePolicy'
                  ? 'InvalidPolicy'
                  : 'InvalidSpec',
              message,
            );
        });
      }
    }
    for (const key of [...this.#skipped.keys()]) if (!still.has(key)) this.#skipped.delete(key);
  }

  /**
   * A `requestedAt` that changed runs its object now. An object seen for the first time runs
   * anyway (a new job is due at once), so its annotation is only recorded.
   */
  #handleRequests(config: Config): void {
    const seen = new Set<string>();
    const check = (
      kind: Kind,
      o: { metadata: { namespace: string; name: string; annotations: Record<string, string> } },
      run: () => void,
    ) => {
      const key = `${kind}/${refKey(o.metadata)}`;
      seen.add(key);
      const at = o.metadata.annotations[REQUESTED_AT] ?? '';
      const known = this.#requested.has(key);
      const before = this.#requested.get(key);
      this.#requested.set(key, at);
      if (known && at !== '' && before !== at) {
        this.opts.log.info({ object: key, requestedAt: at }, 'reconcile requested');
        run();
      }
    };
    const trigger = (repos: string[], automations: string[]) =>
      void this.opts
        .trigger(repos, automations)
        .catch((err: unknown) =>
          this.opts.log.warn({ err: errorMessage(err) }, 'cannot queue the requested reconcile'),
        );
    for (const r of config.imageRepositories.values())
      check('ImageRepository', r, () => trigger([refKey(r.metadata)], []));
    for (const p of config.imagePolicies.values())
      check('ImagePolicy', p, () => trigger([refKey(p.spec.imageRepositoryRef)], []));
    for (const a of config.automations.values())
      check('ImageUpdateAutomation', a, () => trigger([], [refKey(a.metadata)]));
    for (const key of [...this.#requested.keys()]) if (!seen.has(key)) this.#requested.delete(key);
  }

  /** An Event on the object, as Flux's controllers record them (kubectl describe, flux events). */
  async #event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const kind = obj.kind ?? '';
    const now = new Date(this.opts.clock.now()).toISOString();
    const ns = obj.metadata.namespace ?? 'default';
    try {
      await this.opts.client.create(EVENTS, ns, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${obj.metadata.name}.`, namespace: ns },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind,
          name: obj.metadata.name,
          namespace: ns,
          ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
          ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: COMPONENT[kind] ?? 'pawl' },
        reportingComponent: 'pawl',
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (err) {
      this.opts.log.warn(
        { object: `${kind}/${ns}/${obj.metadata.name}`, err: errorMessage(err) },
        'cannot record an Event',
      );
    }
    if (this.opts.eventsAddr) await this.#forward(obj, type, reason, message, now);
  }

  /** Flux's event (fluxcd/pkg/apis/event v1beta1), as its controllers' recorder posts it. */
  async #forward(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string, at: string) {
    const kind = obj.kind ?? '';
    const body = {
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind,
        name: obj.metadata.name,
        namespace: obj.metadata.namespace ?? 'default',
        ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
        ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
      },
      severity: type === 'Warning' ? 'error' : 'info',
      timestamp: at.replace(/\.\d{3}Z$/, 'Z'),
      message,
      reason,
      reportingController: COMPONENT[kind] ?? 'pawl',
      reportingInstance: 'pawl',
    };
    try {
      const res = await fetch(this.opts.eventsAddr!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      await res.body?.cancel();
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
    } catch (err) {
      this.opts.log.warn(
        { eventsAddr: this.opts.eventsAddr, err: errorMessage(err) },
        'cannot forward an Event',
      );
    }
  }
}

/** `downgrade-blocked` → `DowngradeBlocked`, the style of Kubernetes Event reasons. */
function pascal(reason: string): string {
  return reason.replace(/(^|-)([a-z])/g, (_m, _d, c: string) => c.toUpperCase());
}
