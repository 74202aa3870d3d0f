/**
 * Pure checks of Sigstore bundles (docs/gates.md): cosign 3's image signature is a DSSE envelope
 * of an in-toto statement (predicate `https://sigstore.dev/cosign/sign/v1`) whose subject is the
 * image's digest, signed with a key (`--key`) or a short-lived Fulcio certificate (keyless), with
 * a Rekor entry. The cryptography — signature, certificate chain, SCTs, log inclusion — is
 * `@sigstore/verify`'s; pawl decides which thresholds apply, matches the identity with RE2 and
 * checks the statement names the exact digest it would write.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { bundleFromJSON, type Bundle } from '@sigstore/bundle';
import { TrustedRoot } from '@sigstore/protobuf-specs';
import {
  toSignedEntity,
  toTrustMaterial,
  Verifier as SigstoreVerifier,
  type SignedEntity,
  type Signer,
  type VerifierOptions,
} from '@sigstore/verify';
import { compileRegex, type Re2 } from '../go/index.js';
import { errorMessage } from '../util/index.js';
import { SIGN_PREDICATE, type BundleFind, type FoundBundle } from './registry/index.js';

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

/** One `matchOIDCIdentity` pair, compiled: both anchored, so the whole value must match. */
export interface IdentityMatcher {
  issuer: Re2;
  subject: Re2;
  /** As written, for sentences. */
  text: { issuer: string; subject: string };
}

/** Compiles `matchOIDCIdentity`; RE2, each wrapped in `^(?:…)$`. Throws naming the bad pattern. */
export function identityMatchers(pairs: readonly { issuer: string; subject: string }[]): IdentityMatcher[] {
  return pairs.map((p) => ({
    issuer: compileRegex(`^(?:${p.issuer})$`),
    subject: compileRegex(`^(?:${p.subject})$`),
    text: { ...p },
  }));
}

/** The pair the certificate's issuer and subject match, or undefined. */
export function matchIdentity(
  matchers: readonly IdentityMatcher[],
  issuer: string | undefined,
  subject: string | undefined,
): IdentityMatcher | undefined {
  if (issuer === undefined || subject === undefined) return undefined;
  return matchers.find((m) => m.issuer.test(issuer) && m.subject.test(subject));
}

/** A Sigstore `trusted_root.json`, parsed; throws with what is missing for the use asked. */
export function parseTrustedRoot(text: string, keyless: boolean): TrustedRoot {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`is not JSON (${errorMessage(err)})`, { cause: err });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error('is not a trusted root object');
  let root: TrustedRoot;
  try {
    root = TrustedRoot.fromJSON(json);
  } catch (err) {
    throw new Error(`is not a Sigstore trusted root (${errorMessage(err)})`, { cause: err });
  }
  if (root.tlogs.length === 0)
    throw new Error('lists no transparency log (tlogs); pawl requires one Rekor entry per signature');
  if (keyless && root.certificateAuthorities.length === 0)
    throw new Error('lists no certificate authority (certificateAuthorities) for keyless certificates');
  if (keyless && root.ctlogs.length === 0)
    throw new Error('lists no certificate transparency log (ctlogs) for the certificates’ SCTs');
  try {
    toTrustMaterial(root);
  } catch (err) {
    throw new Error(`has a key or certificate that does not parse (${errorMessage(err)})`, { cause: err });
  }
  return root;
}

export interface BundleTrust {
  keys: readonly { name: string; key: KeyObject }[];
  identities: readonly IdentityMatcher[];
  root: TrustedRoot | null;
  /** For sentences: `Secret flux-system/cosign (cosign.pub)`. */
  keysLabel: string;
}

export type BundleVerdict = { ok: true; signer: string } | { ok: false; why: string };

/**
 * What Sigstore requires of a bundle: one verified log entry and one timestamp (the entry's
 * integrated time), and for a certificate one SCT. A keyed bundle with no trusted root is checked
 * as a legacy keyed signature is (its key and content), its log entry unread: documented, not
 * silent (docs/gates.md).
 */
const FULL: VerifierOptions = { tlogThreshold: 1, timestampThreshold: 1, ctlogThreshold: 1 };
const KEY_ONLY: VerifierOptions = { tlogThreshold: 0, timestampThreshold: 0, ctlogThreshold: 0 };

const EMPTY_ROOT = TrustedRoot.fromJSON({});

/** The statement's problem, or undefined when it is cosign's image signature of `digest`. */
function statementProblem(bundle: Bundle, digest: string): string | undefined {
  if (bundle.content.$case !== 'dsseEnvelope')
    return 'is a message signature, which names no image; pawl reads cosign’s DSSE image signatures (cosign sign --new-bundle-format)';
  const env = bundle.content.dsseEnvelope;
  if (env.payloadType !== IN_TOTO_PAYLOAD_TYPE)
    return `signs a ${env.payloadType} payload, not an in-toto statement`;
  let st: { _type?: unknown; predicateType?: unknown; subject?: unknown };
  try {
    st = JSON.parse(Buffer.from(env.payload).toString('utf8')) as typeof st;
  } catch {
    return 'signs a payload that is not JSON';
  }
  if (typeof st._type !== 'string' || !st._type.startsWith('https://in-toto.io/Statement/'))
    return 'signs a payload that is not an in-toto statement';
  if (st.predicateType !== SIGN_PREDICATE)
    return `is an attestation (${String(st.predicateType)}), not an image signature (${SIGN_PREDICATE})`;
  const [alg, hex] = digest.split(':') as [string, string];
  const subjects = Array.isArray(st.subject) ? (st.subject as { digest?: Record<string, unknown> }[]) : [];
  if (subjects.some((s) => s?.digest?.[alg] === hex)) return undefined;
  const named = subjects.map((s) => (s?.digest?.[alg] ? `${alg}:${String(s.digest[alg])}` : '?'));
  return `signs a statement naming ${named.join(', ') || 'no subject'}, not ${digest}`;
}

function run(root: TrustedRoot, entity: SignedEntity, opts: VerifierOptions, key?: KeyObject): Signer {
  const material = key
    ? toTrustMaterial(root, () => ({ publicKey: key, validFor: () => true }))
    : toTrustMaterial(root);
  return new SigstoreVerifier(material, opts).verify(entity);
}

const reason = (err: unknown): string => {
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: unknown }).cause;
  const base = typeof code === 'string' ? `${code}: ${errorMessage(err)}` : errorMessage(err);
  return cause instanceof Error ? `${base} (${cause.message})` : base;
};

/** One bundle against the trust: ok with who signed, or why not. */
export function checkBundle(trust: BundleTrust, digest: string, found: FoundBundle): BundleVerdict {
  const where = `the bundle ${found.manifest}`;
  let bundle: Bundle;
  let entity: SignedEntity;
  try {
    bundle = bundleFromJSON(found.json);
    entity = toSignedEntity(bundle);
  } catch (err) {
    return { ok: false, why: `${where} is not a Sigstore bundle: ${errorMessage(err)}` };
  }
  const material = bundle.verificationMaterial.content;
  let signer: string;
  if (material.$case === 'publicKey') {
    if (trust.keys.length === 0)
      return { ok: false, why: `${where} is signed with a key, and spec.verify has no secretRef` };
    // Without a root the log entry cannot be checked; the key and the content still are.
    const opts = trust.root ? FULL : KEY_ONLY;
    const checked = trust.root ? entity : { ...entity, tlogEntries: [], timestamps: [] };
    const errors: string[] = [];
    const by = trust.keys.find((k) => {
      try {
        run(trust.root ?? EMPTY_ROOT, checked, { ...opts, ctlogThreshold: 0 }, k.key);
        return true;
      } catch (err) {
        errors.push(reason(err));
        return false;
      }
    });
    if (!by)
      return {
        ok: false,
        why: `${where} does not verify with the keys of ${trust.keysLabel}: ${[...new Set(errors)].join('; ')}`,
      };
    signer = `${by.name} (bundle)`;
  } else {
    if (trust.identities.length === 0)
      return {
        ok: false,
        why: `${where} is keyless (a certificate), and spec.verify has no matchOIDCIdentity`,
      };
    if (!trust.root)
      return { ok: false, why: `${where} is keyless, and spec.verify has no trustedRootSecretRef` };
    let s: Signer;
    try {
      s = run(trust.root, entity, FULL);
    } catch (err) {
      return { ok: false, why: `${where} does not verify against the trusted root: ${reason(err)}` };
    }
    const issuer = s.identity?.extensions?.issuer;
    const subject = s.identity?.subjectAlternativeName;
    if (!matchIdentity(trust.identities, issuer, subject))
      return {
        ok: false,
        why: `${where} is signed by ${subject ?? 'no subject'} (issuer ${issuer ?? 'none'}), which matches no matchOIDCIdentity`,
      };
    signer = `${subject} (${issuer})`;
  }
  // The signature holds: only now is what it says believed.
  const problem = statementProblem(bundle, digest);
  if (problem) return { ok: false, why: `${where} ${problem}` };
  return { ok: true, signer };
}

/** The first bundle that verifies, or every reason none did. */
export function checkBundles(
  trust: BundleTrust,
  digest: string,
  found: BundleFind,
): { verified: true; signer: string } | { verified: false; why: string } {
  const why: string[] = [...found.problems];
  for (const b of found.bundles) {
    const v = checkBundle(trust, digest, b);
    if (v.ok) return { verified: true, signer: v.signer };
    why.push(v.why);
  }
  return { verified: false, why: why.length > 0 ? why.join('; ') : 'no Sigstore bundle found' };
}

/** A stable hash of a root, for the cache's key. */
export function rootFingerprint(root: TrustedRoot): string {
  return createHash('sha256')
    .update(JSON.stringify(TrustedRoot.toJSON(root)))
    .digest('hex');
}
