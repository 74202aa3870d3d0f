/**
 * The configuration in a Kubernetes API server (`--kubernetes`, docs/kubernetes.md): the
 * objects KubeSource lists and watches, through the same loader as files. Each object stands on
 * its own (`perObject`): a broken one is reported on its status and skipped, a deleted one stops.
 */
import { dependencyProblems, type LoadResult } from '../../config/index.js';
import type { KubeSource } from '../../kube/index.js';
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
