/**
 * Sigstore bundles made as cosign 3 makes them (`cosign sign --new-bundle-format`), against a
 * test trust root built here with node:crypto: a Fulcio-like CA issuing short-lived code-signing
 * certificates (SAN subject, OIDC issuer extensions 1.3.6.1.4.1.57264.1.1 and .1.8, an embedded
 * SCT from a test CT log), a Rekor-like log that signs each entry (SET) and a checkpoint over a
 * one-leaf tree (inclusion proof), and the `trusted_root.json` naming all three. Bundles are v0.3
 * DSSE envelopes of the in-toto statement cosign signs, pushed as OCI referrers: a manifest with
 * `subject` and `artifactType`, its one layer the bundle, and (tag schema) the `sha256-<hex>` index.
 *
 * X.509 is written with a small DER encoder below rather than a certificate library: none is
 * installed, and the few structures needed are fixed.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { putBlob, putManifest, OCI_INDEX, OCI_MANIFEST } from './push.js';
import { pushSignatureManifest, simpleSigningPayload } from './cosign.js';

export const BUNDLE_V03 = 'application/vnd.dev.sigstore.bundle.v0.3+json';
export const SIGN_PREDICATE = 'https://sigstore.dev/cosign/sign/v1';
const EMPTY_CONFIG = 'application/vnd.oci.empty.v1+json';

// --- DER ---------------------------------------------------------------------------------

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, ...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...p: Buffer[]): Buffer => tlv(0x30, ...p);
const set = (...p: Buffer[]): Buffer => tlv(0x31, ...p);
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const octet = (b: Buffer): Buffer => tlv(0x04, b);
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 + n, inner);
function int(n: number): Buffer {
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  if (bytes.length === 0 || bytes[0]! & 0x80) bytes.unshift(0);
  return tlv(0x02, Buffer.from(bytes));
}
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const n of rest) {
    const chunk: number[] = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}
function utcTime(d: Date): Buffer {
  const s = d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
  return tlv(0x17, Buffer.from(s, 'ascii'));
}
/** A BIT STRING of whole bytes, or of the first `bits` bits of `b`. */
function bitString(b: Buffer, unused = 0): Buffer {
  return tlv(0x03, Buffer.from([unused]), b);
}
const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string): Buffer =>
  seq(set(seq(oid('2.5.4.10'), utf8('pawl-test'))), set(seq(oid('2.5.4.3'), utf8(cn))));
const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octet(value));
const spki = (k: KeyObject): Buffer => k.export({ type: 'spki', format: 'der' });

let serial = 1000;

function tbs(o: {
  issuer: Buffer;
  subject: Buffer;
  notBefore: Date;
  notAfter: Date;
  key: KeyObject;
  extensions: Buffer[];
  serial: number;
}): Buffer {
  return seq(
    explicit(0, int(2)),
    int(o.serial),
    ECDSA_SHA256,
    o.issuer,
    seq(utcTime(o.notBefore), utcTime(o.notAfter)),
    o.subject,
    spki(o.key),
    explicit(3, seq(...o.extensions)),
  );
}

const signCert = (t: Buffer, by: KeyObject): Buffer => seq(t, ECDSA_SHA256, bitString(sign('sha256', t, by)));

// --- the test trust root ----------------------------------------------------------------

interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}
const p256 = (): KeyPair => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const logId = (k: KeyObject): Buffer => createHash('sha256').update(spki(k)).digest();

export interface TestTrustRoot {
  ca: KeyPair & { cert: Buffer; name: Buffer };
  rekor: KeyPair & { origin: string };
  ctlog: KeyPair;
  /** `trusted_root.json`'s text. */
  json: string;
}

const VALID_FROM = '2020-01-01T00:00:00Z';

function logInstance(baseUrl: string, k: KeyObject): Record<string, unknown> {
  return {
    baseUrl,
    hashAlgorithm: 'SHA2_256',
    publicKey: {
      rawBytes: spki(k).toString('base64'),
      keyDetails: 'PKIX_ECDSA_P256_SHA_256',
      validFor: { start: VALID_FROM },
    },
    logId: { keyId: logId(k).toString('base64') },
  };
}

/** A Fulcio-like CA, a Rekor-like log and a CT log, and the trusted root naming them. */
export function testTrustRoot(): TestTrustRoot {
  const caKeys = p256();
  const caName = name('fulcio.pawl.test');
  const now = Date.now();
  const caCert = signCert(
    tbs({
      issuer: caName,
      subject: caName,
      notBefore: new Date(now - 86_400_000),
      notAfter: new Date(now + 365 * 86_400_000),
      key: caKeys.publicKey,
      serial: serial++,
      extensions: [
        extension('2.5.29.19', true, seq(bool(true))),
        // keyCertSign (bit 5) and cRLSign (bit 6): 0b0000_0110, one unused bit.
        extension('2.5.29.15', true, bitString(Buffer.from([0x06]), 1)),
      ],
    }),
    caKeys.privateKey,
  );
  const rekor = { ...p256(), origin: 'rekor.pawl.test' };
  const ctlog = p256();
  const json = JSON.stringify({
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [logInstance(`https://${rekor.origin}`, rekor.publicKey)],
    certificateAuthorities: [
      {
        subject: { organization: 'pawl-test', commonName: 'fulcio.pawl.test' },
        uri: 'https://fulcio.pawl.test',
        certChain: { certificates: [{ rawBytes: caCert.toString('base64') }] },
        validFor: { start: VALID_FROM },
      },
    ],
    ctlogs: [logInstance('https://ctfe.pawl.test', ctlog.publicKey)],
    timestampAuthorities: [],
  });
  return { ca: { ...caKeys, cert: caCert, name: caName }, rekor, ctlog, json };
}

export interface Identity {
  /** The SAN: a URI (`https://…`) or an email address. */
  subject: string;
  issuer: string;
}

/**
 * A short-lived code-signing certificate for `key`, as Fulcio issues: SAN, the issuer in both
 * extensions, and an SCT by the root's CT log over the precertificate (the TBS without it).
 */
export function fulcioCertificate(root: TestTrustRoot, who: Identity, key: KeyObject, at: Date): Buffer {
  const san =
    who.subject.includes('@') && !who.subject.includes('://')
      ? tlv(0x81, Buffer.from(who.subject, 'ascii'))
      : tlv(0x86, Buffer.from(who.subject, 'ascii'));
  const base = {
    issuer: root.ca.name,
    subject: seq(),
    notBefore: new Date(at.getTime() - 60_000),
    notAfter: new Date(at.getTime() + 10 * 60_000),
    key,
    serial: serial++,
  };
  const exts = [
    extension('2.5.29.15', true, bitString(Buffer.from([0x80]), 7)),
    extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.3'))),
    extension('2.5.29.17', true, seq(san)),
    extension('1.3.6.1.4.1.57264.1.1', false, Buffer.from(who.issuer, 'ascii')),
    extension('1.3.6.1.4.1.57264.1.8', false, utf8(who.issuer)),
  ];
  const pre = tbs({ ...base, extensions: exts });
  // RFC 6962 §3.2: the CT log signs the issuer's key hash and the TBS without the SCT list.
  const ts = Buffer.alloc(8);
  ts.writeBigUInt64BE(BigInt(at.getTime()));
  const issuerKeyHash = createHash('sha256').update(spki(root.ca.publicKey)).digest();
  const u24 = Buffer.from([(pre.length >> 16) & 0xff, (pre.length >> 8) & 0xff, pre.length & 0xff]);
  const signed = Buffer.concat([
    Buffer.from([0, 0]),
    ts,
    Buffer.from([0, 1]),
    issuerKeyHash,
    u24,
    pre,
    Buffer.from([0, 0]),
  ]);
  const sig = sign('sha256', signed, root.ctlog.privateKey);
  const sigLen = Buffer.alloc(2);
  sigLen.writeUInt16BE(sig.length);
  const sct = Buffer.concat([
    Buffer.from([0]),
    logId(root.ctlog.publicKey),
    ts,
    Buffer.from([0, 0]),
    Buffer.from([4, 3]),
    sigLen,
    sig,
  ]);
  const item = Buffer.concat([u16(sct.length), sct]);
  const list = Buffer.concat([u16(item.length), item]);
  const withSct = tbs({
    ...base,
    extensions: [...exts, extension('1.3.6.1.4.1.11129.2.4.2', false, octet(list))],
  });
  return signCert(withSct, root.ca.privateKey);
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

// --- bundles -----------------------------------------------------------------------------

/** The in-toto statement `cosign sign` signs for an image digest. */
export function signStatement(digest: string, predicateType = SIGN_PREDICATE): Buffer {
  return Buffer.from(
    JSON.stringify({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ digest: { sha256: digest.split(':')[1] } }],
      predicateType,
      predicate: {},
    }),
  );
}

const pae = (type: string, payload: Buffer): Buffer =>
  Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${payload.length} `), payload]);

/** JSON with sorted keys (RFC 8785 for the flat objects Rekor signs). */
const canonical = (o: Record<string, string | number>): string =>
  `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(o[k])}`)
    .join(',')}}`;

export interface BundleOptions {
  /** The digest the statement names (default: the signed image's own). */
  statementDigest?: string;
  /** Sign these bytes but store the statement (a tampered bundle). */
  tamper?: boolean;
  /** Another predicate than cosign's image signature (an attestation). */
  predicateType?: string;
  /** The log entry's time (default now). */
  at?: Date;
}

export type BundleSigner =
  { kind: 'key'; privateKey: KeyObject; publicKey: KeyObject } | { kind: 'keyless'; identity: Identity };

/**
 * A v0.3 bundle of cosign's image signature of `digest`: the DSSE envelope, a certificate
 * (keyless, from a fresh ephemeral key) or a public-key hint, and a Rekor `dsse` entry with its
 * SET and a checkpointed one-leaf inclusion proof.
 */
export function makeBundle(
  root: TestTrustRoot,
  digest: string,
  signer: BundleSigner,
  opts: BundleOptions = {},
): Record<string, unknown> {
  const at = opts.at ?? new Date();
  const statement = signStatement(opts.statementDigest ?? digest, opts.predicateType);
  const type = 'application/vnd.in-toto+json';
  let key: KeyObject;
  let material: Record<string, unknown>;
  let verifierPem: string;
  if (signer.kind === 'keyless') {
    const eph = p256();
    key = eph.privateKey;
    const cert = fulcioCertificate(root, signer.identity, eph.publicKey, at);
    material = { certificate: { rawBytes: cert.toString('base64') } };
    verifierPem = `-----BEGIN CERTIFICATE-----\n${cert.toString('base64')}\n-----END CERTIFICATE-----\n`;
  } else {
    key = signer.privateKey;
    material = { publicKey: { hint: '' } };
    verifierPem = signer.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }
  const signedPayload = opts.tamper ? signStatement(`sha256:${'0'.repeat(64)}`) : statement;
  const sig = sign('sha256', pae(type, signedPayload), key);
  const envelope = {
    payload: statement.toString('base64'),
    payloadType: type,
    signatures: [{ sig: sig.toString('base64'), keyid: '' }],
  };
  const body = Buffer.from(
    JSON.stringify({
      apiVersion: '0.0.1',
      kind: 'dsse',
      spec: {
        envelopeHash: {
          algorithm: 'sha256',
          value: createHash('sha256').update(JSON.stringify(envelope)).digest('hex'),
        },
        payloadHash: {
          algorithm: 'sha256',
          value: createHash('sha256').update(signedPayload).digest('hex'),
        },
        signatures: [
          { signature: sig.toString('base64'), verifier: Buffer.from(verifierPem).toString('base64') },
        ],
      },
    }),
  );
  const id = logId(root.rekor.publicKey);
  const integratedTime = Math.floor(at.getTime() / 1000);
  const set = sign(
    'sha256',
    Buffer.from(
      canonical({ body: body.toString('base64'), integratedTime, logID: id.toString('hex'), logIndex: 0 }),
    ),
    root.rekor.privateKey,
  );
  const leaf = createHash('sha256')
    .update(Buffer.from([0]))
    .update(body)
    .digest();
  const note = `${root.rekor.origin}\n1\n${leaf.toString('base64')}\n`;
  const noteSig = Buffer.concat([
    id.subarray(0, 4),
    sign('sha256', Buffer.from(note), root.rekor.privateKey),
  ]);
  return {
    mediaType: BUNDLE_V03,
    verificationMaterial: {
      ...material,
      tlogEntries: [
        {
          logIndex: '0',
          logId: { keyId: id.toString('base64') },
          kindVersion: { kind: 'dsse', version: '0.0.1' },
          integratedTime: String(integratedTime),
          inclusionPromise: { signedEntryTimestamp: set.toString('base64') },
          inclusionProof: {
            logIndex: '0',
            rootHash: leaf.toString('base64'),
            treeSize: '1',
            hashes: [],
            checkpoint: { envelope: `${note}\n\u2014 ${root.rekor.origin} ${noteSig.toString('base64')}\n` },
          },
          canonicalizedBody: body.toString('base64'),
        },
      ],
    },
    dsseEnvelope: envelope,
  };
}

/**
 * Pushes `bundle` as a referrer of `digest`, as cosign does: the empty config, the bundle
 * layer, the manifest with `subject` and `artifactType`; with `tagSchema` also the referrers tag
 * `sha256-<hex>` (an index of the referrers, read back and extended). Returns the manifest digest.
 */
export async function pushBundle(
  registryUrl: string,
  repo: string,
  digest: string,
  bundle: unknown,
  opts: { tagSchema: boolean; predicateType?: string },
): Promise<string> {
  const empty = Buffer.from('{}');
  const emptyDigest = await putBlob(registryUrl, repo, undefined, empty);
  const layer = Buffer.from(JSON.stringify(bundle));
  const layerDigest = await putBlob(registryUrl, repo, undefined, layer);
  const annotations = {
    'dev.sigstore.bundle.content': 'dsse-envelope',
    'dev.sigstore.bundle.predicateType': opts.predicateType ?? SIGN_PREDICATE,
  };
  const subjectRes = await fetch(`${registryUrl}/v2/${repo}/manifests/${digest}`, {
    method: 'HEAD',
    headers: { accept: `${OCI_MANIFEST}, ${OCI_INDEX}` },
  });
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: BUNDLE_V03,
    config: { mediaType: EMPTY_CONFIG, size: empty.length, digest: emptyDigest },
    layers: [{ mediaType: BUNDLE_V03, size: layer.length, digest: layerDigest }],
    subject: {
      mediaType: subjectRes.headers.get('content-type') ?? OCI_MANIFEST,
      size: Number(subjectRes.headers.get('content-length') ?? 0),
      digest,
    },
    annotations,
  };
  // By digest, as cosign pushes it: a referrer has no tag of its own.
  const own = `sha256:${createHash('sha256').update(JSON.stringify(manifest)).digest('hex')}`;
  const m = await putManifest(registryUrl, repo, undefined, own, OCI_MANIFEST, manifest);
  if (opts.tagSchema) {
    const tag = digest.replace(':', '-');
    const prior = await fetch(`${registryUrl}/v2/${repo}/manifests/${tag}`, {
      headers: { accept: OCI_INDEX },
    });
    const index = prior.ok
      ? ((await prior.json()) as { manifests: unknown[] })
      : { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [] as unknown[] };
    index.manifests.push({
      mediaType: OCI_MANIFEST,
      digest: m.digest,
      size: m.size,
      artifactType: BUNDLE_V03,
      annotations,
    });
    await putManifest(registryUrl, repo, undefined, tag, OCI_INDEX, index);
  }
  return m.digest;
}

/** A `kind: Secret` holding the trusted root under `trusted_root.json`. */
export function trustedRootSecret(nameOf: string, json: string, namespace = 'flux-system'): string {
  return `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${nameOf}\n  namespace: ${namespace}\ntype: Opaque\ndata:\n  trusted_root.json: ${Buffer.from(json).toString('base64')}\n`;
}

// --- keyless signatures in the legacy `.sig` tag (cosign 2's `cosign sign` default) ----------

/** PEM as Go's pem.EncodeToMemory writes it: 64-character lines. */
export function pem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

export interface LegacyKeylessOptions {
  /** The digest the payload names (default: the signed image's own). */
  payloadDigest?: string;
  /** Whose CA issues the certificate (default: `root`'s; another root's is not trusted). */
  ca?: TestTrustRoot;
  /** The certificate's time (default now): it is valid from a minute before to ten after. */
  at?: Date;
  /** The log entry's integrated time, signed into the SET (default: `at`). */
  integratedTime?: Date;
  /** Change the entry after the SET was signed: its body (another hash) or its time. */
  tamper?: 'body' | 'integratedTime';
  /** Leave an annotation out. */
  omit?: 'dev.sigstore.cosign/certificate' | 'dev.sigstore.cosign/chain' | 'dev.sigstore.cosign/bundle';
}

/**
 * The layer annotations of a keyless `cosign sign` (cosign 2, no --new-bundle-format) of the
 * simple-signing `payload`: an ephemeral key's signature, its Fulcio certificate and chain
 * (PEM), and the Rekor bundle (pkg/cosign/bundle's RekorBundle: `SignedEntryTimestamp`, and
 * `Payload` with the base64 hashedrekord 0.0.1 body, integrated time, index and hex log id).
 */
export function legacyKeylessAnnotations(
  root: TestTrustRoot,
  payload: Buffer,
  identity: Identity,
  opts: LegacyKeylessOptions = {},
): Record<string, string> {
  const at = opts.at ?? new Date();
  const ca = opts.ca ?? root;
  const eph = p256();
  const cert = fulcioCertificate(ca, identity, eph.publicKey, at);
  const signature = sign('sha256', payload, eph.privateKey).toString('base64');
  const hashed = (data: Buffer) =>
    Buffer.from(
      JSON.stringify({
        apiVersion: '0.0.1',
        kind: 'hashedrekord',
        spec: {
          data: { hash: { algorithm: 'sha256', value: createHash('sha256').update(data).digest('hex') } },
          signature: {
            content: signature,
            publicKey: { content: Buffer.from(pem(cert)).toString('base64') },
          },
        },
      }),
    );
  const body = hashed(payload);
  const id = logId(root.rekor.publicKey).toString('hex');
  const integratedTime = Math.floor((opts.integratedTime ?? at).getTime() / 1000);
  const logIndex = 7;
  const set = sign(
    'sha256',
    Buffer.from(canonical({ body: body.toString('base64'), integratedTime, logID: id, logIndex })),
    root.rekor.privateKey,
  );
  const rekorBundle = {
    SignedEntryTimestamp: set.toString('base64'),
    Payload: {
      body: (opts.tamper === 'body' ? hashed(Buffer.from('another payload')) : body).toString('base64'),
      integratedTime: opts.tamper === 'integratedTime' ? integratedTime + 1 : integratedTime,
      logIndex,
      logID: id,
    },
  };
  const all: Record<string, string> = {
    'dev.cosignproject.cosign/signature': signature,
    'dev.sigstore.cosign/certificate': pem(cert),
    'dev.sigstore.cosign/chain': pem(ca.ca.cert),
    'dev.sigstore.cosign/bundle': JSON.stringify(rekorBundle),
  };
  return Object.fromEntries(Object.entries(all).filter(([k]) => k !== opts.omit));
}

/**
 * Signs `digest` of `registryHost/repo` keyless as cosign 2 does by default and pushes the
 * `sha256-<hex>.sig` manifest. Returns the tag.
 */
export async function cosignSignKeyless(
  registryUrl: string,
  registryHost: string,
  repo: string,
  digest: string,
  root: TestTrustRoot,
  identity: Identity,
  opts: LegacyKeylessOptions = {},
): Promise<string> {
  const payload = simpleSigningPayload(`${registryHost}/${repo}`, opts.payloadDigest ?? digest);
  return pushSignatureManifest(
    registryUrl,
    repo,
    digest,
    payload,
    legacyKeylessAnnotations(root, payload, identity, opts),
  );
}
