/**
 * The OCI distribution client (SPEC §2, §4; issue 3) over undici's `dispatch` (transport.ts), or
 * a given `fetch`: the façade the scanner and the guard use.
 *
 * Every operation (listTags, headManifest, buildTime) has one deadline (`timeoutMs`, the
 * ImageRepository's `spec.timeout`) covering retries and waits. The parts, each in its file:
 * the exchanges (exchange.ts: the pool, retries, the deadline, records), authorization
 * (auth.ts: challenges, Basic and Bearer, tokens, credentials), tag listing (tags.ts), manifest
 * reading and build times (manifests.ts), and the response schemas (schemas.ts).
 */
import { Authorizer, type AuthOptions } from './auth.js';
import { Exchanger, type ExchangeOptions } from './exchange.js';
import { Manifests } from './manifests.js';
import { familiarName } from './reference.js';
import { legacySignatures } from './signatures.js';
import { referrerBundles } from './referrers.js';
import { listTags } from './tags.js';
import type {
  BuildTime,
  BuildTimeCache,
  ManifestHead,
  Platform,
  RegistryClient,
  RepositoryRef,
  SignatureFind,
  BundleFind,
  TagList,
} from './types.js';

export { RegistryError, type RecordOptions } from './exchange.js';

export interface RegistryClientOptions extends ExchangeOptions, AuthOptions {
  buildTimeCache?: BuildTimeCache;
}

class Client implements RegistryClient {
  private readonly ex: Exchanger;
  private readonly auth: Authorizer;
  private readonly manifests: Manifests;

  constructor(opts: RegistryClientOptions) {
    this.ex = new Exchanger(opts);
    this.auth = new Authorizer(this.ex, opts);
    this.manifests = new Manifests(this.ex, this.auth, opts.buildTimeCache);
  }

  listTags(repo: RepositoryRef, opts: { signal?: AbortSignal } = {}): Promise<TagList> {
    const op = this.ex.startOp(`listing tags of ${familiarName(repo)}`, opts.signal, true);
    return this.ex.run(op, repo, () => listTags(this.ex, this.auth, op, repo));
  }

  headManifest(
    repo: RepositoryRef,
    reference: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ManifestHead> {
    const op = this.ex.startOp(`checking ${familiarName(repo)}:${reference}`, opts.signal, false);
    return this.ex.run(op, repo, () => this.manifests.head(op, repo, reference));
  }

  signatures(
    repo: RepositoryRef,
    digest: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<SignatureFind> {
    const op = this.ex.startOp(
      `reading the signatures of ${familiarName(repo)}@${digest}`,
      opts.signal,
      false,
    );
    return this.ex.run(op, repo, () => legacySignatures(this.ex, this.auth, op, repo, digest));
  }

  bundles(repo: RepositoryRef, digest: string, opts: { signal?: AbortSignal } = {}): Promise<BundleFind> {
    const op = this.ex.startOp(
      `reading the Sigstore bundles of ${familiarName(repo)}@${digest}`,
      opts.signal,
      false,
    );
    return this.ex.run(op, repo, () => referrerBundles(this.ex, this.auth, op, repo, digest));
  }

  platformDigest(
    repo: RepositoryRef,
    reference: string,
    platform: Platform,
    opts: { signal?: AbortSignal } = {},
  ): Promise<string | null> {
    const op = this.ex.startOp(
      `reading the platforms of ${familiarName(repo)}:${reference}`,
      opts.signal,
      false,
    );
    return this.ex.run(op, repo, () => this.manifests.platformDigest(op, repo, reference, platform));
  }

  async buildTime(
    repo: RepositoryRef,
    reference: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<BuildTime | null> {
    const byDigest = reference.startsWith('sha256:');
    if (byDigest) {
      const hit = await this.manifests.cached(reference);
      if (hit !== undefined) return hit;
    }
    const op = this.ex.startOp(
      `reading the build time of ${familiarName(repo)}${byDigest ? '@' : ':'}${reference}`,
      opts.signal,
      false,
    );
    return this.ex.run(op, repo, () => this.manifests.buildTime(op, repo, reference));
  }
}

/** A client over the shared per-registry pool. See RegistryClientOptions. */
export function createRegistryClient(opts: RegistryClientOptions = {}): RegistryClient {
  return new Client(opts);
}
