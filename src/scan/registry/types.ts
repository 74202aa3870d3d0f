/**
 * The contract between the registry client (src/scan/registry/) and its users: the scanner,
 * the guard (HEAD of candidates and high-water marks, build times) and `pawl run`.
 */
import type { BuildTime, RecordedResponse } from '../../records/index.js';

export type { BuildTime, RecordedResponse } from '../../records/index.js';
export type { BuildTimeCache } from '../../store/index.js';

/** A parsed, normalised image repository reference (no tag, no digest). */
export interface RepositoryRef {
  /** As the user wrote it, for messages: `ghcr.io/org/app`, `nginx`. */
  original: string;
  /** Registry host[:port] as named (`docker.io`, `localhost:5000`). */
  registry: string;
  /** Where requests go: `https://registry-1.docker.io`, `http://127.0.0.1:5000`. */
  baseUrl: string;
  /** Repository path: `library/nginx`, `org/app`. */
  path: string;
  /** Canonical `registry/path` (Docker's familiar names expanded), used as the store key. */
  canonical: string;
}

export interface TagList {
  /** Only names that are tags under the OCI grammar, first occurrence kept. */
  tags: string[];
  /** Listed names that are not tags, dropped: how many, and a few (JSON-quoted, cut short, redacted). */
  invalid?: { count: number; examples: string[] };
  pages: number;
  /** Every HTTP request made, authentication included. */
  requests: number;
  responses: RecordedResponse[];
}

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

/**
 * One cosign signature of the legacy `.sig` tag: the simple-signing payload and its signature;
 * keyless (`cosign sign` without `--key`), also the layer's certificate, chain and Rekor bundle
 * annotations, as written (PEM, PEM, JSON), unchecked.
 */
export interface LegacySignature {
  payload: Buffer;
  /** Base64, as the `dev.cosignproject.cosign/signature` annotation holds it. */
  signature: string;
  /** The payload layer's digest, to name it in messages. */
  layer: string;
  /** `dev.sigstore.cosign/certificate`: the signing certificate (PEM); present means keyless. */
  certificate?: string;
  /** `dev.sigstore.cosign/chain`: the certificates above it (PEM). */
  chain?: string;
  /** `dev.sigstore.cosign/bundle`: the Rekor entry (`SignedEntryTimestamp`, `Payload`), JSON. */
  rekorBundle?: string;
}

/** The signatures found for a digest, and why others (or none) could not be read. */
export interface SignatureFind {
  legacy: LegacySignature[];
  problems: string[];
}

/** One Sigstore bundle stored as an OCI referrer of the image (cosign's `--new-bundle-format`). */
export interface FoundBundle {
  /** The bundle's JSON, parsed but not checked: what counts is ../sigstore.ts's. */
  json: unknown;
  /** The referrer manifest's digest, to name it in messages. */
  manifest: string;
}

/** The bundles found for a digest, how they were found, and why others could not be read. */
export interface BundleFind {
  bundles: FoundBundle[];
  problems: string[];
  /** `api`: the registry's Referrers API; `tag`: the referrers tag schema (`sha256-<hex>`). */
  via: 'api' | 'tag';
}

export interface ManifestHead {
  exists: boolean;
  digest?: string;
  mediaType?: string;
}

export interface RegistryClient {
  /** Complete or throws: never a partial list (SPEC §2, issue 3). */
  listTags(repo: RepositoryRef, opts?: { signal?: AbortSignal }): Promise<TagList>;
  /** HEAD /v2/<path>/manifests/<tag>; 404 → exists false; other failures throw. */
  headManifest(
    repo: RepositoryRef,
    reference: string,
    opts?: { signal?: AbortSignal },
  ): Promise<ManifestHead>;
  /**
   * The digest of one platform's image (`spec.digest.platform`): the index's child whose
   * platform matches os/architecture (and variant, when asked); a plain manifest's own digest;
   * null when the tag does not exist or the index has no such platform.
   */
  platformDigest(
    repo: RepositoryRef,
    reference: string,
    platform: Platform,
    opts?: { signal?: AbortSignal },
  ): Promise<string | null>;
  /**
   * The cosign signatures stored for `digest` (`spec.verify`): the `.sig` tag's payloads. Fetching
   * only; nothing here says whether they are good.
   */
  signatures(repo: RepositoryRef, digest: string, opts?: { signal?: AbortSignal }): Promise<SignatureFind>;
  /**
   * The Sigstore bundles that refer to `digest` (`spec.verify`): the Referrers API where the
   * registry has it, else the referrers tag schema. Fetching only, as `signatures`.
   */
  bundles(repo: RepositoryRef, digest: string, opts?: { signal?: AbortSignal }): Promise<BundleFind>;
  /**
   * Build time of the image a tag or digest names (SPEC §4 order): null when the registry
   * has no usable time. Results are cached by digest by the caller-supplied cache.
   */
  buildTime(
    repo: RepositoryRef,
    reference: string,
    opts?: { signal?: AbortSignal },
  ): Promise<BuildTime | null>;
}
