/**
 * Finding Sigstore bundles (src/scan/registry/referrers.ts) against the real registry, through the
 * counting proxy: the referrers tag schema where the registry has no Referrers API (Debian's
 * registry 2.8), the API where it has one (the proxy answers it from what was pushed through it:
 * the only fake, see test/helpers/registry-proxy.ts), and what each costs in requests. Attestations
 * are skipped unread; a tag-schema entry for another image is refused.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { createRegistryClient, RegistryPool } from '../../src/scan/registry/index.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';
import { OCI_INDEX, OCI_MANIFEST, pushImage, putManifest } from '../helpers/push.js';
import { makeBundle, pushBundle, testTrustRoot, BUNDLE_V03 } from '../helpers/sigstore.js';

const root = testTrustRoot();
/** The requests after the client's first `/v2/` ping of a host. */
const reads = (p: RegistryProxy) => p.requests.filter((r) => r.kind !== 'ping');
const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });

describe('referrerBundles', () => {
  let reg: TestRegistry;
  let tagProxy: RegistryProxy;
  let apiProxy: RegistryProxy;
  const client = createRegistryClient({
    pool: new RegistryPool({ limits: { requestsPerSecond: 100_000 } }),
    dockerConfig: false,
  });
  let n = 0;
  const image = async (url: string, repo: string) =>
    (await pushImage(url, repo, `t${n}`, { created: new Date(Date.UTC(2026, 0, 1, 0, n++)) })).digest;

  before(async () => {
    reg = await startRegistry({ auth: 'none' });
    tagProxy = await startRegistryProxy(reg.url);
    apiProxy = await startRegistryProxy(reg.url, { referrersApi: true });
  });
  after(async () => {
    await tagProxy.stop();
    await apiProxy.stop();
    await reg.stop();
  });

  test('tag schema: a signed digest costs 4 requests, an unsigned one 2', async () => {
    const ref = parseRepositoryRef(`${tagProxy.host}/org/tags`);
    const signed = await image(reg.url, 'org/tags');
    const m = await pushBundle(
      reg.url,
      'org/tags',
      signed,
      makeBundle(root, signed, { kind: 'key', ...key }),
      {
        tagSchema: true,
      },
    );
    tagProxy.resetCounts();
    const found = await client.bundles(ref, signed);
    assert.equal(found.via, 'tag');
    assert.deepEqual(
      found.bundles.map((b) => b.manifest),
      [m],
    );
    assert.deepEqual(
      reads(tagProxy).map((r) => [r.kind, r.status]),
      [
        ['referrers', 404],
        ['manifest-get', 200],
        ['manifest-get', 200],
        ['blob', 200],
      ],
    );
    const unsigned = await image(reg.url, 'org/tags');
    tagProxy.resetCounts();
    const none = await client.bundles(ref, unsigned);
    assert.deepEqual(none.bundles, []);
    assert.match(none.problems.join(), /no referrers \(Referrers API absent, no tag sha256-/);
    assert.equal(reads(tagProxy).length, 2);
  });

  test('Referrers API: a signed digest costs 3 requests, an unsigned one 1; the tag is never read', async () => {
    const ref = parseRepositoryRef(`${apiProxy.host}/org/api`);
    const signed = await image(apiProxy.url, 'org/api');
    await pushBundle(apiProxy.url, 'org/api', signed, makeBundle(root, signed, { kind: 'key', ...key }), {
      tagSchema: false,
    });
    apiProxy.resetCounts();
    const found = await client.bundles(ref, signed);
    assert.equal(found.via, 'api');
    assert.equal(found.bundles.length, 1);
    assert.deepEqual(
      reads(apiProxy).map((r) => [r.kind, r.status]),
      [
        ['referrers', 200],
        ['manifest-get', 200],
        ['blob', 200],
      ],
    );
    const unsigned = await image(apiProxy.url, 'org/api');
    apiProxy.resetCounts();
    const none = await client.bundles(ref, unsigned);
    assert.match(
      none.problems.join(),
      /the Referrers API lists no Sigstore signature bundle \(0 referrers\)/,
    );
    assert.equal(reads(apiProxy).length, 1);
  });

  test('an attestation is skipped unread; a tag-schema entry whose subject is another image is refused', async () => {
    const ref = parseRepositoryRef(`${tagProxy.host}/org/mixed`);
    const a = await image(reg.url, 'org/mixed');
    await pushBundle(reg.url, 'org/mixed', a, makeBundle(root, a, { kind: 'key', ...key }), {
      tagSchema: true,
      predicateType: 'https://slsa.dev/provenance/v1',
    });
    tagProxy.resetCounts();
    const attested = await client.bundles(ref, a);
    assert.deepEqual(attested.bundles, []);
    assert.match(attested.problems.join(), /lists no Sigstore signature bundle \(1 referrers\)/);
    assert.equal(tagProxy.count('blob'), 0);

    // b's referrers tag lists a bundle made (and valid) for a.
    const forA = await pushBundle(reg.url, 'org/mixed', a, makeBundle(root, a, { kind: 'key', ...key }), {
      tagSchema: false,
    });
    const b = await image(reg.url, 'org/mixed');
    await putManifest(reg.url, 'org/mixed', undefined, b.replace(':', '-'), OCI_INDEX, {
      schemaVersion: 2,
      mediaType: OCI_INDEX,
      manifests: [{ mediaType: OCI_MANIFEST, digest: forA, size: 1, artifactType: BUNDLE_V03 }],
    });
    const foreign = await client.bundles(ref, b);
    assert.deepEqual(foreign.bundles, []);
    assert.match(foreign.problems.join(), new RegExp(`the referrer ${forA} has subject ${a}, not ${b}`));
  });
});
