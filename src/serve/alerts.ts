/**
 * The daemon's alerts (issue 14, SPEC §6): each pass report, with the guard's events of that pass
 * and the scans since the last one, becomes the events worth a person's attention, routed by the
 * configuration's Alerts to its Providers. Delivery never blocks a pass: `Notifier.publish`
 * queues and returns.
 */
import {
  emptyMemory,
  foldEvents,
  guardEventsFromRecords,
  Notifier,
  scanAttempts,
  type FoldingMemory,
  type NotifyMetrics,
  type ScanAttempt,
} from '../notify/index.js';
import type { Config } from '../config/index.js';
import type { Store } from '../store/index.js';
import { errorMessage, type Logger } from '../util/index.js';
import type { ServeEvents } from './events.js';
import type { ServeMetrics } from './metrics.js';

/** The store as alerts read it: the events a pass recorded. */
export type AlertsStore = Pick<Store, 'events'>;

export interface DaemonAlertsOptions {
  config: Config;
  events: ServeEvents;
  store: AlertsStore;
  metrics: ServeMetrics;
  log: Logger;
  /** Builds the notifier (tests inject a transport or a sleep through it). */
  notifier?: (config: Config, metrics: NotifyMetrics, log: Logger) => Notifier;
}

/** Scans remembered between passes at most; older ones matter no more to "failing in a row". */
const MAX_PENDING_SCANS = 10_000;

export class DaemonAlerts {
  #notifier: Notifier;
  // What earlier passes showed, so an event fires when a condition begins or changes, not on
  // every pass. Kept across reloads: a reload is not news to anyone. Folded into in place: no
  // one else reads it.
  readonly #memory: FoldingMemory = emptyMemory();
  #scans: ScanAttempt[] = [];
  readonly #unsubscribe: (() => void)[] = [];
  readonly #metrics: NotifyMetrics;
  readonly #make: (config: Config) => Notifier;
  readonly #retired = new Set<Promise<void>>();
  #handling: Promise<void> = Promise.resolve();

  constructor(private readonly opts: DaemonAlertsOptions) {
    const counter = opts.metrics.alerts;
    this.#metrics = {
      delivered: (provider) => counter.inc({ provider, outcome: 'delivered' }),
      failed: (provider) => counter.inc({ provider, outcome: 'failed' }),
      retried: (provider) => counter.inc({ provider, outcome: 'retried' }),
      dropped: (provider) => counter.inc({ provider, outcome: 'dropped' }),
      suppressed: () => counter.inc({ provider: '', outcome: 'suppressed' }),
    };
    this.#make = (config) =>
      opts.notifier
        ? opts.notifier(config, this.#metrics, opts.log)
        : new Notifier({ config, metrics: this.#metrics, log: opts.log });
    this.#notifier = this.#make(opts.config);
    this.#unsubscribe.push(
      opts.events.onScan((e) => {
        this.#scans.push(...scanAttempts([e.report], e.at));
        if (this.#scans.length > MAX_PENDING_SCANS)
          this.#scans.splice(0, this.#scans.length - MAX_PENDING_SCANS);
      }),
      opts.events.onReport((e) => {
        // The scans so far belong to this report; the store is read after, one report at a time.
        const scans = this.#scans.splice(0);
        this.#handling = this.#handling
          .then(async () => {
            const records = await opts.store.events({ since: e.startedAt, limit: 1000 });
            const events = foldEvents(this.#memory, {
              at: e.endedAt,
              report: e.report,
              guardEvents: guardEventsFromRecords(records),
              scans,
            });
            this.#notifier.publish(events);
          })
          .catch((err: unknown) =>
            opts.log.warn({ err: errorMessage(err) }, 'alerts: cannot read the guard events of a pass'),
          );
      }),
    );
  }

  /** A new configuration: its Providers and Alerts from now on; the old queues still drain. */
  reconfigure(config: Config): void {
    const old = this.#notifier;
    this.#notifier = this.#make(config);
    const done = old.close().finally(() => this.#retired.delete(done));
    this.#retired.add(done);
  }

  /** Stops taking events and tries what is queued, for at most `timeoutMs`. */
  async close(timeoutMs: number): Promise<void> {
    for (const u of this.#unsubscribe) u();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([this.#handling.then(() => this.#notifier.close()), ...this.#retired]),
      new Promise<void>((r) => (timer = setTimeout(r, timeoutMs))),
    ]);
    clearTimeout(timer);
  }
}
