/**
 * What the daemon opens before its parts exist, and closes again in reverse when a step fails:
 * the lock of a SQLite state directory, the store, and the coordinator it shares work through
 * (a LocalCoordinator on SQLite, a PostgresCoordinator on the same PostgreSQL database).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DB_FILE, loadPostgres, openStoreFrom, type Store, type StoreSpec } from '../store/index.js';
import { KubeClient, LeaseElector } from '../kube/index.js';
import type { Logger } from '../util/index.js';
import {
  LeaderCoordinator,
  loadPostgresCoordinator,
  LocalCoordinator,
  type Coordinator,
} from './cluster/index.js';
import type { ServeOptions } from './daemon.js';
import type { KubernetesOptions, LeaderElectionOptions } from './source/index.js';
import { acquireServeLock, type ServeLock } from './lock.js';
import { interruptedScans, workQueueOf } from './resume.js';

export interface Shared {
  store: Store;
  coordinator: Coordinator;
  lock: ServeLock | null;
  /** Scans a dead process left running (marked interrupted at start): their repositories are due now. */
  interrupted: ReadonlySet<number>;
}

export async function openShared(opts: ServeOptions): Promise<Shared> {
  const spec = opts.storeSpec ?? { kind: 'state-dir', stateDir: opts.stateDir };
  // Replicas share a PostgreSQL database through their coordinator; a SQLite file is for one daemon.
  const lock =
    spec.kind === 'postgres'
      ? null
      : await acquireServeLock(spec.kind === 'sqlite' ? spec.file : join(spec.stateDir, DB_FILE), opts.log);
  let store: Store | null = null;
  let coordinator: Coordinator | null = null;
  try {
    store = await (opts.openStore?.() ?? openStoreFrom({ kind: 'state-dir', stateDir: opts.stateDir }));
    coordinator = opts.coordinator ?? (await coordinatorFor(opts, spec, store));
    await coordinator.start();
  } catch (err) {
    await coordinator?.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await lock?.release();
    throw err;
  }
  // Only the daemon holding the store file's lock knows no live process is running them.
  const interrupted = lock ? await interruptedScans(store, opts.log) : new Set<number>();
  return { store, coordinator, lock, interrupted };
}

/**
 * One process on SQLite does everything; replicas on PostgreSQL coordinate in that database.
 * `pg` is loaded only then, as the store loads it.
 */
async function coordinatorFor(
  opts: ServeOptions,
  spec: StoreSpec | { kind: 'state-dir' },
  store: Store,
): Promise<Coordinator> {
  if (spec.kind !== 'postgres') {
    const local = new LocalCoordinator(undefined, workQueueOf(store));
    const election = opts.kubernetes?.leaderElection;
    return opts.kubernetes && election
      ? leaderCoordinator(local, opts.kubernetes, election, opts.log)
      : local;
  }
  const password = opts.storePassword ?? spec.password;
  const schema = 'schema' in store && typeof store.schema === 'string' ? store.schema : undefined;
  const [{ postgresClientConfig }, { connectPostgresCoordinator }] = await Promise.all([
    loadPostgres(),
    loadPostgresCoordinator(),
  ]);
  // The store's URL, password and schema, on connections of its own: a busy store pool must
  // never delay a heartbeat.
  const base = postgresClientConfig({
    url: spec.url,
    ...(password !== undefined ? { password } : {}),
    ...(schema !== undefined ? { schema } : {}),
  });
  return connectPostgresCoordinator(base, {
    log: opts.log,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...opts.cluster,
  });
}

/** Kubernetes mode with `--enable-leader-election`: the daemon acts while it holds the Lease. */
function leaderCoordinator(
  local: LocalCoordinator,
  kube: KubernetesOptions,
  election: LeaderElectionOptions,
  log: Logger,
): LeaderCoordinator {
  const client = new KubeClient(kube.connection);
  const elector = new LeaseElector({
    client,
    namespace: election.namespace ?? kube.connection.namespace,
    name: election.name ?? 'pawl-leader-election',
    identity: election.identity ?? `${hostname()}_${randomUUID()}`,
    ...(election.leaseDurationMs !== undefined ? { leaseDurationMs: election.leaseDurationMs } : {}),
    ...(election.renewDeadlineMs !== undefined ? { renewDeadlineMs: election.renewDeadlineMs } : {}),
    ...(election.retryPeriodMs !== undefined ? { retryPeriodMs: election.retryPeriodMs } : {}),
    log,
    // Called only once started, after the coordinator below exists.
    onChange: (leading) => coordinator.leadingChanged(leading),
  });
  const coordinator = new LeaderCoordinator(local, elector, () => client.close());
  return coordinator;
}
