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
import {
  CERTIFICATE_ANNOTATION,
  REKOR_BUNDLE_ANNOTATION,
  SIGN_PREDICATE,
  type BundleFind,
  type FoundBundle,
  type LegacySignature,
} from './registry/index.js';

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
/** cosign's simple-signing payload type. */
export const COSIGN_PAYLOAD_TYPE = 'cosign container image signature';

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

// --- keyless signatures of the legacy `.sig` tag -----------------------------------------

interface SimpleSigning {
  critical?: {
    type?: unknown;
    image?: { 'docker-manifest-digest'?: unknown };
  };
}

/** The simple-signing payload's problem, or undefined when it is cosign's signature of `digest`. */
export function simpleSigningProblem(payload: Buffer, digest: string): string | undefined {
  let doc: SimpleSigning;
  try {
    doc = JSON.parse(payload.toString('utf8')) as SimpleSigning;
  } catch {
    return 'is not JSON';
  }
  if (doc?.critical?.type !== COSIGN_PAYLOAD_TYPE) return 'is not a cosign image signature';
  const named = doc.critical.image?.['docker-manifest-digest'];
  return named === digest ? undefined : `names ${String(named)}, not ${digest}`;
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]*?)-----END CERTIFICATE-----/g;

/** The DER certificates of a PEM text, in order. */
function pemCertificates(text: string): Buffer[] {
  return [...text.matchAll(PEM_BLOCK)].map((m) => Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** cosign's `dev.sigstore.cosign/bundle` annotation (pkg/cosign/bundle: RekorBundle). */
interface RekorBundle {
  SignedEntryTimestamp: string;
  Payload: { body: string; integratedTime: number; logIndex: number; logID: string };
}

function parseRekorBundle(text: string): RekorBundle | string {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    return 'is not JSON';
  }
  const b = j as Partial<RekorBundle> | null;
  const p = b?.Payload;
  if (typeof b?.SignedEntryTimestamp !== 'string' || !BASE64.test(b.SignedEntryTimestamp))
    return 'has no SignedEntryTimestamp (base64)';
  if (typeof p !== 'object' || p === null) return 'has no Payload';
  if (typeof p.body !== 'string' || !BASE64.test(p.body)) return 'has no Payload.body (base64)';
  for (const f of ['integratedTime', 'logIndex'] as const)
    if (!Number.isSafeInteger(p[f]) || p[f] < 0) return `has no Payload.${f} (a whole number)`;
  if (typeof p.logID !== 'string' || !/^[0-9a-f]{64}$/i.test(p.logID))
    return 'has no Payload.logID (the log key’s SHA-256, hex)';
  return b as RekorBundle;
}

interface HashedRekord {
  kind?: unknown;
  apiVersion?: unknown;
  spec?: { signature?: { publicKey?: { content?: unknown } } };
}

export type LegacyBundle = { ok: true; json: unknown; body: HashedRekord } | { ok: false; why: string };

/**
 * A keyless `.sig` layer as the Sigstore bundle v0.1 it is, the conversion cosign itself makes
 * to verify it: a message signature (SHA-256 of the payload), the certificate and its chain, and
 * the Rekor entry with its SET as the inclusion promise. Nothing is checked here but the shape.
 */
export function legacyToBundle(sig: LegacySignature): LegacyBundle {
  if (sig.certificate === undefined) return { ok: false, why: `has no ${CERTIFICATE_ANNOTATION} annotation` };
  const leaf = pemCertificates(sig.certificate);
  if (leaf.length !== 1)
    return {
      ok: false,
      why: `has a ${CERTIFICATE_ANNOTATION} annotation holding ${leaf.length} PEM certificates, not one`,
    };
  if (sig.rekorBundle === undefined)
    return {
      ok: false,
      why: `has no ${REKOR_BUNDLE_ANNOTATION} annotation (the Rekor entry); pawl verifies keyless signatures offline, against the log entry cosign stores with them`,
    };
  const rb = parseRekorBundle(sig.rekorBundle);
  if (typeof rb === 'string')
    return { ok: false, why: `has a ${REKOR_BUNDLE_ANNOTATION} annotation that ${rb}` };
  let body: HashedRekord;
  try {
    body = JSON.parse(Buffer.from(rb.Payload.body, 'base64').toString('utf8')) as HashedRekord;
  } catch {
    return { ok: false, why: `has a Rekor entry whose body is not JSON` };
  }
  if (body?.kind !== 'hashedrekord' || body.apiVersion !== '0.0.1')
    return {
      ok: false,
      why: `has a Rekor entry of kind ${String(body?.kind)} ${String(body?.apiVersion)}, not hashedrekord 0.0.1 (what cosign 2 writes)`,
    };
  if (!BASE64.test(sig.signature)) return { ok: false, why: 'has a signature that is not base64' };
  const chain = sig.chain === undefined ? [] : pemCertificates(sig.chain);
  const json = {
    mediaType: 'application/vnd.dev.sigstore.bundle+json;version=0.1',
    verificationMaterial: {
      x509CertificateChain: {
        certificates: [leaf[0]!, ...chain].map((c) => ({ rawBytes: c.toString('base64') })),
      },
      tlogEntries: [
        {
          logIndex: String(rb.Payload.logIndex),
          logId: { keyId: Buffer.from(rb.Payload.logID, 'hex').toString('base64') },
          kindVersion: { kind: 'hashedrekord', version: '0.0.1' },
          integratedTime: String(rb.Payload.integratedTime),
          inclusionPromise: { signedEntryTimestamp: rb.SignedEntryTimestamp },
          canonicalizedBody: rb.Payload.body,
        },
      ],
      timestampVerificationData: { rfc3161Timestamps: [] },
    },
    messageSignature: {
      messageDigest: {
        algorithm: 'SHA2_256',
        digest: createHash('sha256').update(sig.payload).digest('base64'),
      },
      signature: sig.signature,
    },
  };
  return { ok: true, json, body };
}

/**
 * One keyless `.sig` layer against the trust, as a bundle is: the Verifier with the keyless
 * thresholds, over the payload as the signed artifact; the Rekor entry's certificate is the
 * layer's (cosign compares them, @sigstore/verify compares only signature and digest); the
 * identity; and only then the payload's digest.
 */
export function checkLegacyKeyless(trust: BundleTrust, digest: string, sig: LegacySignature): BundleVerdict {
  const where = `the keyless signature over ${sig.layer}`;
  if (trust.identities.length === 0)
    return { ok: false, why: `${where} has a certificate, and spec.verify has no matchOIDCIdentity` };
  if (!trust.root)
    return { ok: false, why: `${where} is keyless, and spec.verify has no trustedRootSecretRef` };
  const conv = legacyToBundle(sig);
  if (!conv.ok) return { ok: false, why: `${where} ${conv.why}` };
  let entity: SignedEntity;
  try {
    entity = toSignedEntity(bundleFromJSON(conv.json), sig.payload);
  } catch (err) {
    return { ok: false, why: `${where} does not convert to a Sigstore bundle: ${errorMessage(err)}` };
  }
  let s: Signer;
  try {
    s = run(trust.root, entity, FULL);
  } catch (err) {
    return { ok: false, why: `${where} does not verify against the trusted root: ${reason(err)}` };
  }
  const logged = conv.body.spec?.signature?.publicKey?.content;
  const loggedCerts =
    typeof logged === 'string' ? pemCertificates(Buffer.from(logged, 'base64').toString()) : [];
  const leaf = pemCertificates(sig.certificate!)[0]!;
  if (loggedCerts.length !== 1 || !loggedCerts[0]!.equals(leaf))
    return { ok: false, why: `${where} has a Rekor entry for another certificate than its own` };
  const issuer = s.identity?.extensions?.issuer;
  const subject = s.identity?.subjectAlternativeName;
  if (!matchIdentity(trust.identities, issuer, subject))
    return {
      ok: false,
      why: `${where} is signed by ${subject ?? 'no subject'} (issuer ${issuer ?? 'none'}), which matches no matchOIDCIdentity`,
    };
  const problem = simpleSigningProblem(sig.payload, digest);
  if (problem) return { ok: false, why: `the signed payload ${sig.layer} ${problem}` };
  return { ok: true, signer: `${subject} (${issuer}; .sig)` };
}
