/**
 * `spec.verify` with Sigstore bundles (docs/gates.md), against the real registry: bundles made as
 * cosign 3 makes them (test/helpers/sigstore.ts: DSSE in-toto statements, keyed or keyless with a
 * Fulcio-like certificate, Rekor entries with SET and inclusion proof, all from a test trust
 * root) pushed as OCI referrers. Registry 2.8 has no Referrers API, so the referrers tag schema
 * is the real path; the API path runs through the proxy answering /referrers/ from what was
 * pushed through it (the only fake; test/helpers/registry-proxy.ts says why).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { pushImage } from '../helpers/push.js';
import { keysSecret } from '../helpers/cosign.js';
import {
  makeBundle,
  pushBundle,
  testTrustRoot,
  trustedRootSecret,
  type BundleOptions,
  type BundleSigner,
  type Identity,
} from '../helpers/sigstore.js';
import { gitObjects, imageObjects, markedValues, startWorld, type World } from '../helpers/world.js';
import { startServe } from '../helpers/serve.js';
import type { RunReport } from '../../src/run/report.js';

const ISSUER = 'https://token.actions.githubusercontent.com';
const RELEASE: Identity = {
  issuer: ISSUER,
  subject: 'https://github.com/org/app/.github/workflows/release.yml@refs/heads/main',
};

const policy = (verify: string) =>
  imageObjects('app', '{{REGISTRY}}/org/app', "semver:\n  range: '>=1.0.0'", {
    spec: `verify:\n  provider: cosign\n${verify}`,
  });

const KEYED = `  secretRef:
    name: cosign-keys
`;
const KEYLESS = `  matchOIDCIdentity:
    - issuer: '${ISSUER.replace(/\./g, '\\.')}'
      subject: 'https://github\\.com/org/app/\\.github/workflows/.*'
  trustedRootSecretRef:
    name: sigstore-root
`;

const root = testTrustRoot();
const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const KEY: BundleSigner = { kind: 'key', ...key };
const KEYLESS_SIGNER: BundleSigner = { kind: 'keyless', identity: RELEASE };

interface Bench {
  w: World;
  /** Where images and bundles are pushed: the registry, or the proxy that indexes referrers. */
  pushUrl: string;
  api: boolean;
}

async function bench(verify: string, api = false): Promise<Bench> {
  const w = await startWorld({
    proxy: api ? { referrersApi: true } : true,
    files: { 'values.yaml': markedValues('1.0.0') },
    config: {
      'git.yaml': gitObjects(),
      'app.yaml': policy(verify),
      'keys.yaml': keysSecret('cosign-keys', {
        'cosign.pub': key.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      }),
      'root.yaml': trustedRootSecret('sigstore-root', root.json),
    },
  });
  return { w, pushUrl: api ? w.proxy!.url : w.registry.url, api };
}

/** Pushes a distinct image at `tag` and, unless `signer` is null, a bundle for it. */
async function push(
  b: Bench,
  tag: string,
  signer: BundleSigner | null,
  n: number,
  opts: BundleOptions = {},
): Promise<string> {
  const { digest } = await pushImage(b.pushUrl, 'org/app', tag, {
    created: new Date(Date.UTC(2026, 0, 1 + n)),
  });
  if (signer)
    await pushBundle(b.pushUrl, 'org/app', digest, makeBundle(root, digest, signer, opts), {
      tagSchema: !b.api,
    });
  return digest;
}

/** Requests reading signatures: the Referrers API, the referrers tag, referrer manifests, blobs. */
const signatureRequests = (w: World) =>
  w.proxy!.requests.filter(
    (r) =>
      r.method === 'GET' &&
      (r.kind === 'referrers' ||
        r.kind === 'blob' ||
        (r.kind === 'manifest-get' && /\/manifests\/sha256[-:]/.test(r.path))),
  );

async function run(w: World): Promise<RunReport> {
  const r = await w.pawlJson<RunReport>(['run']);
  assert.equal(r.code, 0, r.stderr);
  return r.json;
}

const file = (w: World) => w.git.show(w.repoName, 'main', 'values.yaml');

describe('spec.verify: Sigstore bundles', () => {
  const benches: Bench[] = [];
  after(() => Promise.all(benches.map((b) => b.w.close())));
  const start = async (verify: string, api = false) => {
    const b = await bench(verify, api);
    benches.push(b);
    return b;
  };

  test('keyed bundle on the newest (referrers tag schema) → written; the second pass asks for no signature', async () => {
    const b = await start(KEYED);
    const { w } = b;
    await push(b, '1.0.0', KEY, 0);
    const newest = await push(b, '1.1.0', KEY, 1);
    const first = await run(w);
    assert.equal(first.automations[0]!.result, 'pushed', JSON.stringify(first));
    assert.match(await file(w), /org\/app:1\.1\.0 /);
    const paths = signatureRequests(w).map((r) => `${r.path} ${r.status}`);
    // Registry 2.8 has no Referrers API (404), so the tag schema's index was read.
    assert.ok(
      paths.some((p) => p.includes(`/referrers/${newest} 404`)),
      paths.join('\n'),
    );
    assert.ok(
      paths.some((p) => p.includes(`/manifests/${newest.replace(':', '-')} 200`)),
      paths.join('\n'),
    );
    w.proxy!.resetCounts();
    const second = await run(w);
    assert.equal(second.automations[0]!.kept[0]!.reason, 'up-to-date');
    assert.deepEqual(signatureRequests(w), []);
  });

  test('keyless with a matching identity (Referrers API) → written, the tag schema never asked', async () => {
    const b = await start(KEYLESS, true);
    const { w } = b;
    await push(b, '1.0.0', KEYLESS_SIGNER, 0);
    const newest = await push(b, '1.1.0', KEYLESS_SIGNER, 1);
    const r = await run(w);
    assert.equal(r.automations[0]!.result, 'pushed', JSON.stringify(r));
    assert.match(await file(w), /org\/app:1\.1\.0 /);
    const reqs = signatureRequests(w);
    assert.ok(
      reqs.some((q) => q.kind === 'referrers' && q.path.includes(newest) && q.status === 200),
      JSON.stringify(reqs),
    );
    assert.ok(
      !reqs.some((q) => q.path.includes(`/manifests/${newest.replace(':', '-')}`)),
      JSON.stringify(reqs),
    );
    assert.equal(r.policies[0]!.unverified, undefined);
  });

  test('wrong identity, wrong issuer → never written; each says who signed', async () => {
    const b = await start(KEYLESS);
    const { w } = b;
    await push(b, '1.0.0', KEYLESS_SIGNER, 0);
    await push(
      b,
      '1.1.0',
      {
        kind: 'keyless',
        identity: { ...RELEASE, subject: 'https://github.com/evil/app/x.yml@refs/heads/main' },
      },
      1,
    );
    await push(
      b,
      '1.2.0',
      { kind: 'keyless', identity: { ...RELEASE, issuer: 'https://accounts.google.com' } },
      2,
    );
    const r = await run(w);
    const a = r.automations[0]!;
    assert.equal(a.changes.length, 0, JSON.stringify(a.changes));
    assert.match(await file(w), /org\/app:1\.0\.0 /);
    assert.equal(a.kept[0]!.reason, 'unverified');
    const u = r.policies[0]!.unverified!;
    assert.equal(u.tag, '1.2.0');
    assert.match(
      u.why,
      /issuer https:\/\/accounts\.google\.com\), which matches no matchOIDCIdentity/,
      u.why,
    );
    const explain = await w.pawl(['explain', 'flux-system/app']);
    assert.equal(explain.code, 0, explain.stderr);
    assert.match(explain.stdout, /1\.2\.0 .*matches no matchOIDCIdentity/, explain.stdout);
  });

  test('a bundle for another digest, a tampered bundle → never written', async () => {
    const b = await start(KEYED);
    const { w } = b;
    const base = await push(b, '1.0.0', KEY, 0);
    await push(b, '1.1.0', KEY, 1, { statementDigest: base });
    await push(b, '1.2.0', KEY, 2, { tamper: true });
    const r = await run(w);
    const a = r.automations[0]!;
    assert.equal(a.changes.length, 0, JSON.stringify(a.changes));
    assert.match(await file(w), /org\/app:1\.0\.0 /);
    const u = r.policies[0]!.unverified!;
    assert.equal(u.tag, '1.2.0');
    assert.match(u.why, /does not verify with the keys of Secret flux-system\/cosign-keys/, u.why);
    // The newest verified tag is the line's own: the other-digest one (1.1.0) was refused too.
    assert.equal(r.policies[0]!.candidate, '1.0.0');
    const explain = await w.pawl(['explain', 'flux-system/app']);
    assert.match(explain.stdout, /unverified/, explain.stdout);
  });

  test('a tag moved to an unsigned digest after its bundle verified → not written', async () => {
    const b = await start(KEYLESS, true);
    const { w } = b;
    await push(b, '1.0.0', KEYLESS_SIGNER, 0);
    const signed = await push(b, '1.1.0', KEYLESS_SIGNER, 1);
    const dry = await w.pawlJson<RunReport>(['run', '--dry-run']);
    assert.equal(dry.json.policies[0]!.candidate, '1.1.0', JSON.stringify(dry.json.policies));
    // 1.1.0 now names another image, which nobody signed; its old digest stays verified (cached).
    const moved = await push(b, '1.1.0', null, 5);
    assert.notEqual(moved, signed);
    const r = await run(w);
    assert.equal(r.policies[0]!.candidate, '1.0.0', JSON.stringify(r.policies));
    assert.doesNotMatch(await file(w), /1\.1\.0/);
    assert.equal(r.policies[0]!.unverified?.tag, '1.1.0');
    assert.match(r.policies[0]!.unverified!.why, new RegExp(`${moved}.*lists no Sigstore signature bundle`));
  });

  test('newest unsigned, an older bundle-signed one above the line → the older written, the newest unverified', async () => {
    const b = await start(KEYLESS);
    const { w } = b;
    await push(b, '1.0.0', KEYLESS_SIGNER, 0);
    await push(b, '1.1.0', KEYLESS_SIGNER, 1);
    const unsigned = await push(b, '1.2.0', null, 2);
    const r = await run(w);
    assert.equal(r.automations[0]!.result, 'pushed', JSON.stringify(r));
    assert.match(await file(w), /org\/app:1\.1\.0 /);
    const p = r.policies[0]!;
    assert.equal(p.candidate, '1.1.0');
    assert.equal(p.unverified?.tag, '1.2.0');
    assert.match(p.unverified!.why, new RegExp(`${unsigned}.*no referrers`), p.unverified!.why);
    // The selection record keeps it: the daemon's policy list shows it (after its own first pass).
    const serve = await startServe({ configDir: w.configDir, stateDir: w.stateDir });
    try {
      await serve.waitForLog((l) => l.msg === 'pass', 'first pass');
      const listed =
        await serve.adminGet<{ name: string; candidate: string; unverified: { tag: string } | null }[]>(
          '/api/v1/policies',
        );
      const app = listed.json.find((x) => x.name === 'flux-system/app');
      assert.equal(app?.candidate, '1.1.0', JSON.stringify(listed.json));
      assert.equal(app?.unverified?.tag, '1.2.0', JSON.stringify(listed.json));
    } finally {
      await serve.stop();
    }
  });
});
