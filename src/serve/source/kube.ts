/**
 * The configuration in a Kubernetes API server (`--kubernetes`, docs/kubernetes.md): the
 * objects KubeSource lists and watches, through the same loader as files. Each object stands on
 * its own (`perObject`): a broken one is reported on its status and skipped, a deleted one stops.
 */
import { dependencyProblems, type LoadResult } from '../../config/index.js';
import { KubeClient, KubeSource, type KubeConnection } from '../../kube/index.js';
import { ConfigError, errorMessage, type Logger } from '../../util/index.js';
import type { ConfigRead, ConfigSource, Unreadable } from './types.js';

export class KubeConfigSource implements ConfigSource {
  readonly perObject = true;
  readonly paths: readonly string[];
  #off: (() => void) | undefined;

  /** `source` has started (its first list is done); `origin` names the server, for the status page. */
  constructor(
    readonly source: KubeSource,
    origin: string,
  ) {
    this.paths = [origin];
  }

  async read(): Promise<ConfigRead | Unreadable> {
    const latest = this.source.current();
    if (!latest)
      return {
        problems: [{ location: { file: this.paths[0]! }, severity: 'error', message: 'not listed yet' }],
      };
    return toRead(latest);
  }

  async watch(onChange: (reason: string) => void): Promise<void> {
    this.#off = this.source.onChange(() => onChange('kubernetes watch'));
  }

  close(): void {
    this.#off?.();
    void this.source.stop();
  }
}

function toRead({ config, problems, skipped }: LoadResult): ConfigRead {
  const errors = problems.some((p) => p.severity === 'error')
    ? [...problems.filter((p) => p.severity === 'error'), ...dependencyProblems(skipped)]
    : [];
  return { config, warnings: problems, errors, skipped };
}

export interface KubernetesOptions {
  connection: KubeConnection;
  /** `--watch-namespace`: one namespace; all when absent. */
  namespace?: string;
  /** Flux's `--watch-label-selector`, for the image kinds. */
  labelSelector?: string;
  /** Wait after a change for more before reloading, ms (default 200). */
  debounceMs?: number;
  /** `--events-addr`: where each Event is also posted, as Flux's controllers post them. */
  eventsAddr?: string;
  /**
   * `--enable-leader-election`: act only while holding a `coordination.k8s.io` Lease, as
   * Flux's controllers; absent, this daemon acts alone.
   */
  leaderElection?: LeaderElectionOptions;
}

export interface LeaderElectionOptions {
  /** Where the Lease is; default the kubeconfig context's (or the Pod's) namespace. */
  namespace?: string;
  /** Default `pawl-leader-election`. */
  name?: string;
  /** This replica's `holderIdentity`; default HOST_UUID. */
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

/** Lists every kind once (the first configuration) and keeps watching them. */
export async function connectKube(
  opts: KubernetesOptions,
  log: Logger,
): Promise<{ source: KubeConfigSource; client: KubeClient }> {
  const client = new KubeClient(opts.connection);
  const kube = new KubeSource({
    client,
    log,
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
    ...(opts.debounceMs !== undefined ? { debounceMs: opts.debounceMs } : {}),
    // With --events-addr, notification-controller delivers the Alerts (from the Events pawl
    // posts): pawl reading them too would send each alert twice.
    notifications: !opts.eventsAddr,
  });
  try {
    await kube.start();
  } catch (err) {
    await kube.stop();
    await client.close();
    throw new ConfigError([
      {
        location: { file: opts.connection.origin },
        severity: 'error',
        message: `cannot list pawl's objects from ${opts.connection.server}: ${errorMessage(err)}`,
      },
    ]);
  }
  return { source: new KubeConfigSource(kube, `kubernetes ${opts.connection.server}`), client };
}
