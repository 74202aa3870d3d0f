/**
 * `spec.verify` (docs/gates.md): whether a digest carries a cosign signature by a trusted key.
 * The registry reads (registry/signatures.ts) and the store's cache are this edge's; the check
 * of the material itself (`checkLegacy`) is pure. A digest's content never changes, so an
 * acceptance is remembered by verifier and digest and a rescan asks the registry nothing for it;
 * a refusal is not remembered, since the signature may be pushed after the image.
 */
import { createHash, createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';
import type { Config, ImagePolicy } from '../config/index.js';
import type { VerifiedCache } from '../store/index.js';
import { RuntimeError, errorMessage } from '../util/index.js';
import type { RegistryClient, RepositoryRef, SignatureFind } from './registry/index.js';

/** cosign's simple-signing payload type. */
export const COSIGN_PAYLOAD_TYPE = 'cosign container image signature';

export interface TrustedKey {
  /** The Secret's key, e.g. `cosign.pub`. */
  name: string;
  key: KeyObject;
}

export interface Verifier {
  /** Names the keys' Secret, for sentences: `Secret flux-system/cosign (cosign.pub)`. */
  label: string;
  keys: TrustedKey[];
  /** Hash of the keys: the cache's key, so another key set never reuses an acceptance. */
  fingerprint: string;
}

export type Verdict = { verified: true; signer: string; cached: boolean } | { verified: false; why: string };

/** The policy's verifier, or null when it has no `spec.verify`. Throws naming the Secret and key. */
export function verifierFor(policy: ImagePolicy, config: Pick<Config, 'secrets'>): Verifier | null {
  const v = policy.spec.verify;
  if (!v) return null;
  const where = `ImagePolicy ${policy.metadata.namespace}/${policy.metadata.name}: spec.verify.secretRef`;
  if (v.secretRef === undefined) throw new RuntimeError(`${where} is required (a Secret with *.pub keys)`);
  const ref = `${policy.metadata.namespace}/${v.secretRef}`;
  const secret = config.secrets.get(ref);
  if (!secret) throw new RuntimeError(`${where} names Secret ${ref}, which is not in the configuration`);
  const keys: TrustedKey[] = [];
  for (const name of Object.keys(secret.data).sort()) {
    if (!name.endsWith('.pub')) continue;
    try {
      keys.push({ name, key: createPublicKey(secret.data[name]!) });
    } catch (err) {
      throw new RuntimeError(
        `${where}: Secret ${ref} key ${name} is not a PEM public key (${errorMessage(err)})`,
      );
    }
  }
  if (keys.length === 0) throw new RuntimeError(`${where}: Secret ${ref} has no key ending in .pub`);
  const h = createHash('sha256').update('cosign-keys\n');
  for (const k of keys) h.update(k.key.export({ type: 'spki', format: 'der' })).update('\n');
  return {
    label: `Secret ${ref} (${keys.map((k) => k.name).join(', ')})`,
    keys,
    fingerprint: h.digest('hex').slice(0, 32),
  };
}

interface SimpleSigning {
  critical?: {
    type?: unknown;
    image?: { 'docker-manifest-digest'?: unknown };
    identity?: { 'docker-reference'?: unknown };
  };
}

function signedBy(keys: readonly TrustedKey[], payload: Buffer, signature: Buffer): TrustedKey | undefined {
  return keys.find((k) => {
    // Ed25519 signs the message itself; ECDSA (cosign's default, DER) and RSA over SHA-256.
    const alg = k.key.asymmetricKeyType === 'ed25519' ? null : 'sha256';
    try {
      return verifySignature(alg, payload, k.key, signature);
    } catch {
      return false;
    }
  });
}

/**
 * Pure: whether one of the `.sig` tag's signatures is by a trusted key over a payload that names
 * exactly `digest`. The signature is checked first, so a payload is never believed unsigned.
 */
export function checkLegacy(verifier: Verifier, digest: string, found: SignatureFind): Verdict {
  const why: string[] = [...found.problems];
  for (const s of found.legacy) {
    const key = signedBy(verifier.keys, s.payload, Buffer.from(s.signature, 'base64'));
    if (!key) {
      why.push(`the signature over ${s.layer} is by none of the keys of ${verifier.label}`);
      continue;
    }
    let doc: SimpleSigning;
    try {
      doc = JSON.parse(s.payload.toString('utf8')) as SimpleSigning;
    } catch {
      why.push(`the signed payload ${s.layer} is not JSON`);
      continue;
    }
    if (doc.critical?.type !== COSIGN_PAYLOAD_TYPE) {
      why.push(`the signed payload ${s.layer} is not a cosign image signature`);
      continue;
    }
    const named = doc.critical.image?.['docker-manifest-digest'];
    if (named !== digest) {
      why.push(`the signed payload names ${String(named)}, not ${digest}`);
      continue;
    }
    return { verified: true, signer: key.name, cached: false };
  }
  return { verified: false, why: why.length > 0 ? why.join('; ') : 'no signature found' };
}

/**
 * Verifies one digest: the cache first, else the registry's signatures. A registry error is a
 * refusal with its words (the tag is not a candidate this pass), never a pass.
 */
export async function verifyDigest(
  verifier: Verifier,
  client: Pick<RegistryClient, 'signatures'>,
  ref: RepositoryRef,
  digest: string,
  cache: VerifiedCache,
  now: Date,
): Promise<Verdict> {
  const key = `${verifier.fingerprint}@${digest}`;
  const hit = await cache.get(key).catch(() => undefined);
  if (hit !== undefined) return { verified: true, signer: hit, cached: true };
  let found: SignatureFind;
  try {
    found = await client.signatures(ref, digest);
  } catch (err) {
    return { verified: false, why: `reading its signatures failed: ${errorMessage(err)}` };
  }
  const verdict = checkLegacy(verifier, digest, found);
  // The cache only saves requests: a store that cannot take the entry costs a fetch next time.
  if (verdict.verified) await cache.set(key, verdict.signer, now).catch(() => undefined);
  return verdict;
}
