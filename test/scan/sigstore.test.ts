/**
 * The pure bundle checks (src/scan/sigstore.ts) with bundles made as cosign 3 makes them
 * (test/helpers/sigstore.ts) and real @sigstore/verify: the identity matcher (RE2, anchored,
 * issuer and subject of one pair), the trusted root's parse errors, and every way a bundle can be
 * wrong refused with words that say which and why.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import {
  checkBundle,
  checkBundles,
  identityMatchers,
  matchIdentity,
  parseTrustedRoot,
  type BundleTrust,
} from '../../src/scan/sigstore.js';
import { verifierFor } from '../../src/scan/verify.js';
import type { ImagePolicy, Secret } from '../../src/config/index.js';
import { makeBundle, testTrustRoot, type Identity } from '../helpers/sigstore.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;
const GH = 'https://token.actions.githubusercontent.com';
const WHO: Identity = {
  issuer: GH,
  subject: 'https://github.com/org/app/.github/workflows/release.yml@refs/tags/v1',
};

const root = testTrustRoot();
const stranger = testTrustRoot();
const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const trust = (over: Partial<BundleTrust> = {}): BundleTrust => ({
  keys: [{ name: 'cosign.pub', key: key.publicKey }],
  identities: identityMatchers([
    { issuer: GH.replace(/\./g, '\\.'), subject: 'https://github\\.com/org/app/.*' },
  ]),
  root: parseTrustedRoot(root.json, true),
  keysLabel: 'Secret ns/keys (cosign.pub)',
  ...over,
});
const found = (json: unknown) => ({ json, manifest: 'sha256:feed' });
const why = (v: ReturnType<typeof checkBundle>): string => (v.ok ? `ok: ${v.signer}` : v.why);

describe('matchOIDCIdentity', () => {
  test('anchored RE2: the whole issuer and subject of one pair must match', () => {
    const m = identityMatchers([
      { issuer: 'https://accounts\\.google\\.com', subject: 'ci@example\\.com' },
      { issuer: GH, subject: 'https://github.com/org/.*' },
    ]);
    assert.equal(
      matchIdentity(m, GH, 'https://github.com/org/app/x')?.text.subject,
      'https://github.com/org/.*',
    );
    // Unanchored, "org/.*" would match inside another owner's path; anchored it does not.
    assert.equal(matchIdentity(m, GH, 'https://github.com/evil/https://github.com/org/x'), undefined);
    assert.equal(matchIdentity(m, `${GH}.evil`, 'https://github.com/org/app'), undefined);
    // Issuer of one pair with the subject of the other: no.
    assert.equal(matchIdentity(m, 'https://accounts.google.com', 'https://github.com/org/app'), undefined);
    assert.equal(matchIdentity(m, undefined, 'ci@example.com'), undefined);
    // An alternation stays inside the anchors.
    const alt = identityMatchers([{ issuer: 'a|b', subject: '.*' }]);
    assert.equal(matchIdentity(alt, 'xb', 's'), undefined);
    assert.ok(matchIdentity(alt, 'b', 's'));
  });

  test('a pattern RE2 does not take is named', () => {
    assert.throws(() => identityMatchers([{ issuer: '(?=x)', subject: '.*' }]), /invalid regular expression/);
  });
});

describe('parseTrustedRoot', () => {
  test('what is wrong with a root is said', () => {
    assert.throws(() => parseTrustedRoot('{', true), /is not JSON/);
    assert.throws(() => parseTrustedRoot('[]', true), /is not a trusted root object/);
    assert.throws(() => parseTrustedRoot('{}', false), /lists no transparency log \(tlogs\)/);
    const noCa = JSON.stringify({ ...JSON.parse(root.json), certificateAuthorities: [] });
    assert.throws(() => parseTrustedRoot(noCa, true), /no certificate authority/);
    assert.doesNotThrow(() => parseTrustedRoot(noCa, false));
    const noCt = JSON.stringify({ ...JSON.parse(root.json), ctlogs: [] });
    assert.throws(() => parseTrustedRoot(noCt, true), /no certificate transparency log/);
  });
});

describe('checkBundle', () => {
  test('keyless with a matching identity, and keyed with and without a root: verified, naming the signer', () => {
    const keyless = checkBundle(
      trust(),
      DIGEST,
      found(makeBundle(root, DIGEST, { kind: 'keyless', identity: WHO })),
    );
    assert.equal(why(keyless), `ok: ${WHO.subject} (${GH})`);
    const keyed = makeBundle(root, DIGEST, { kind: 'key', ...key });
    assert.equal(why(checkBundle(trust(), DIGEST, found(keyed))), 'ok: cosign.pub (bundle)');
    assert.equal(why(checkBundle(trust({ root: null }), DIGEST, found(keyed))), 'ok: cosign.pub (bundle)');
  });

  test('v0.2 and v0.1 bundles (certificate chains) verify too', () => {
    const b = makeBundle(root, DIGEST, { kind: 'keyless', identity: WHO }) as {
      mediaType: string;
      verificationMaterial: Record<string, unknown> & { certificate?: { rawBytes: string } };
    };
    const cert = b.verificationMaterial.certificate!;
    delete b.verificationMaterial.certificate;
    b.verificationMaterial.x509CertificateChain = { certificates: [cert] };
    for (const v of ['0.2', '0.1']) {
      b.mediaType = `application/vnd.dev.sigstore.bundle+json;version=${v}`;
      assert.equal(why(checkBundle(trust(), DIGEST, found(b))), `ok: ${WHO.subject} (${GH})`, v);
    }
  });

  test('with a root a keyed bundle needs its log entry; without one it is checked as a legacy signature', () => {
    const b = makeBundle(root, DIGEST, { kind: 'key', ...key }) as {
      verificationMaterial: { tlogEntries: unknown[] };
    };
    b.verificationMaterial.tlogEntries = [];
    assert.match(why(checkBundle(trust(), DIGEST, found(b))), /TIMESTAMP_ERROR|TLOG_ERROR/);
    assert.equal(why(checkBundle(trust({ root: null }), DIGEST, found(b))), 'ok: cosign.pub (bundle)');
    // A log entry signed by a log the root does not trust refuses.
    const foreign = makeBundle(stranger, DIGEST, { kind: 'key', ...key });
    assert.match(why(checkBundle(trust(), DIGEST, found(foreign))), /does not verify with the keys.*TLOG/);
  });

  test('refusals say why: identity, issuer, key, another root, another digest, tampering', () => {
    const cases: [unknown, RegExp][] = [
      [
        makeBundle(root, DIGEST, {
          kind: 'keyless',
          identity: { ...WHO, subject: 'https://github.com/evil/x' },
        }),
        /signed by https:\/\/github\.com\/evil\/x \(issuer https:\/\/token\.actions\.githubusercontent\.com\), which matches no matchOIDCIdentity/,
      ],
      [
        makeBundle(root, DIGEST, {
          kind: 'keyless',
          identity: { ...WHO, issuer: 'https://accounts.google.com' },
        }),
        /issuer https:\/\/accounts\.google\.com\), which matches no matchOIDCIdentity/,
      ],
      [
        makeBundle(root, DIGEST, { kind: 'key', ...otherKey }),
        /does not verify with the keys of Secret ns\/keys/,
      ],
      [
        makeBundle(stranger, DIGEST, { kind: 'keyless', identity: WHO }),
        /does not verify against the trusted root: .*(CERTIFICATE_ERROR|TLOG)/,
      ],
      [
        makeBundle(root, DIGEST, { kind: 'keyless', identity: WHO }, { statementDigest: OTHER }),
        new RegExp(`signs a statement naming ${OTHER}, not ${DIGEST}`),
      ],
      [makeBundle(root, DIGEST, { kind: 'keyless', identity: WHO }, { tamper: true }), /does not verify/],
    ];
    for (const [b, re] of cases) assert.match(why(checkBundle(trust(), DIGEST, found(b))), re);
  });

  test('a payload changed after signing is refused by the signature, not believed', () => {
    const b = makeBundle(root, DIGEST, { kind: 'key', ...key }) as { dsseEnvelope: { payload: string } };
    const st = JSON.parse(Buffer.from(b.dsseEnvelope.payload, 'base64').toString()) as {
      subject: { digest: { sha256: string } }[];
    };
    st.subject[0]!.digest.sha256 = 'c'.repeat(64);
    b.dsseEnvelope.payload = Buffer.from(JSON.stringify(st)).toString('base64');
    const v = checkBundle(trust({ root: null }), `sha256:${'c'.repeat(64)}`, found(b));
    assert.match(why(v), /does not verify with the keys.*SIGNATURE_ERROR/);
  });

  test('what the verifier cannot use is said: keyless without identities or root, keyed without keys', () => {
    const keyless = makeBundle(root, DIGEST, { kind: 'keyless', identity: WHO });
    assert.match(
      why(checkBundle(trust({ identities: [] }), DIGEST, found(keyless))),
      /keyless.*no matchOIDCIdentity/,
    );
    assert.match(why(checkBundle(trust({ root: null }), DIGEST, found(keyless))), /no trustedRootSecretRef/);
    const keyed = makeBundle(root, DIGEST, { kind: 'key', ...key });
    assert.match(
      why(checkBundle(trust({ keys: [] }), DIGEST, found(keyed))),
      /signed with a key.*no secretRef/,
    );
  });

  test('what is not a bundle, or not an image signature, is named', () => {
    assert.match(
      why(checkBundle(trust(), DIGEST, found({ mediaType: 'x' }))),
      /the bundle sha256:feed is not a Sigstore bundle/,
    );
    assert.match(why(checkBundle(trust(), DIGEST, found('text'))), /is not a Sigstore bundle/);
    const attestation = makeBundle(
      root,
      DIGEST,
      { kind: 'key', ...key },
      { predicateType: 'https://slsa.dev/provenance/v1' },
    );
    assert.match(
      why(checkBundle(trust(), DIGEST, found(attestation))),
      /is an attestation \(https:\/\/slsa\.dev\/provenance\/v1\), not an image signature/,
    );
  });

  test('checkBundles: the first good one wins; else every reason, the listing problems first', () => {
    const bad = found(makeBundle(root, DIGEST, { kind: 'key', ...otherKey }));
    const good = found(makeBundle(root, DIGEST, { kind: 'key', ...key }));
    assert.deepEqual(checkBundles(trust(), DIGEST, { bundles: [bad, good], problems: [], via: 'api' }), {
      verified: true,
      signer: 'cosign.pub (bundle)',
    });
    const none = checkBundles(trust(), DIGEST, {
      bundles: [bad],
      problems: ['the Referrers API lists 9'],
      via: 'api',
    });
    assert.equal(none.verified, false);
    assert.match(
      !none.verified ? none.why : '',
      /^the Referrers API lists 9; the bundle sha256:feed does not verify/,
    );
    assert.deepEqual(checkBundles(trust(), DIGEST, { bundles: [], problems: [], via: 'tag' }), {
      verified: false,
      why: 'no Sigstore bundle found',
    });
  });
});

describe('verifierFor: keyless', () => {
  const secret = (name: string, data: Record<string, string>): Secret => ({
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { namespace: 'ns', name, labels: {}, annotations: {} },
    source: { file: `${name}.yaml`, line: 1 },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v)])),
  });
  const verifier = (verify: Record<string, unknown>, secrets: Secret[]) =>
    verifierFor(
      {
        metadata: { namespace: 'ns', name: 'app' },
        spec: { verify: { provider: 'cosign', matchOIDCIdentity: [], ...verify } },
      } as unknown as ImagePolicy,
      { secrets: new Map(secrets.map((s) => [`ns/${s.metadata.name}`, s])) },
    );
  const ids = [{ issuer: GH, subject: '.*' }];

  test('the root comes from the Secret, offline; what is wrong with it names the Secret and key', () => {
    const v = verifier({ matchOIDCIdentity: ids, trustedRootSecretRef: 'root' }, [
      secret('root', { 'trusted_root.json': root.json }),
    ])!;
    assert.equal(v.keys.length, 0);
    assert.equal(v.identities.length, 1);
    assert.ok(v.root);
    assert.throws(
      () => verifier({ matchOIDCIdentity: ids, trustedRootSecretRef: 'root' }, []),
      /spec\.verify\.trustedRootSecretRef names Secret ns\/root, which is not in the configuration/,
    );
    assert.throws(
      () => verifier({ matchOIDCIdentity: ids, trustedRootSecretRef: 'root' }, [secret('root', { x: '' })]),
      /Secret ns\/root has no key trusted_root\.json/,
    );
    assert.throws(
      () =>
        verifier({ matchOIDCIdentity: ids, trustedRootSecretRef: 'root' }, [
          secret('root', { 'trusted_root.json': '{"tlogs": []}' }),
        ]),
      /Secret ns\/root key trusted_root\.json lists no transparency log/,
    );
    assert.throws(() => verifier({ matchOIDCIdentity: ids }, []), /needs spec\.verify\.trustedRootSecretRef/);
  });

  test('another identity or another root is another verifier: nothing of the cache is shared', () => {
    const s = [
      secret('root', { 'trusted_root.json': root.json }),
      secret('other', { 'trusted_root.json': stranger.json }),
    ];
    const a = verifier({ matchOIDCIdentity: ids, trustedRootSecretRef: 'root' }, s)!;
    const b = verifier(
      { matchOIDCIdentity: [{ issuer: GH, subject: 'x' }], trustedRootSecretRef: 'root' },
      s,
    )!;
    const c = verifier({ matchOIDCIdentity: ids, trustedRootSecretRef: 'other' }, s)!;
    assert.equal(new Set([a.fingerprint, b.fingerprint, c.fingerprint]).size, 3);
  });
});
