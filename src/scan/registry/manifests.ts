/**
 * Manifest reading: a tag's or digest's HEAD, and its build time (SPEC §4's order): the
 * manifest's `org.opencontainers.image.created` annotation, else an index's newest image (its
 * attestations skipped), a Docker schema 1 manifest's newest history entry, or the image
 * config's `created` and label. Build times are remembered by digest in the caller's cache.
 */
import { createHash } from 'node:crypto';
import type { Authorizer } from './auth.js';
import { describeStatus, type Exchanger, type Op } from './exchange.js';
import { familiarName } from './reference.js';
import {
  configDoc,
  MANIFEST_ACCEPT,
  manifestDoc,
  MEDIA,
  type ConfigDoc,
  type Descriptor,
  type ManifestDoc,
} from './schemas.js';
import type { BuildTime, BuildTimeCache, ManifestHead, Platform, RepositoryRef } from './types.js';

const CREATED_KEY = 'org.opencontainers.image.created';
const MAX_MANIFEST_BYTES = 4 << 20;
const MAX_CONFIG_BYTES = 8 << 20;

/** A usable time: parses, and is not Go's zero time or the Unix epoch that reproducible builds stamp. */
export function parseCreated(value: string | undefined): Date | null {
  if (!value) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t) || t <= 0) return null;
  return new Date(t);
}

/** Tags and digests go into the path as they are (`sha256:…` unescaped, as registries expect). */
function pathReference(reference: string): string {
  return /^[\w.:+=-]+$/.test(reference) ? reference : encodeURIComponent(reference);
}

function sha256(body: Buffer): string {
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}

function isAttestation(d: Descriptor): boolean {
  if (d.annotations?.['vnd.docker.reference.type'] === 'attestation-manifest') return true;
  return d.platform?.architecture === 'unknown' && d.platform.os === 'unknown';
}

/** A client's manifest reads, over its authorization and its build-time cache. */
export class Manifests {
  constructor(
    private readonly ex: Exchanger,
    private readonly auth: Authorizer,
    private readonly cache: BuildTimeCache | undefined,
  ) {}

  private url(repo: RepositoryRef, reference: string): string {
    return `${this.ex.origin(repo)}/v2/${repo.path}/manifests/${pathReference(reference)}`;
  }

  async head(op: Op, repo: RepositoryRef, reference: string): Promise<ManifestHead> {
    const url = this.url(repo, reference);
    op.step = 'HEAD manifest';
    const f = await this.auth.request(op, repo, 'HEAD', url, { accept: MANIFEST_ACCEPT }, 0);
    if (f.status === 404) return { exists: false };
    if (f.status !== 200) throw this.ex.fail(op, `HEAD manifest answered ${describeStatus(f)}`, f.status);
    const mediaType = f.headers.get('content-type')?.split(';')[0]?.trim();
    let digest = f.headers.get('docker-content-digest') ?? undefined;
    if (!digest) {
      // Some registries omit the digest on HEAD; the manifest's own hash is the digest.
      const g = await this.auth.request(
        op,
        repo,
        'GET',
        url,
        { accept: MANIFEST_ACCEPT },
        MAX_MANIFEST_BYTES,
      );
      if (g.status === 200) digest = sha256(g.body);
    }
    return { exists: true, ...(digest ? { digest } : {}), ...(mediaType ? { mediaType } : {}) };
  }

  /** One GET of the manifest; an index's matching child is named by its descriptor, unread. */
  async platformDigest(
    op: Op,
    repo: RepositoryRef,
    reference: string,
    want: Platform,
  ): Promise<string | null> {
    const url = this.url(repo, reference);
    op.step = 'GET manifest';
    const f = await this.auth.request(op, repo, 'GET', url, { accept: MANIFEST_ACCEPT }, MAX_MANIFEST_BYTES);
    if (f.status === 404) return null;
    if (f.status !== 200) throw this.ex.fail(op, `GET manifest answered ${describeStatus(f)}`, f.status);
    let doc: ManifestDoc;
    try {
      doc = manifestDoc.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      throw this.ex.fail(op, `manifest ${reference} is not valid JSON`);
    }
    if (!doc.manifests) return f.headers.get('docker-content-digest') ?? sha256(f.body);
    const child = doc.manifests.find(
      (d) =>
        !isAttestation(d) &&
        d.platform?.os === want.os &&
        d.platform.architecture === want.architecture &&
        (want.variant === undefined || d.platform.variant === want.variant),
    );
    return child?.digest ?? null;
  }

  /** A build time the store remembers by digest; undefined when unknown (or the store cannot say). */
  async cached(digest: string): Promise<BuildTime | null | undefined> {
    if (!this.cache) return undefined;
    try {
      return await this.cache.get(digest);
    } catch {
      return undefined;
    }
  }

  /** The build time of a tag or digest, or null; `depth` 1 is an image inside an index. */
  async buildTime(op: Op, repo: RepositoryRef, reference: string, depth = 0): Promise<BuildTime | null> {
    const url = this.url(repo, reference);
    if (!reference.startsWith('sha256:')) {
      // A tag: learn its digest with a HEAD first, so a cached digest costs one cheap request.
      op.step = 'HEAD manifest';
      const h = await this.auth.request(op, repo, 'HEAD', url, { accept: MANIFEST_ACCEPT }, 0);
      if (h.status === 404) throw this.ex.fail(op, `${familiarName(repo)}:${reference} does not exist`, 404);
      const d = h.headers.get('docker-content-digest');
      if (d) {
        const hit = await this.cached(d);
        if (hit !== undefined) return hit;
      }
    } else if (depth > 0) {
      const hit = await this.cached(reference);
      if (hit !== undefined) return hit;
    }
    op.step = 'GET manifest';
    const f = await this.auth.request(op, repo, 'GET', url, { accept: MANIFEST_ACCEPT }, MAX_MANIFEST_BYTES);
    if (f.status === 404) throw this.ex.fail(op, `manifest ${reference} does not exist`, 404);
    if (f.status !== 200) throw this.ex.fail(op, `GET manifest answered ${describeStatus(f)}`, f.status);
    const digest = reference.startsWith('sha256:')
      ? reference
      : (f.headers.get('docker-content-digest') ?? sha256(f.body));
    let doc: ManifestDoc;
    try {
      doc = manifestDoc.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      throw this.ex.fail(op, `manifest ${digest} is not valid JSON`);
    }
    const result = await this.timeFromManifest(
      op,
      repo,
      digest,
      doc,
      f.headers.get('content-type') ?? '',
      depth,
    );
    // The cache only saves requests: a store that cannot take the entry costs a fetch next time.
    await this.cache?.set(digest, result).catch(() => undefined);
    return result;
  }

  private async timeFromManifest(
    op: Op,
    repo: RepositoryRef,
    digest: string,
    doc: ManifestDoc,
    contentType: string,
    depth: number,
  ): Promise<BuildTime | null> {
    const own = parseCreated(doc.annotations?.[CREATED_KEY]);
    if (own) return { digest, created: own, source: 'annotation' };
    const mediaType = doc.mediaType ?? contentType.split(';')[0]!.trim();
    if (doc.manifests || mediaType === MEDIA.ociIndex || mediaType === MEDIA.dockerList) {
      if (depth > 0) return null; // an index inside an index: not an image
      let best: BuildTime | null = null;
      for (const child of doc.manifests ?? []) {
        if (isAttestation(child)) continue;
        const t = await this.buildTime(op, repo, child.digest, depth + 1);
        if (t && (!best || t.created > best.created)) best = t;
      }
      return best ? { digest, created: best.created, source: 'index-child' } : null;
    }
    if (doc.history && doc.schemaVersion === 1) {
      // Docker schema 1: the newest layer's v1Compatibility carries `created`.
      try {
        const first = JSON.parse(doc.history[0]?.v1Compatibility ?? '{}') as { created?: string };
        const t = parseCreated(first.created);
        return t ? { digest, created: t, source: 'config' } : null;
      } catch {
        return null;
      }
    }
    if (!doc.config) return null;
    return this.timeFromConfig(op, repo, digest, doc.config.digest);
  }

  /** The image config's `created`, or its created label when that is later (or alone). */
  private async timeFromConfig(
    op: Op,
    repo: RepositoryRef,
    digest: string,
    configDigest: string,
  ): Promise<BuildTime | null> {
    op.step = 'GET config blob';
    const f = await this.auth.request(
      op,
      repo,
      'GET',
      `${this.ex.origin(repo)}/v2/${repo.path}/blobs/${configDigest}`,
      { accept: '*/*' },
      MAX_CONFIG_BYTES,
    );
    if (f.status !== 200)
      throw this.ex.fail(op, `config blob ${configDigest} answered ${describeStatus(f)}`, f.status);
    let cfg: ConfigDoc;
    try {
      cfg = configDoc.parse(JSON.parse(f.body.toString('utf8')));
    } catch {
      return null; // not an image config (an artifact): no build time
    }
    const created = parseCreated(cfg.created);
    const label = parseCreated(cfg.config?.Labels?.[CREATED_KEY]);
    if (created && (!label || created >= label)) return { digest, created, source: 'config' };
    if (label) return { digest, created: label, source: 'label' };
    return null;
  }
}
