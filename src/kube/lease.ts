/**
 * Leader election with a `coordination.k8s.io/v1` Lease, as Flux's controllers do
 * (`--enable-leader-election`, client-go's leaderelection): the holder renews `renewTime` every
 * retry period; another replica takes the Lease over once it has seen the same renewTime for a
 * whole lease duration, by its own clock (clocks of replicas are never compared); a holder that
 * cannot renew within the renew deadline stops leading before anyone may take over. Every write
 * names the resourceVersion it read, so two replicas racing for it cannot both win.
 */
import { errorMessage, type Logger } from '../util/index.js';
import { KubeApiError, type KubeClient, type KubeObject, type Resource } from './client.js';

export const LEASES: Resource = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
};

export interface LeaseClock {
  now(): number;
  /** Resolves after `ms`, or at once when the signal aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export interface LeaseElectorOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  /** This replica, as `holderIdentity` names it. */
  identity: string;
  /** client-go's defaults, as Flux's controllers use them: 15 s, 10 s, 2 s. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  clock?: LeaseClock;
  log?: Logger;
  /** Told when this replica starts and stops leading. */
  onChange?: (leading: boolean) => void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type LeaseObject = KubeObject & { spec?: LeaseSpec };

/** A Lease's MicroTime: RFC 3339 with microseconds. */
const microTime = (ms: number): string => new Date(ms).toISOString().replace(/Z$/, '000Z');

const realClock: LeaseClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    }),
};

export class LeaseElector {
  readonly #opts: Required<Omit<LeaseElectorOptions, 'log' | 'onChange'>> &
    Pick<LeaseElectorOptions, 'log' | 'onChange'>;
  readonly #abort = new AbortController();
  #leading = false;
  /** When this replica last renewed (leading), by its clock. */
  #renewedAt = 0;
  /** The other holder's renewTime as last read, and when it was first read (by this clock). */
  #observed: { record: string; at: number } | null = null;
  #loop: Promise<void> | null = null;

  constructor(opts: LeaseElectorOptions) {
    this.#opts = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      clock: realClock,
      ...opts,
    };
  }

  get leading(): boolean {
    return this.#leading;
  }

  get identity(): string {
    return this.#opts.identity;
  }

  /** Tries for the Lease every retry period until `stop`. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Stops trying; a leader gives the Lease up (an empty holder), so that another takes over at
   * once, as client-go's ReleaseOnCancel. `release: false` leaves it to run out, as a crash does.
   */
  async stop(release = true): Promise<void> {
    this.#abort.abort();
    await this.#loop;
    if (this.#leading && release) {
      try {
        const lease = await this.#get();
        if (lease?.spec?.holderIdentity === this.#opts.identity)
          await this.#put(lease, { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 });
      } catch (err) {
        this.#opts.log?.warn({ err: errorMessage(err) }, 'cannot give up the leader Lease; it runs out');
      }
    }
    this.#set(false);
  }

  async #run(): Promise<void> {
    const { clock, retryPeriodMs, renewDeadlineMs } = this.#opts;
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      try {
        const ok = await this.#tryOnce();
        if (ok) this.#renewedAt = clock.now();
      } catch (err) {
        this.#opts.log?.warn(
          { err: errorMessage(err) },
          'leader election: the Lease cannot be read or written',
        );
      }
      // A leader that has not renewed within the deadline stops before the Lease can run out.
      if (this.#leading && clock.now() - this.#renewedAt > renewDeadlineMs) this.#set(false);
      await clock.sleep(retryPeriodMs, signal);
    }
  }

  /** One attempt to acquire or renew; true when this replica holds the Lease after it. */
  async #tryOnce(): Promise<boolean> {
    const { clock, identity, leaseDurationMs } = this.#opts;
    const now = clock.now();
    const spec: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    const lease = await this.#get();
    if (!lease) {
      try {
        await this.#opts.client.create(LEASES, this.#opts.namespace, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.#opts.name, namespace: this.#opts.namespace },
          spec,
        });
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409) return false;
        throw err;
      }
      this.#set(true);
      return true;
    }
    const held = lease.spec ?? {};
    const holder = held.holderIdentity ?? '';
    if (holder !== identity) {
      const record = JSON.stringify([holder, held.renewTime ?? '', held.leaseDurationSeconds ?? 0]);
      if (this.#observed?.record !== record) this.#observed = { record, at: now };
      const duration = (held.leaseDurationSeconds ?? 0) * 1000;
      if (holder !== '' && now - this.#observed.at < duration) {
        this.#set(false);
        return false;
      }
    }
    const next: LeaseSpec =
      holder === identity
        ? { ...held, renewTime: spec.renewTime, leaseDurationSeconds: spec.leaseDurationSeconds }
        : { ...spec, leaseTransitions: (held.leaseTransitions ?? 0) + 1 };
    try {
      await this.#put(lease, next);
    } catch (err) {
      // Another replica wrote it first: read again next period.
      if (err instanceof KubeApiError && err.status === 409) return false;
      throw err;
    }
    this.#observed = null;
    this.#set(true);
    return true;
  }

  async #get(): Promise<LeaseObject | null> {
    try {
      return (await this.#opts.client.get(LEASES, this.#opts.namespace, this.#opts.name)) as LeaseObject;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return null;
      throw err;
    }
  }

  async #put(lease: LeaseObject, spec: LeaseSpec): Promise<void> {
    await this.#opts.client.replace(LEASES, this.#opts.namespace, this.#opts.name, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: lease.metadata,
      spec,
    });
  }

  #set(leading: boolean): void {
    if (this.#leading === leading) return;
    this.#leading = leading;
    this.#opts.log?.info(
      { identity: this.#opts.identity, lease: `${this.#opts.namespace}/${this.#opts.name}` },
      leading ? 'leading' : 'no longer leading',
    );
    this.#opts.onChange?.(leading);
  }
}
