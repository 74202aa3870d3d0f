/**
 * Finding an image's cosign signatures as cosign stores them (docs/gates.md): the legacy
 * `sha256-<hex>.sig` tag, an image manifest whose layers are simple-signing payloads, each with
 * its base64 signature in the `dev.cosignproject.cosign/signature` annotation and, keyless, the
 * certificate, chain and Rekor entry in three more. Only fetching is
 * here; what counts as a good signature is ../verify.ts's.
 */
import { createHash } from 'node:crypto';
import type { Authorizer } from './auth.js';
import { describeStatus, type Exchanger, type Op } from './exchange.js';
import { MANIFEST_ACCEPT } from './schemas.js';
import { z } from 'zod';
import type { LegacySignature, RepositoryRef, SignatureFind } from './types.js';

export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
/** cosign's keyless annotations (pkg/oci/static): the Fulcio certificate, its chain, the Rekor entry. */
export const CERTIFICATE_ANNOTATION = 'dev.sigstore.cosign/certificate';
export const CHAIN_ANNOTATION = 'dev.sigstore.cosign/chain';
export const REKOR_BUNDLE_ANNOTATION = 'dev.sigstore.cosign/bundle';
const MAX_SIGNATURE_MANIFEST_BYTES = 1 << 20;
/** A simple-signing payload is a few hundred bytes; 64 KiB leaves room and bounds a hostile one. */
const MAX_PAYLOAD_BYTES = 64 << 10;
/** cosign appends a layer per signature; more than this is not a signature tag pawl reads. */
const MAX_SIGNATURES = 16;

const signatureManifest = z.object({
  layers: z
    .array(
      z.object({
        digest: z.string(),
        size: z.number().optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      }),
    )
    .default([]),
});

/** `sha256:abc…` → `sha256-abc….sig`, cosign's tag for the signatures of that digest. */
export function signatureTag(digest: string): string {
  return `${digest.replace(':', '-')}.sig`;
}

/**
 * The legacy signatures of `digest`: one GET of the `.sig` manifest (404: none), then one GET
 * per signed layer's payload blob, whose hash must be the layer's digest.
 */
export async function legacySignatures(
  ex: Exchanger,
  auth: Authorizer,
  op: Op,
  repo: RepositoryRef,
  digest: string,
): Promise<SignatureFind> {
  const tag = signatureTag(digest);
  op.step = 'GET signature manifest';
  const url = `${ex.origin(repo)}/v2/${repo.path}/manifests/${tag}`;
  const f = await auth.request(
    op,
    repo,
    'GET',
    url,
    { accept: MANIFEST_ACCEPT },
    MAX_SIGNATURE_MANIFEST_BYTES,
  );
  if (f.status === 404) return { legacy: [], problems: [`no signature tag ${tag}`] };
  if (f.status !== 200) throw ex.fail(op, `GET ${tag} answered ${describeStatus(f)}`, f.status);
  let layers: z.infer<typeof signatureManifest>['layers'];
  try {
    layers = signatureManifest.parse(JSON.parse(f.body.toString('utf8'))).layers;
  } catch {
    return { legacy: [], problems: [`the signature tag ${tag} is not an image manifest`] };
  }
  const legacy: LegacySignature[] = [];
  const problems: string[] = [];
  for (const layer of layers.slice(0, MAX_SIGNATURES)) {
    const signature = layer.annotations?.[SIGNATURE_ANNOTATION];
    if (!signature) continue;
    op.step = 'GET signature payload';
    const b = await auth.request(
      op,
      repo,
      'GET',
      `${ex.origin(repo)}/v2/${repo.path}/blobs/${layer.digest}`,
      { accept: '*/*' },
      MAX_PAYLOAD_BYTES,
    );
    if (b.status !== 200) {
      problems.push(`the payload ${layer.digest} of ${tag} answered ${describeStatus(b)}`);
      continue;
    }
    const hash = `sha256:${createHash('sha256').update(b.body).digest('hex')}`;
    if (hash !== layer.digest) {
      problems.push(`the payload ${layer.digest} of ${tag} hashes to ${hash}`);
      continue;
    }
    const a = layer.annotations ?? {};
    legacy.push({
      payload: b.body,
      signature,
      layer: layer.digest,
      ...(a[CERTIFICATE_ANNOTATION] !== undefined && { certificate: a[CERTIFICATE_ANNOTATION] }),
      ...(a[CHAIN_ANNOTATION] !== undefined && { chain: a[CHAIN_ANNOTATION] }),
      ...(a[REKOR_BUNDLE_ANNOTATION] !== undefined && { rekorBundle: a[REKOR_BUNDLE_ANNOTATION] }),
    });
  }
  if (legacy.length === 0 && problems.length === 0)
    problems.push(`the signature tag ${tag} has no layer with a ${SIGNATURE_ANNOTATION} annotation`);
  return { legacy, problems };
}
