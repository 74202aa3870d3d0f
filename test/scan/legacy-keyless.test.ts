/**
 * The keyless `.sig` check (src/scan/sigstore.ts `legacyToBundle`, `checkLegacyKeyless`, and
 * `checkLegacy` routing to it) with layers annotated as cosign 2's keyless `cosign sign` writes
 * them (test/helpers/sigstore.ts) and real @sigstore/verify: the conversion names the annotation
 * that is missing or wrong, and each way the signature can be wrong is refused with why.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  checkLegacyKeyless,
  identityMatchers,
  legacyToBundle,
  parseTrustedRoot,
  type BundleTrust,
} from '../../src/scan/sigstore.js';
import { checkLegacy, type Verifier } from '../../src/scan/verify.js';
import type { LegacySignature } from '../../src/scan/registry/index.js';
import { simpleSigningPayload } from '../helpers/cosign.js';
import {
  legacyKeylessAnnotations,
  testTrustRoot,
  type Identity,
  type LegacyKeylessOptions,
} from '../helpers/sigstore.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;
const GH = 'https://token.actions.githubusercontent.com';
const WHO: Identity = {
  issuer: GH,
  subject: 'https://github.com/org/app/.github/workflows/release.yml@refs/heads/main',
};
const root = testTrustRoot();
const stranger = testTrustRoot();

const trust = (over: Partial<BundleTrust> = {}): BundleTrust => ({
  keys: [],
  identities: identityMatchers([
    { issuer: GH.replace(/\./g, '\\.'), subject: 'https://github\\.com/org/app/.*' },
  ]),
  root: parseTrustedRoot(root.json, true),
  keysLabel: '',
  ...over,
});

/** A layer as the registry client hands it over: payload, signature and the three annotations. */
function layer(opts: LegacyKeylessOptions & { who?: Identity; digest?: string } = {}): LegacySignature {
  const payload = simpleSigningPayload('r.example/org/app', opts.digest ?? DIGEST);
  const a = legacyKeylessAnnotations(root, payload, opts.who ?? WHO, opts);
  return {
    payload,
    signature: a['dev.cosignproject.cosign/signature']!,
    layer: `sha256:${createHash('sha256').update(payload).digest('hex')}`,
    ...(a['dev.sigstore.cosign/certificate'] !== undefined && {
      certificate: a['dev.sigstore.cosign/certificate'],
    }),
    ...(a['dev.sigstore.cosign/chain'] !== undefined && { chain: a['dev.sigstore.cosign/chain'] }),
    ...(a['dev.sigstore.cosign/bundle'] !== undefined && { rekorBundle: a['dev.sigstore.cosign/bundle'] }),
  };
}

const why = (v: ReturnType<typeof checkLegacyKeyless>): string => (v.ok ? `ok: ${v.signer}` : v.why);

describe('legacyToBundle', () => {
  test('a keyless layer becomes the v0.1 bundle cosign makes of it', () => {
    const l = layer();
    const b = legacyToBundle(l);
    assert.ok(b.ok, b.ok ? '' : b.why);
    const j = b.json as {
      mediaType: string;
      messageSignature: { messageDigest: { digest: string }; signature: string };
      verificationMaterial: {
        x509CertificateChain: { certificates: unknown[] };
        tlogEntries: { kindVersion: { kind: string }; logIndex: string; inclusionPromise: unknown }[];
      };
    };
    assert.equal(j.mediaType, 'application/vnd.dev.sigstore.bundle+json;version=0.1');
    assert.equal(
      j.messageSignature.messageDigest.digest,
      createHash('sha256').update(l.payload).digest('base64'),
    );
    assert.equal(j.messageSignature.signature, l.signature);
    // The leaf, then the chain annotation's CA.
    assert.equal(j.verificationMaterial.x509CertificateChain.certificates.length, 2);
    const e = j.verificationMaterial.tlogEntries[0]!;
    assert.equal(e.kindVersion.kind, 'hashedrekord');
    assert.equal(e.logIndex, '7');
    assert.ok(e.inclusionPromise);
  });

  test('a missing or malformed annotation is named', () => {
    const cases: [string, LegacySignature][] = [
      ['has no dev.sigstore.cosign/certificate annotation', { ...layer(), certificate: undefined }],
      ['holding 0 PEM certificates, not one', { ...layer(), certificate: 'not pem' }],
      [
        'has no dev.sigstore.cosign/bundle annotation \\(the Rekor entry\\)',
        layer({ omit: 'dev.sigstore.cosign/bundle' }),
      ],
      ['dev.sigstore.cosign/bundle annotation that is not JSON', { ...layer(), rekorBundle: '{' }],
      ['that has no SignedEntryTimestamp', { ...layer(), rekorBundle: '{"Payload":{}}' }],
      [
        'that has no Payload.logID',
        {
          ...layer(),
          rekorBundle: JSON.stringify({
            SignedEntryTimestamp: 'AA==',
            Payload: { body: 'e30=', integratedTime: 1, logIndex: 0, logID: 'xyz' },
          }),
        },
      ],
      [
        'of kind rekord 0.0.1, not hashedrekord 0.0.1',
        {
          ...layer(),
          rekorBundle: JSON.stringify({
            SignedEntryTimestamp: 'AA==',
            Payload: {
              body: Buffer.from('{"kind":"rekord","apiVersion":"0.0.1"}').toString('base64'),
              integratedTime: 1,
              logIndex: 0,
              logID: 'ab'.repeat(32),
            },
          }),
        },
      ],
    ];
    for (const [re, l] of cases) {
      const b = legacyToBundle(l);
      assert.equal(b.ok, false, re);
      assert.match(b.ok ? '' : b.why, new RegExp(re));
    }
  });
});

describe('checkLegacyKeyless', () => {
  test('the right identity, from the trusted CA, logged: ok, naming who', () => {
    assert.equal(why(checkLegacyKeyless(trust(), DIGEST, layer())), `ok: ${WHO.subject} (${GH}; .sig)`);
  });

  test('every way it can be wrong is refused, saying why', () => {
    const cases: [string, LegacySignature, BundleTrust?][] = [
      [
        'is signed by https://github.com/evil/x \\(issuer .*\\), which matches no matchOIDCIdentity',
        layer({ who: { ...WHO, subject: 'https://github.com/evil/x' } }),
      ],
      [
        'issuer https://accounts.google.com\\)',
        layer({ who: { ...WHO, issuer: 'https://accounts.google.com' } }),
      ],
      ['does not verify against the trusted root: CERTIFICATE_ERROR', layer({ ca: stranger })],
      ['TLOG_INCLUSION_PROMISE_ERROR', layer({ tamper: 'body' })],
      ['TLOG_INCLUSION_PROMISE_ERROR', layer({ tamper: 'integratedTime' })],
      ['CERTIFICATE_ERROR', layer({ integratedTime: new Date(Date.now() + 3_600_000) })],
      [`the signed payload sha256:[0-9a-f]+ names ${OTHER}, not ${DIGEST}`, layer({ digest: OTHER })],
      ['has a certificate, and spec.verify has no matchOIDCIdentity', layer(), trust({ identities: [] })],
      ['is keyless, and spec.verify has no trustedRootSecretRef', layer(), trust({ root: null })],
    ];
    for (const [re, l, t] of cases) {
      const v = checkLegacyKeyless(t ?? trust(), DIGEST, l);
      assert.match(why(v), new RegExp(re));
      assert.equal(v.ok, false, re);
    }
  });

  test('a signature over other bytes than the payload is refused', () => {
    const l = layer();
    const v = checkLegacyKeyless(trust(), DIGEST, {
      ...l,
      payload: simpleSigningPayload('r.example/x', DIGEST),
    });
    assert.equal(v.ok, false);
    // The log entry names the signed payload's hash, so the mismatch is caught there first.
    assert.match(why(v), /does not verify against the trusted root: TLOG_BODY_ERROR/);
  });

  test('another certificate than the one that signed is refused', () => {
    const a = layer();
    const b = layer();
    // a's signature, payload and entry with b's certificate (same CA, same identity).
    const v = checkLegacyKeyless(trust(), DIGEST, { ...a, certificate: b.certificate });
    assert.match(why(v), /does not verify against the trusted root: SIGNATURE_ERROR/);
  });
});

describe('checkLegacy routes by the certificate annotation', () => {
  const v: Verifier = {
    keysLabel: '',
    keys: [],
    identities: [...trust().identities],
    root: trust().root,
    fingerprint: 'x',
  };
  test('keyless layer → verified; a keyed layer with no keys → why', () => {
    assert.equal(checkLegacy(v, DIGEST, { legacy: [layer()], problems: [] }).verified, true);
    const keyed = { ...layer(), certificate: undefined };
    const r = checkLegacy(v, DIGEST, { legacy: [keyed], problems: [] });
    assert.equal(r.verified, false);
    assert.match(r.verified ? '' : r.why, /is by a key, and spec.verify has no secretRef/);
  });
});
