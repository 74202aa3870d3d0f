/**
 * Builds the registry client for each ImageRepository from the configuration: its `secretRef`
 * and `certSecretRef` Secrets (same namespace), `provider`, `insecure` and `timeout`.
 * Repositories that share those settings share a client, so tokens are fetched once per
 * registry and scope. With `provider: aws | gcp | azure` the credentials come from the cloud
 * (src/scan/registry/cloud) and `secretRef` is not used, as in Flux.
 */
import type { Config, ImageRepository } from '../config/index.js';
import { type Logger, RuntimeError } from '../util/index.js';
import { createRegistryClient, type RegistryClientOptions } from './registry/client.js';
import { cloudCredentialSource, defaultCloudDeps, type CloudDeps } from './registry/cloud/index.js';
import type { BuildTimeCache, RegistryClient, RepositoryRef } from './registry/types.js';
import { defaultReference } from './scanner.js';

export interface ScanClients {
  client(repo: ImageRepository): RegistryClient;
  reference(repo: ImageRepository): RepositoryRef;
}

export interface ScanClientOptions {
  log: Logger;
  buildTimes?: BuildTimeCache;
  /** Passed to every client (tests: a fake fetch, limits). */
  extra?: Partial<RegistryClientOptions>;
  /** How cloud providers reach their token endpoints (default: the real environment and network). */
  cloud?: CloudDeps;
}

export function createScanClients(config: Config, opts: ScanClientOptions): ScanClients {
  const clients = new Map<string, RegistryClient>();
  let cloud: CloudDeps | undefined;
  const secret = (repo: ImageRepository, name: string | undefined, field: string) => {
    if (name === undefined) return undefined;
    const key = `${repo.metadata.namespace}/${name}`;
    const s = config.secrets.get(key);
    // The loader checks references; this guards library callers that build a Config by hand.
    if (!s)
      throw new RuntimeError(
        `ImageRepository ${repo.metadata.namespace}/${repo.metadata.name}: ${field} names Secret ${key}, which is not in the configuration`,
      );
    return s;
  };
  return {
    client(repo) {
      const { secretRef, certSecretRef, insecure, timeout, provider } = repo.spec;
      const key = JSON.stringify([
        repo.metadata.namespace,
        provider,
        secretRef ?? null,
        certSecretRef ?? null,
        insecure,
        timeout,
      ]);
      let c = clients.get(key);
      if (!c) {
        const s = provider === 'generic' ? secret(repo, secretRef, 'spec.secretRef') : undefined;
        const ca = secret(repo, certSecretRef, 'spec.certSecretRef');
        c = createRegistryClient({
          log: opts.log,
          insecure,
          timeoutMs: timeout,
          ...(s ? { secret: s } : {}),
          ...(provider !== 'generic'
            ? {
                credentialSource: cloudCredentialSource(
                  provider,
                  (cloud ??= opts.cloud ?? defaultCloudDeps()),
                ),
              }
            : {}),
          ...(ca ? { caSecret: ca } : {}),
          ...(opts.buildTimes ? { buildTimeCache: opts.buildTimes } : {}),
          ...opts.extra,
        });
        clients.set(key, c);
      }
      return c;
    },
    reference: defaultReference,
  };
}
