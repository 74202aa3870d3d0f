/**
 * `spec.verify`'s check (src/scan/verify.ts): signatures made as cosign makes them, with real
 * keys. The pure check refuses every way a signature can be wrong, naming why; against the real
 * registry (through the counting proxy) and a real SQLite store, a second pass over 500 verified
 * digests asks the registry for no signature.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkLegacy, verifierFor, verifyDigest, type Verifier } from '../../src/scan/verify.js';
import { createRegistryClient, RegistryPool } from '../../src/scan/registry/index.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import { openSqliteStore } from '../../src/store/index.js';
import type { ImagePolicy, Secret } from '../../src/config/index.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';
import { pushTags } from '../helpers/push.js';
import { cosignKey, cosignSign, sha256, simpleSigningPayload, type CosignKey } from '../helpers/cosign.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const OTHER = `sha256:${'b'.repeat(64)}`;

function secretWith(keys: Record<string, string>): Secret {
  return {
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { namespace: 'ns', name: 'keys', labels: {}, annotations: {} },
    source: { file: 'keys.yaml', line: 1 },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(v)])),
  };
}

function verifierOf(keys: Record<string, string>): Verifier {
  const policy = {
    metadata: { namespace: 'ns', name: 'app' },
    spec: { verify: { provider: 'cosign', secretRef: 'keys', matchOIDCIdentity: [] } },
  } as unknown as ImagePolicy;
  return verifierFor(policy, { secrets: new Map([['ns/keys', secretWith(keys)]]) })!;
}

function signed(key: CosignKey, digest: string, signedBytes?: Buffer) {
  const payload = simpleSigningPayload('r.example/org/app', digest);
  const signature = sign('sha256', signedBytes ?? payload, key.privateKey).toString('base64');
  return { legacy: [{ payload, signature, layer: sha256(payload) }], problems: [] };
}

describe('checkLegacy', () => {
  const trusted = cosignKey();
  const stranger = cosignKey();
  const v = verifierOf({ 'cosign.pub': trusted.publicPem, 'README.md': 'not a key' });

  test('a trusted key over a payload naming the digest: verified, by that key', () => {
    assert.deepEqual(checkLegacy(v, DIGEST, signed(trusted, DIGEST)), {
      verified: true,
      signer: 'cosign.pub',
      cached: false,
    });
  });

  test('refusals name why: another key, another digest, a tampered payload, no signature', () => {
    const cases: [string, ReturnType<typeof checkLegacy>][] = [
      [
        'by none of the keys of Secret ns/keys \\(cosign.pub\\)',
        checkLegacy(v, DIGEST, signed(stranger, DIGEST)),
      ],
      [`names ${OTHER}, not ${DIGEST}`, checkLegacy(v, DIGEST, signed(trusted, OTHER))],
      [
        'by none of the keys',
        checkLegacy(v, DIGEST, signed(trusted, DIGEST, simpleSigningPayload('r.example/org/app', OTHER))),
      ],
      ['no signature tag', checkLegacy(v, DIGEST, { legacy: [], problems: ['no signature tag x.sig'] })],
    ];
    for (const [why, verdict] of cases) {
      assert.equal(verdict.verified, false);
      assert.match(verdict.verified ? '' : verdict.why, new RegExp(why));
    }
  });

  test('a signed payload that is not a cosign image signature is refused', () => {
    const payload = Buffer.from(
      JSON.stringify({ critical: { type: 'something else', image: { 'docker-manifest-digest': DIGEST } } }),
    );
    const signature = sign('sha256', payload, trusted.privateKey).toString('base64');
    const r = checkLegacy(v, DIGEST, {
      legacy: [{ payload, signature, layer: sha256(payload) }],
      problems: [],
    });
    assert.equal(r.verified, false);
  });

  test('Ed25519 keys verify too; another key set has another fingerprint', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const ed = verifierOf({ 'ed.pub': pem });
    const payload = simpleSigningPayload('r.example/org/app', DIGEST);
    const signature = sign(null, payload, privateKey).toString('base64');
    assert.equal(
      checkLegacy(ed, DIGEST, { legacy: [{ payload, signature, layer: 'l' }], problems: [] }).verified,
      true,
    );
    assert.notEqual(ed.fingerprint, v.fingerprint);
  });

  test('a Secret without *.pub keys, or with a key that is not PEM, is an error naming it', () => {
    assert.throws(() => verifierOf({ 'cosign.key': 'x' }), /Secret ns\/keys has no key ending in \.pub/);
    assert.throws(
      () => verifierOf({ 'cosign.pub': 'garbage' }),
      /Secret ns\/keys key cosign\.pub is not a PEM public key/,
    );
  });
});

describe('verifyDigest: the real registry and store', () => {
  let reg: TestRegistry;
  let proxy: RegistryProxy;
  let dir: string;
  before(async () => {
    reg = await startRegistry({ auth: 'none' });
    proxy = await startRegistryProxy(reg.url);
    dir = await mkdtemp(join(tmpdir(), 'pawl-verify-'));
  });
  after(async () => {
    await proxy.stop();
    await reg.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a second pass over 500 verified digests makes no signature request', async () => {
    const key = cosignKey();
    const tags = Array.from({ length: 500 }, (_, i) => `1.0.${i}`);
    const pushed = await pushTags(reg.url, 'org/app', tags, {
      createdFor: (_, i) => new Date(Date.UTC(2025, 0, 1, 0, i)),
    });
    const digests = [...new Set([...pushed.values()].map((p) => p.digest))];
    assert.equal(digests.length, 500);
    for (let i = 0; i < digests.length; i += 25)
      await Promise.all(
        digests.slice(i, i + 25).map((d) => cosignSign(reg.url, reg.host, 'org/app', d, key)),
      );

    const store = openSqliteStore(dir, {});
    const client = createRegistryClient({
      pool: new RegistryPool({ limits: { requestsPerSecond: 100_000 } }),
      dockerConfig: false,
    });
    const ref = parseRepositoryRef(`${proxy.host}/org/app`);
    const v = verifierOf({ 'cosign.pub': key.publicPem });
    const pass = () =>
      Promise.all(digests.map((d) => verifyDigest(v, client, ref, d, store.verifiedCache(), new Date())));

    proxy.resetCounts();
    const first = await pass();
    assert.ok(first.every((r) => r.verified && !r.cached));
    // One GET of each .sig manifest and one of each payload blob.
    assert.equal(proxy.count('manifest-get'), 500);
    assert.equal(proxy.count('blob'), 500);
    await store.flush?.();

    proxy.resetCounts();
    const second = await pass();
    assert.ok(second.every((r) => r.verified && r.cached));
    assert.equal(proxy.count('any'), 0, 'no request at all');

    // Another key set shares nothing of the cache.
    const other = verifierOf({ 'cosign.pub': cosignKey().publicPem });
    const r = await verifyDigest(other, client, ref, digests[0]!, store.verifiedCache(), new Date());
    assert.equal(r.verified, false);
    await store.close();
  });
});
