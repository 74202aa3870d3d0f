/**
 * `spec.verify` keyless with the legacy `.sig` tag (docs/gates.md), against the real registry:
 * signatures written as cosign 2's keyless `cosign sign` writes them by default (no
 * --new-bundle-format; test/helpers/sigstore.ts): the simple-signing layer with the signature,
 * the Fulcio-like certificate and chain, and the Rekor bundle (a hashedrekord entry and its SET),
 * all from a test trust root given as `trustedRootSecretRef`.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushImage } from '../helpers/push.js';
import {
  cosignSignKeyless,
  testTrustRoot,
  trustedRootSecret,
  type Identity,
  type LegacyKeylessOptions,
} from '../helpers/sigstore.js';
import { gitObjects, imageObjects, markedValues, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const ISSUER = 'https://token.actions.githubusercontent.com';
const RELEASE: Identity = {
  issuer: ISSUER,
  subject: 'https://github.com/org/app/.github/workflows/release.yml@refs/heads/main',
};

const config = imageObjects('app', '{{REGISTRY}}/org/app', "semver:\n  range: '>=1.0.0'", {
  spec: `verify:
  provider: cosign
  matchOIDCIdentity:
    - issuer: '${ISSUER.replace(/\./g, '\\.')}'
      subject: 'https://github\\.com/org/app/\\.github/workflows/.*'
  trustedRootSecretRef:
    name: sigstore-root
`,
});

const root = testTrustRoot();
const stranger = testTrustRoot();

async function world(): Promise<World> {
  return startWorld({
    proxy: true,
    files: {
      'values.yaml': markedValues('1.0.0'),
    },
    config: {
      'git.yaml': gitObjects(),
      'app.yaml': config,
      'root.yaml': trustedRootSecret('sigstore-root', root.json),
    },
  });
}

/** Pushes a distinct image at `tag` and, unless `who` is null, its keyless `.sig`. */
async function push(
  w: World,
  tag: string,
  who: Identity | null,
  n: number,
  opts: LegacyKeylessOptions = {},
): Promise<string> {
  const { digest } = await pushImage(w.registry.url, 'org/app', tag, {
    created: new Date(Date.UTC(2026, 0, 1 + n)),
  });
  if (who) await cosignSignKeyless(w.registry.url, w.registryHost, 'org/app', digest, root, who, opts);
  return digest;
}

/** Requests reading signatures: `.sig` manifests, referrers, and blobs. */
const signatureRequests = (w: World) =>
  w.proxy!.requests.filter(
    (r) =>
      r.method === 'GET' &&
      (r.kind === 'referrers' || r.kind === 'blob' || /\/manifests\/sha256[-:]/.test(r.path)),
  );

async function run(w: World): Promise<RunReport> {
  const r = await w.pawlJson<RunReport>(['run']);
  assert.equal(r.code, 0, r.stderr);
  return r.json;
}

const file = (w: World) => w.git.show(w.repoName, 'main', 'values.yaml');

describe('spec.verify: keyless signatures in the legacy .sig tag', () => {
  const worlds: World[] = [];
  after(() => Promise.all(worlds.map((w) => w.close())));
  const start = async () => {
    const w = await world();
    worlds.push(w);
    return w;
  };

  test('the right identity → written, after the bundles were looked for; the second pass asks for no signature', async () => {
    const w = await start();
    await push(w, '1.0.0', RELEASE, 0);
    const newest = await push(w, '1.1.0', RELEASE, 1);
    const first = await run(w);
    assert.equal(first.automations[0]!.result, 'pushed', JSON.stringify(first));
    assert.match(await file(w), /org\/app:1\.1\.0 /);
    const paths = signatureRequests(w).map((r) => `${r.path} ${r.status}`);
    assert.ok(
      paths.some((p) => p.includes(`/manifests/${newest.replace(':', '-')}.sig 200`)),
      paths.join('\n'),
    );
    // Keyless only, the bundles are looked for first: none (Registry 2.8 has no Referrers API, no
    // referrers tag), then the .sig tag.
    assert.ok(
      paths.some((p) => p.includes(`/referrers/${newest} 404`)),
      paths.join('\n'),
    );
    w.proxy!.resetCounts();
    const second = await run(w);
    assert.equal(second.automations[0]!.kept[0]!.reason, 'up-to-date');
    assert.deepEqual(signatureRequests(w), []);
  });

  test('wrong identity, wrong issuer, another CA, a SET that does not hold, another digest → never written', async () => {
    const w = await start();
    const base = await push(w, '1.0.0', RELEASE, 0);
    await push(w, '1.1.0', { ...RELEASE, subject: 'https://github.com/evil/app/x.yml@refs/heads/main' }, 1);
    await push(w, '1.2.0', { ...RELEASE, issuer: 'https://accounts.google.com' }, 2);
    await push(w, '1.3.0', RELEASE, 3, { ca: stranger });
    await push(w, '1.4.0', RELEASE, 4, { tamper: 'body' });
    await push(w, '1.5.0', RELEASE, 5, { integratedTime: new Date(Date.now() + 3_600_000) });
    await push(w, '1.6.0', RELEASE, 6, { payloadDigest: base });
    const r = await run(w);
    const a = r.automations[0]!;
    assert.equal(a.changes.length, 0, JSON.stringify(a.changes));
    assert.match(await file(w), /org\/app:1\.0\.0 /);
    assert.equal(r.policies[0]!.candidate, '1.0.0', JSON.stringify(r.policies));
    assert.equal(r.policies[0]!.unverified?.tag, '1.6.0');
    assert.match(r.policies[0]!.unverified!.why, new RegExp(`names ${base}, not sha256:`));
    // Each refusal's words, from explain's per-tag record of the pass.
    const explain = await w.pawl(['explain', 'flux-system/app']);
    assert.equal(explain.code, 0, explain.stderr);
    assert.match(explain.stdout, /1\.6\.0 .*names sha256:/, explain.stdout);
  });
});
