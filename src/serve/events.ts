/**
 * The daemon's in-process event seam: every pass report and every scan result, as they happen.
 * The alerts module (src/notify/) subscribes here; so can tests and embedders. A listener that
 * throws is logged and never disturbs the daemon or the other listeners.
 */
import type { RunReport } from '../run/index.js';
import type { ScanReport } from '../scan/index.js';
import type { Logger } from '../util/index.js';
import type { RunTrigger } from './scheduler.js';

export interface PassEvent {
  /** `ns/name` of the ImageUpdateAutomation the pass ran. */
  automation: string;
  trigger: RunTrigger;
  /** Accepted webhooks folded into this pass (0 for an interval pass). */
  webhooks: number;
  startedAt: Date;
  endedAt: Date;
  dryRun: boolean;
  report: RunReport;
}

/**
 * What the daemon keeps of an automation's last pass, for the API and the dashboard: the event
 * without the report's row of every repository and policy, which the store holds in the run's
 * result (`runId`) and the API reads back from there. At 10,000 images ten automations' last
 * reports held ~18 MB of those rows (issue 27).
 */
export interface LastPass extends Omit<PassEvent, 'report'> {
  report: Omit<RunReport, 'repositories' | 'policies'>;
  /** The pass's run in the store (its whole report is the run's result). */
  runId: number;
}

/** `event` as the daemon keeps it (LastPass). */
export function lastPassOf(event: PassEvent, runId: number): LastPass {
  const { repositories: _r, policies: _p, ...report } = event.report;
  return { ...event, report, runId };
}

export interface ScanEvent {
  trigger: RunTrigger;
  at: Date;
  report: ScanReport;
}

type Listener<T> = (event: T) => void;

export class ServeEvents {
  readonly #reports = new Set<Listener<PassEvent>>();
  readonly #scans = new Set<Listener<ScanEvent>>();

  constructor(private readonly log: Logger) {}

  /** Called after every automation pass; returns a function that unsubscribes. */
  onReport(fn: Listener<PassEvent>): () => void {
    this.#reports.add(fn);
    return () => this.#reports.delete(fn);
  }

  /** Called after every scan the scheduler ran (not the ones inside a pass that found nothing due). */
  onScan(fn: Listener<ScanEvent>): () => void {
    this.#scans.add(fn);
    return () => this.#scans.delete(fn);
  }

  emitReport(e: PassEvent): void {
    this.#emit(this.#reports, e, { automation: e.automation });
  }

  emitScan(e: ScanEvent): void {
    this.#emit(this.#scans, e, { repository: e.report.name });
  }

  #emit<T>(listeners: Set<Listener<T>>, e: T, object: Record<string, string>): void {
    for (const fn of listeners) {
      try {
        fn(e);
      } catch (err) {
        this.log.error({ ...object, err }, 'an event listener failed');
      }
    }
  }
}
