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
import type { BundleFind, RegistryClient, RepositoryRef, SignatureFind } from './registry/index.js';
import type { TrustedRoot } from '@sigstore/protobuf-specs';
import {
  checkBundles,
  checkLegacyKeyless,
  identityMatchers,
  parseTrustedRoot,
  rootFingerprint,
  simpleSigningProblem,
  type BundleTrust,
  type IdentityMatcher,
} from './sigstore.js';

export { COSIGN_PAYLOAD_TYPE } from './sigstore.js';

export interface TrustedKey {
  /** The Secret's key, e.g. `cosign.pub`. */
  name: string;
  key: KeyObject;
}

export interface Verifier {
  /** Names the keys' Secret, for sentences: `Secret flux-system/cosign (cosign.pub)`; empty when keyless only. */
  keysLabel: string;
  /** Empty when keyless only. */
  keys: TrustedKey[];
  /** `matchOIDCIdentity`, compiled (keyless); empty when keys only. */
  identities: IdentityMatcher[];
  /** `trustedRootSecretRef`'s `trusted_root.json`: keyless needs it; keyed bundles use its logs. */
  root: TrustedRoot | null;
  /** Hash of all of the above: the cache's key, so another verifier never reuses an acceptance. */
  fingerprint: string;
}

export type Verdict = { verified: true; signer: string; cached: boolean } | { verified: false; why: string };
type Accepted = Extract<Verdict, { verified: true }>;

/** The key of the trusted root's Secret. */
export const TRUSTED_ROOT_KEY = 'trusted_root.json';

function secretOf(policy: ImagePolicy, config: Pick<Config, 'secrets'>, field: string, name: string) {
  const where = `ImagePolicy ${policy.metadata.namespace}/${policy.metadata.name}: spec.verify.${field}`;
  const ref = `${policy.metadata.namespace}/${name}`;
  const secret = config.secrets.get(ref);
  if (!secret) throw new RuntimeError(`${where} names Secret ${ref}, which is not in the configuration`);
  return { where, ref, secret };
}

function keysOf(policy: ImagePolicy, config: Pick<Config, 'secrets'>, name: string): TrustedKey[] {
  const { where, ref, secret } = secretOf(policy, config, 'secretRef', name);
  const keys: TrustedKey[] = [];
  for (const key of Object.keys(secret.data).sort()) {
    if (!key.endsWith('.pub')) continue;
    try {
      keys.push({ name: key, key: createPublicKey(secret.data[key]!) });
    } catch (err) {
      throw new RuntimeError(
        `${where}: Secret ${ref} key ${key} is not a PEM public key (${errorMessage(err)})`,
      );
    }
  }
  if (keys.length === 0) throw new RuntimeError(`${where}: Secret ${ref} has no key ending in .pub`);
  return keys;
}

/** The policy's verifier, or null when it has no `spec.verify`. Throws naming the Secret and key. */
export function verifierFor(policy: ImagePolicy, config: Pick<Config, 'secrets'>): Verifier | null {
  const v = policy.spec.verify;
  if (!v) return null;
  const keyless = v.matchOIDCIdentity.length > 0;
  if (v.secretRef === undefined && !keyless)
    throw new RuntimeError(
      `ImagePolicy ${policy.metadata.namespace}/${policy.metadata.name}: spec.verify.secretRef is required (a Secret with *.pub keys), or matchOIDCIdentity with trustedRootSecretRef`,
    );
  const keys = v.secretRef === undefined ? [] : keysOf(policy, config, v.secretRef);
  let root: TrustedRoot | null = null;
  if (v.trustedRootSecretRef !== undefined) {
    const { where, ref, secret } = secretOf(policy, config, 'trustedRootSecretRef', v.trustedRootSecretRef);
    const data = secret.data[TRUSTED_ROOT_KEY];
    if (!data) throw new RuntimeError(`${where}: Secret ${ref} has no key ${TRUSTED_ROOT_KEY}`);
    try {
      root = parseTrustedRoot(data.toString('utf8'), keyless);
    } catch (err) {
      throw new RuntimeError(`${where}: Secret ${ref} key ${TRUSTED_ROOT_KEY} ${errorMessage(err)}`);
    }
  } else if (keyless) {
    throw new RuntimeError(
      `ImagePolicy ${policy.metadata.namespace}/${policy.metadata.name}: spec.verify.matchOIDCIdentity needs spec.verify.trustedRootSecretRef (a Secret with ${TRUSTED_ROOT_KEY}, as cosign trusted-root create writes it); pawl fetches no root at run time`,
    );
  }
  const identities = identityMatchers(v.matchOIDCIdentity);
  const h = createHash('sha256').update('cosign-keys\n');
  for (const k of keys) h.update(k.key.export({ type: 'spki', format: 'der' })).update('\n');
  // Keys alone hash as before, so acceptances cached by an older pawl stay valid.
  if (keyless || root) {
    h.update(JSON.stringify(v.matchOIDCIdentity)).update('\n');
    h.update(root ? rootFingerprint(root) : '');
  }
  const keysLabel =
    v.secretRef !== undefined
      ? `Secret ${policy.metadata.namespace}/${v.secretRef} (${keys.map((k) => k.name).join(', ')})`
      : '';
  return { keysLabel, keys, identities, root, fingerprint: h.digest('hex').slice(0, 32) };
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

const trustOf = (v: Verifier): BundleTrust => ({
  keys: v.keys,
  identities: v.identities,
  root: v.root,
  keysLabel: v.keysLabel,
});

/**
 * Pure: whether one of the `.sig` tag's signatures holds over a payload that names exactly
 * `digest`: a layer with a certificate is keyless (../sigstore.ts, against the trusted root and
 * `matchOIDCIdentity`), any other is checked against the keys. The signature is checked first,
 * so a payload is never believed unsigned.
 */
export function checkLegacy(verifier: Verifier, digest: string, found: SignatureFind): Verdict {
  const why: string[] = [...found.problems];
  for (const s of found.legacy) {
    if (s.certificate !== undefined) {
      const v = checkLegacyKeyless(trustOf(verifier), digest, s);
      if (v.ok) return { verified: true, signer: v.signer, cached: false };
      why.push(v.why);
      continue;
    }
    if (verifier.keys.length === 0) {
      why.push(`the signature over ${s.layer} is by a key, and spec.verify has no secretRef`);
      continue;
    }
    const key = signedBy(verifier.keys, s.payload, Buffer.from(s.signature, 'base64'));
    if (!key) {
      why.push(`the signature over ${s.layer} is by none of the keys of ${verifier.keysLabel}`);
      continue;
    }
    const problem = simpleSigningProblem(s.payload, digest);
    if (problem) {
      why.push(`the signed payload ${s.layer} ${problem}`);
      continue;
    }
    return { verified: true, signer: key.name, cached: false };
  }
  return { verified: false, why: why.length > 0 ? why.join('; ') : 'no signature found' };
}

/**
 * Verifies one digest: the cache first; else, with keys, the legacy `.sig` tag (keyed or keyless)
 * then the Sigstore bundles referring to it; keyless only, the bundles then the `.sig` tag. A registry error is a refusal with its words (the tag is not a
 * candidate this pass), never a pass.
 */
export async function verifyDigest(
  verifier: Verifier,
  client: Pick<RegistryClient, 'signatures' | 'bundles'>,
  ref: RepositoryRef,
  digest: string,
  cache: VerifiedCache,
  now: Date,
): Promise<Verdict> {
  const key = `${verifier.fingerprint}@${digest}`;
  const hit = await cache.get(key).catch(() => undefined);
  if (hit !== undefined) return { verified: true, signer: hit, cached: true };
  const why: string[] = [];
  const legacy = async (): Promise<Accepted | null> => {
    try {
      const found: SignatureFind = await client.signatures(ref, digest);
      const v = checkLegacy(verifier, digest, found);
      if (v.verified) return v;
      why.push(v.why);
    } catch (err) {
      why.push(`reading its signatures failed: ${errorMessage(err)}`);
    }
    return null;
  };
  const bundles = async (): Promise<Accepted | null> => {
    try {
      const found: BundleFind = await client.bundles(ref, digest);
      const b = checkBundles(trustOf(verifier), digest, found);
      if (b.verified) return { verified: true, signer: b.signer, cached: false };
      why.push(b.why);
    } catch (err) {
      why.push(`reading its Sigstore bundles failed: ${errorMessage(err)}`);
    }
    return null;
  };
  // Where each kind of signer most likely signed first: keys in cosign 2's `.sig` tag, keyless
  // only in cosign 3's bundles (its default); the other way is tried when the first holds none.
  const [first, second] = verifier.keys.length > 0 ? [legacy, bundles] : [bundles, legacy];
  const verdict = (await first()) ?? (await second());
  if (!verdict) return { verified: false, why: why.join('; ') };
  // The cache only saves requests: a store that cannot take the entry costs a fetch next time.
  await cache.set(key, verdict.signer, now).catch(() => undefined);
  return verdict;
}
