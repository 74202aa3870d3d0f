/**
 * Prometheus metrics of the daemon (docs/serve.md lists them). One registry per daemon, never
 * prom-client's global one, so tests and a reload never see another instance's counts.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RunReport } from '../run/index.js';
import type { ScanReport } from '../scan/index.js';
import type { Coordinator } from './cluster/index.js';
import { ObjectFamily } from './series.js';

export type WebhookResult =
  | 'accepted'
  /** Verified, but no resource of the Receiver is due (every one skipped). */
  | 'triggered-nothing'
  | 'ignored'
  /** The same signed content was accepted within the replay window. */
  | 'replayed'
  | 'unauthorized'
  | 'forbidden'
  | 'malformed'
  | 'too-large'
  | 'not-found'
  | 'suspended'
  | 'busy'
  /** Refused before the body was read: this address (or all senders) already has as many uploads open as allowed. */
  | 'too-many-uploads'
  /** The body did not arrive within the body deadline; the connection was closed. */
  | 'timeout'
  /** The sender closed the connection before its body was complete. */
  | 'aborted'
  | 'unavailable';

export class ServeMetrics {
  readonly registry = new Registry();
  readonly scans: ObjectFamily<'repository' | 'outcome'>;
  readonly registryRequests: Counter<'registry' | 'status'>;
  readonly tags: ObjectFamily<'repository'>;
  readonly anomalies: ObjectFamily<'repository' | 'kind'>;
  readonly selections: ObjectFamily<'policy' | 'outcome'>;
  readonly updates: ObjectFamily<'automation' | 'result'>;
  readonly decisions: Counter<'reason'>;
  readonly staleEpisodes: ObjectFamily<'policy'>;
  readonly pins: ObjectFamily<'automation'>;
  readonly webhooks: Counter<'receiver' | 'result'>;
  readonly webhookUploads: Gauge;
  readonly webhookInFlight: Gauge;
  readonly passDuration: Histogram<'kind' | 'outcome'>;
  readonly webhookToPush: Histogram;
  readonly passFailures: ObjectFamily<'job'>;
  readonly reloads: Counter<'outcome'>;
  readonly configErrors: Gauge;
  readonly alerts: Counter<'provider' | 'outcome'>;
  readonly claims: Counter<'outcome'>;
  readonly leasesLost: Counter;
  #coordinator: Coordinator | null = null;
  /** The per-object families (series.ts), rendered after prom-client's own. */
  readonly #families: { pieces(): Generator<string, void, undefined> }[] = [];

  #family<L extends string>(
    name: string,
    help: string,
    type: 'counter' | 'gauge',
    labelNames: readonly L[],
  ): ObjectFamily<L> {
    const f = new ObjectFamily(name, help, type, labelNames);
    this.#families.push(f);
    return f;
  }

  /** The scrape: prom-client's metrics, then the per-object families (the text format). */
  async text(): Promise<string> {
    const out: string[] = [];
    for await (const p of this.scrape()) out.push(p);
    return out.join('');
  }

  /**
   * The scrape as `text` is, in pieces of at most ~16 K characters, each made when the response
   * asks for it (series.ts, `pieces`): the whole text as one string was several megabytes at
   * 10,000 images, twice a scrape, in the heap's large-object space, and all its pieces made at
   * once waited long enough to be moved to the old generation (issue 27). A family read by a
   * scrape keeps the series removed meanwhile until the scrape is done, so none appears twice.
   */
  async *scrape(): AsyncGenerator<string, void, undefined> {
    yield await this.registry.metrics();
    yield '\n';
    for (let i = 0; i < this.#families.length; i++) {
      if (i > 0) yield '\n\n';
      yield* this.#families[i]!.pieces();
    }
    yield '\n';
  }

  /** The scrape's content type. */
  get contentType(): string {
    return this.registry.contentType;
  }

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'pawl_' });
    this.scans = this.#family(
      'pawl_scans_total',
      'Scans of ImageRepositories by outcome (ok, failed).',
      'counter',
      ['repository', 'outcome'],
    );
    this.registryRequests = new Counter({
      name: 'pawl_registry_requests_total',
      help: 'HTTP requests to registries by host and status code ("error" when no answer).',
      labelNames: ['registry', 'status'],
      registers,
    });
    this.tags = this.#family(
      'pawl_repository_tags',
      'Tags of the last good scan, after exclusionList.',
      'gauge',
      ['repository'],
    );
    this.anomalies = this.#family(
      'pawl_scan_anomalies_total',
      'Scan anomalies (stale or shrunken tag lists) by kind.',
      'counter',
      ['repository', 'kind'],
    );
    this.selections = this.#family(
      'pawl_selections_total',
      'Policy evaluations by outcome (candidate, none).',
      'counter',
      ['policy', 'outcome'],
    );
    this.updates = this.#family(
      'pawl_automation_runs_total',
      'Automation passes by result (pushed, up-to-date, dry-run, failed).',
      'counter',
      ['automation', 'result'],
    );
    this.decisions = new Counter({
      name: 'pawl_guard_decisions_total',
      help: 'Per-marker guard decisions by reason code (upgrade, up-to-date, downgrade-blocked, pinned, ...).',
      labelNames: ['reason'],
      registers,
    });
    this.staleEpisodes = this.#family(
      'pawl_stale_list_episodes_total',
      'Scans whose selection went backwards while the high-water mark still existed (stale tag lists).',
      'counter',
      ['policy'],
    );
    this.pins = this.#family(
      'pawl_pinned_markers',
      'Markers kept because a person pinned them, as of the last pass of each automation.',
      'gauge',
      ['automation'],
    );
    this.webhooks = new Counter({
      name: 'pawl_webhook_requests_total',
      help: 'Webhook requests by receiver and result.',
      labelNames: ['receiver', 'result'],
      registers,
    });
    this.webhookUploads = new Gauge({
      name: 'pawl_webhook_uploads',
      help: 'Webhook requests whose body is still arriving (not yet verified).',
      registers,
    });
    this.webhookInFlight = new Gauge({
      name: 'pawl_webhook_in_flight',
      help: 'Webhook requests with a complete body being verified and queued.',
      registers,
    });
    this.passDuration = new Histogram({
      name: 'pawl_pass_duration_seconds',
      help: 'Duration of scheduled runs by kind (scan, automation) and outcome.',
      labelNames: ['kind', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    });
    this.webhookToPush = new Histogram({
      name: 'pawl_webhook_to_push_seconds',
      help: 'From an accepted webhook to the push of the commit it caused.',
      buckets: [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30],
      registers,
    });
    this.passFailures = this.#family(
      'pawl_job_failures',
      'Failures in a row of each scheduled job (0 when its last run succeeded).',
      'gauge',
      ['job'],
    );
    this.reloads = new Counter({
      name: 'pawl_config_reloads_total',
      help: 'Configuration reloads by outcome (applied, refused).',
      labelNames: ['outcome'],
      registers,
    });
    this.configErrors = new Gauge({
      name: 'pawl_config_errors',
      help: 'Errors in the running configuration: invalid objects skipped at start, and the objects that need them (0 after a valid load).',
      registers,
    });
    this.alerts = new Counter({
      name: 'pawl_alerts_total',
      help: 'Alert messages to Providers by outcome (delivered, retried, failed, dropped; suppressed: an equal event within the rate-limit interval).',
      labelNames: ['provider', 'outcome'],
      registers,
    });
    this.claims = new Counter({
      name: 'pawl_replica_claims_total',
      help: 'Claims of a job by this replica: granted, held (another replica runs it), error (database unreachable).',
      labelNames: ['outcome'],
      registers,
    });
    this.leasesLost = new Counter({
      name: 'pawl_replica_leases_lost_total',
      help: 'Runs whose lease was lost before they ended (they stop before pushing).',
      registers,
    });
    // The replicas' view, read from the coordinator at each scrape.
    const coordinator = (): Coordinator | null => this.#coordinator;
    new Gauge({
      name: 'pawl_replica_database_up',
      help: "1 when this replica's last heartbeat reached the database (always 1 on SQLite).",
      registers,
      collect() {
        this.set(coordinator()?.healthy === false ? 0 : 1);
      },
    });
    new Gauge({
      name: 'pawl_replica_leases',
      help: 'Leases (jobs running) this replica holds now.',
      registers,
      collect() {
        this.set(coordinator()?.claims().length ?? 0);
      },
    });
    new Gauge({
      name: 'pawl_replica_lease_age_seconds',
      help: 'Age of each lease this replica holds, by job.',
      labelNames: ['job'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const c of coordinator()?.claims() ?? [])
          this.set({ job: c.key }, (now - c.acquiredAt.getTime()) / 1000);
      },
    });
    new Gauge({
      name: 'pawl_replica_heartbeat_age_seconds',
      help: "Seconds since each replica last beat, as of this replica's last heartbeat.",
      labelNames: ['replica'],
      registers,
      collect() {
        this.reset();
        const now = Date.now();
        for (const r of coordinator()?.replicas() ?? [])
          this.set({ replica: r.id }, Math.max(0, (now - r.heartbeatAt.getTime()) / 1000));
      },
    });
    new Gauge({
      name: 'pawl_replica_live',
      help: '1 for each replica whose heartbeat is current, 0 for one recently gone.',
      labelNames: ['replica'],
      registers,
      collect() {
        this.reset();
        for (const r of coordinator()?.replicas() ?? []) this.set({ replica: r.id }, r.live ? 1 : 0);
      },
    });
    new Gauge({
      name: 'pawl_replica_claims',
      help: "Leases each replica holds, as of this replica's last heartbeat.",
      labelNames: ['replica'],
      registers,
      collect() {
        this.reset();
        for (const r of coordinator()?.replicas() ?? []) this.set({ replica: r.id }, r.claims);
      },
    });
  }

  /** The replicas' gauges read this coordinator at each scrape. */
  watchCoordinator(c: Coordinator): void {
    this.#coordinator = c;
  }

  observeScan(r: ScanReport): void {
    if (r.suspended) return;
    this.scans.inc({ repository: r.name, outcome: r.error ? 'failed' : 'ok' });
    if (r.scanned) this.tags.set({ repository: r.name }, r.tags);
    for (const a of r.anomalies) this.anomalies.inc({ repository: r.name, kind: a.kind });
  }

  observeReport(r: RunReport): void {
    for (const p of r.policies)
      this.selections.inc({ policy: p.name, outcome: p.candidate ? 'candidate' : 'none' });
    // Counted here and added once a reason: prom-client's inc hashes its labels each call, and a
    // pass over 500 unchanged markers has one reason 500 times.
    const reasons = new Map<string, number>();
    const count = (reason: string): void => void reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    for (const a of r.automations) {
      this.updates.inc({ automation: a.name, result: a.result });
      for (const c of a.changes) count(c.reason);
      let pinned = 0;
      for (const k of a.kept) {
        count(k.reason);
        if (k.reason === 'pinned') pinned++;
      }
      this.pins.set({ automation: a.name }, pinned);
    }
    for (const [reason, n] of reasons) this.decisions.inc({ reason }, n);
  }

  /** Forgets the series of objects no longer configured, so a reload does not leave ghosts. */
  forget(kind: 'repository' | 'automation' | 'job', name: string): void {
    if (kind === 'repository') {
      this.tags.remove({ repository: name });
    } else if (kind === 'automation') {
      this.pins.remove({ automation: name });
    } else {
      this.passFailures.remove({ job: name });
    }
  }
}

/** Counts every registry answer by host and status (the registry client's `onResponse`). */
export function countResponses(metrics: ServeMetrics): (host: string, status: number | 'error') => void {
  return (host, status) => metrics.registryRequests.inc({ registry: host, status: String(status) });
}
