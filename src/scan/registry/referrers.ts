/**
 * Finding an image's Sigstore bundles as cosign 3 stores them (`--new-bundle-format`, docs/gates.md):
 * each an OCI manifest whose `subject` is the image, whose `artifactType` is a Sigstore bundle
 * media type and whose one layer is the bundle's JSON. They are listed through the OCI
 * distribution spec's Referrers API (`GET /v2/<name>/referrers/<digest>`) where the registry has
 * it, else through the referrers tag schema: the tag `sha256-<hex>` holding an image index of the
 * same descriptors. Only fetching is here; what counts is ../sigstore.ts's.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Authorizer } from './auth.js';
import { describeStatus, type Exchanger, type Op } from './exchange.js';
import { MEDIA } from './schemas.js';
import type { BundleFind, FoundBundle, RepositoryRef } from './types.js';

/** The media types of Sigstore bundles (v0.1–v0.3); cosign 3 writes v0.3. */
export const BUNDLE_MEDIA_TYPE = /^application\/vnd\.dev\.sigstore\.bundle(\.v0\.[123])?\+json/;
/** The predicate of cosign's image signature (`cosign sign`), as opposed to attestations. */
export const SIGN_PREDICATE = 'https://sigstore.dev/cosign/sign/v1';
/** cosign's annotation naming a bundle's predicate, copied into the referrers list. */
const PREDICATE_ANNOTATION = 'dev.sigstore.bundle.predicateType';
const MAX_INDEX_BYTES = 1 << 20;
const MAX_MANIFEST_BYTES = 64 << 10;
/** A bundle is a few KiB (a certificate, a log entry, a DSSE envelope); this bounds a hostile one. */
const MAX_BUNDLE_BYTES = 256 << 10;
/** Signatures pawl reads per digest; more referrers than this are left unread (named in why). */
export const MAX_BUNDLES = 8;

const descriptor = z.object({
  mediaType: z.string().optional(),
  digest: z.string(),
  size: z.number().optional(),
  artifactType: z.string().optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
const referrerIndex = z.object({ manifests: z.array(descriptor).nullable().default([]) });
const referrerManifest = z.object({
  artifactType: z.string().optional(),
  config: z.object({ mediaType: z.string().optional() }).optional(),
  subject: z.object({ digest: z.string() }).optional(),
  layers: z.array(descriptor).default([]),
});

/** `sha256:abc…` → `sha256-abc…`, the referrers tag schema's tag for that digest. */
export function referrersTag(digest: string): string {
  return digest.replace(':', '-');
}

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** Whether a descriptor of the list may be an image signature bundle (attestations are not). */
function isSignatureBundle(d: z.infer<typeof descriptor>): boolean {
  if (!d.artifactType || !BUNDLE_MEDIA_TYPE.test(d.artifactType)) return false;
  const predicate = d.annotations?.[PREDICATE_ANNOTATION];
  return predicate === undefined || predicate === SIGN_PREDICATE;
}

/**
 * The bundles referring to `digest`. Requests: one for the list (the Referrers API; when it
 * answers 404/400/405, i.e. the registry has none, one more for the tag schema's index), then
 * per signature bundle one GET of its manifest and one of its layer. A registry failure throws.
 */
export async function referrerBundles(
  ex: Exchanger,
  auth: Authorizer,
  op: Op,
  repo: RepositoryRef,
  digest: string,
): Promise<BundleFind> {
  const base = `${ex.origin(repo)}/v2/${repo.path}`;
  const problems: string[] = [];
  op.step = 'GET referrers';
  let via: BundleFind['via'] = 'api';
  let f = await auth.request(
    op,
    repo,
    'GET',
    `${base}/referrers/${digest}`,
    { accept: MEDIA.ociIndex },
    MAX_INDEX_BYTES,
  );
  // The spec's "not supported": a registry without the API has no such route.
  if (f.status === 404 || f.status === 400 || f.status === 405) {
    via = 'tag';
    const tag = referrersTag(digest);
    op.step = 'GET referrers tag';
    f = await auth.request(
      op,
      repo,
      'GET',
      `${base}/manifests/${tag}`,
      { accept: MEDIA.ociIndex },
      MAX_INDEX_BYTES,
    );
    if (f.status === 404)
      return { bundles: [], problems: [`no referrers (Referrers API absent, no tag ${tag})`], via };
  }
  const what = via === 'api' ? 'the Referrers API' : `the referrers tag ${referrersTag(digest)}`;
  if (f.status !== 200) throw ex.fail(op, `GET of ${what} answered ${describeStatus(f)}`, f.status);
  let listed: z.infer<typeof descriptor>[];
  try {
    listed = referrerIndex.parse(JSON.parse(f.body.toString('utf8'))).manifests ?? [];
  } catch {
    return { bundles: [], problems: [`${what} did not answer an image index`], via };
  }
  const wanted = listed.filter(isSignatureBundle);
  if (wanted.length === 0) {
    problems.push(`${what} lists no Sigstore signature bundle (${listed.length} referrers)`);
    return { bundles: [], problems, via };
  }
  if (wanted.length > MAX_BUNDLES)
    problems.push(`${what} lists ${wanted.length} signature bundles; pawl reads the first ${MAX_BUNDLES}`);
  const bundles: FoundBundle[] = [];
  for (const d of wanted.slice(0, MAX_BUNDLES)) {
    const found = await readBundle(auth, op, repo, base, digest, d.digest);
    if (typeof found === 'string') problems.push(found);
    else bundles.push(found);
  }
  return { bundles, problems, via };
}

/** One referrer: its manifest (for this subject), then its bundle layer; a string says why not. */
async function readBundle(
  auth: Authorizer,
  op: Op,
  repo: RepositoryRef,
  base: string,
  subject: string,
  manifestDigest: string,
): Promise<FoundBundle | string> {
  op.step = 'GET bundle manifest';
  const m = await auth.request(
    op,
    repo,
    'GET',
    `${base}/manifests/${manifestDigest}`,
    { accept: MEDIA.ociManifest },
    MAX_MANIFEST_BYTES,
  );
  if (m.status !== 200) return `the referrer ${manifestDigest} answered ${describeStatus(m)}`;
  if (sha256(m.body) !== manifestDigest) return `the referrer ${manifestDigest} hashes to ${sha256(m.body)}`;
  let manifest: z.infer<typeof referrerManifest>;
  try {
    manifest = referrerManifest.parse(JSON.parse(m.body.toString('utf8')));
  } catch {
    return `the referrer ${manifestDigest} is not an image manifest`;
  }
  // The tag schema's index is anyone's to write: a manifest for another image is not this one's.
  if (manifest.subject?.digest !== subject)
    return `the referrer ${manifestDigest} has subject ${manifest.subject?.digest ?? 'none'}, not ${subject}`;
  const layer = manifest.layers.find((l) => l.mediaType !== undefined && BUNDLE_MEDIA_TYPE.test(l.mediaType));
  if (!layer) return `the referrer ${manifestDigest} has no Sigstore bundle layer`;
  op.step = 'GET bundle';
  const b = await auth.request(
    op,
    repo,
    'GET',
    `${base}/blobs/${layer.digest}`,
    { accept: '*/*' },
    MAX_BUNDLE_BYTES,
  );
  if (b.status !== 200)
    return `the bundle ${layer.digest} of ${manifestDigest} answered ${describeStatus(b)}`;
  if (sha256(b.body) !== layer.digest) return `the bundle ${layer.digest} hashes to ${sha256(b.body)}`;
  try {
    return { json: JSON.parse(b.body.toString('utf8')) as unknown, manifest: manifestDigest };
  } catch {
    return `the bundle ${layer.digest} of ${manifestDigest} is not JSON`;
  }
}
