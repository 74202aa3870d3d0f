/**
 * Signatures made as cosign makes them (`cosign sign --key`, the legacy `.sig` tag): an ECDSA
 * P-256 key pair, the simple-signing payload naming the image's digest, its ASN.1 signature
 * over SHA-256 in base64, and an OCI manifest tagged `sha256-<hex>.sig` whose layer is the
 * payload (`application/vnd.dev.cosign.simplesigning.v1+json`) with the signature in the
 * `dev.cosignproject.cosign/signature` annotation.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { OCI_CONFIG, OCI_MANIFEST, putBlob, putManifest } from './push.js';

export const SIMPLE_SIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';

export interface CosignKey {
  privateKey: KeyObject;
  /** PEM, as `cosign.pub`. */
  publicPem: string;
}

export function cosignKey(): CosignKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** cosign's payload for `ref@digest` (its JSON field order, no optional claims). */
export function simpleSigningPayload(dockerReference: string, digest: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      critical: {
        identity: { 'docker-reference': dockerReference },
        image: { 'docker-manifest-digest': digest },
        type: 'cosign container image signature',
      },
      optional: null,
    }),
  );
}

export function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

export interface SignOptions {
  /** The digest the payload names (default: the image's own). */
  payloadDigest?: string;
  /** Sign these bytes but store the payload (a tampered payload). */
  signedPayload?: Buffer;
}

/**
 * Signs `digest` of `registry/repo` with `key` and pushes the `.sig` manifest, as `cosign sign
 * --key` does (one signature layer). Returns the signature tag.
 */
export async function cosignSign(
  registryUrl: string,
  registryHost: string,
  repo: string,
  digest: string,
  key: CosignKey,
  opts: SignOptions = {},
): Promise<string> {
  const payload = simpleSigningPayload(`${registryHost}/${repo}`, opts.payloadDigest ?? digest);
  const signature = sign('sha256', opts.signedPayload ?? payload, key.privateKey).toString('base64');
  return pushSignatureManifest(registryUrl, repo, digest, payload, {
    'dev.cosignproject.cosign/signature': signature,
  });
}

/**
 * Pushes the `.sig` manifest of `digest` as cosign does: one simple-signing layer, `payload`,
 * with `annotations` (the signature, and keyless the certificate, chain and Rekor bundle), and
 * cosign's config for a signature image. Returns the tag.
 */
export async function pushSignatureManifest(
  registryUrl: string,
  repo: string,
  digest: string,
  payload: Buffer,
  annotations: Record<string, string>,
): Promise<string> {
  const payloadDigest = await putBlob(registryUrl, repo, undefined, payload);
  // cosign's config for a signature image: empty but for the layer's diff id.
  const config = Buffer.from(
    JSON.stringify({
      architecture: '',
      config: {},
      created: '0001-01-01T00:00:00Z',
      history: [{ created: '0001-01-01T00:00:00Z' }],
      os: '',
      rootfs: { type: 'layers', diff_ids: [payloadDigest] },
    }),
  );
  const configDigest = await putBlob(registryUrl, repo, undefined, config);
  const tag = `${digest.replace(':', '-')}.sig`;
  await putManifest(registryUrl, repo, undefined, tag, OCI_MANIFEST, {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: OCI_CONFIG, size: config.length, digest: configDigest },
    layers: [{ mediaType: SIMPLE_SIGNING, size: payload.length, digest: payloadDigest, annotations }],
  });
  return tag;
}

/** A `kind: Secret` document holding PEM public keys under `*.pub` keys. */
export function keysSecret(name: string, keys: Record<string, string>, namespace = 'flux-system'): string {
  const data = Object.entries(keys)
    .map(([k, pem]) => `  ${k}: ${Buffer.from(pem).toString('base64')}`)
    .join('\n');
  return `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\ntype: Opaque\ndata:\n${data}\n`;
}
