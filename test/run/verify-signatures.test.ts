/**
 * `spec.verify` (docs/gates.md) against the real registry with signatures made as cosign makes
 * them (test/helpers/cosign.ts): only a tag whose digest a trusted key signed is a candidate; the
 * newest verified tag is written, never one below the line; a refusal is reported `unverified`
 * with why; acceptances are cached by digest, so a second pass asks for no signature.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushImage } from '../helpers/push.js';
import { cosignKey, cosignSign, keysSecret, type CosignKey } from '../helpers/cosign.js';
import { gitObjects, imageObjects, markedValues, startWorld, type World } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const policy = (digest = 'Never') =>
  imageObjects('app', '{{REGISTRY}}/org/app', "semver:\n  range: '>=1.0.0'", {
    spec: `digestReflectionPolicy: ${digest}\nverify:\n  provider: cosign\n  secretRef:\n    name: cosign-keys\n`,
  });

const trusted = cosignKey();
const stranger = cosignKey();

async function world(line = '1.0.0', digest = 'Never'): Promise<World> {
  return startWorld({
    proxy: true,
    files: { 'values.yaml': markedValues(line) },
    config: {
      'git.yaml': gitObjects(),
      'app.yaml': policy(digest),
      'keys.yaml': keysSecret('cosign-keys', { 'cosign.pub': trusted.publicPem }),
    },
  });
}

/** Pushes a distinct image at `tag` (its own config) and, unless `key` is null, signs it. */
async function push(w: World, tag: string, key: CosignKey | null, n: number): Promise<string> {
  const { digest } = await pushImage(w.registry.url, 'org/app', tag, {
    created: new Date(Date.UTC(2026, 0, 1 + n)),
  });
  if (key) await cosignSign(w.registry.url, w.registryHost, 'org/app', digest, key);
  return digest;
}

const signatureRequests = (w: World): number =>
  w.proxy!.requests.filter((r) => r.path.includes('.sig') || (r.kind === 'blob' && r.method === 'GET'))
    .length;

async function run(w: World, args: string[] = []): Promise<RunReport> {
  const r = await w.pawlJson<RunReport>(['run', ...args]);
  assert.equal(r.code, 0, r.stderr);
  return r.json;
}

const file = (w: World) => w.git.show(w.repoName, 'main', 'values.yaml');

describe('spec.verify: cosign key signatures', () => {
  const worlds: World[] = [];
  after(() => Promise.all(worlds.map((w) => w.close())));

  test('signed newest → written; the second pass asks for no signature', async () => {
    const w = await world();
    worlds.push(w);
    await push(w, '1.0.0', trusted, 0);
    await push(w, '1.1.0', trusted, 1);
    const first = await run(w);
    assert.equal(first.automations[0]!.result, 'pushed', JSON.stringify(first.automations[0]));
    assert.match(await file(w), /org\/app:1\.1\.0 /);
    assert.ok(signatureRequests(w) > 0, 'the first pass read the signature');
    w.proxy!.resetCounts();
    w.proxy!.requests.length = 0;
    const second = await run(w);
    assert.equal(second.automations[0]!.kept[0]!.reason, 'up-to-date');
    assert.equal(signatureRequests(w), 0, JSON.stringify(w.proxy!.requests));
  });

  test('newest unsigned, an older signed one above the line → the older written, the newest reported unverified', async () => {
    const w = await world();
    worlds.push(w);
    await push(w, '1.0.0', trusted, 0);
    await push(w, '1.1.0', trusted, 1);
    const unsigned = await push(w, '1.2.0', null, 2);
    const first = await run(w);
    const a = first.automations[0]!;
    assert.equal(a.result, 'pushed', JSON.stringify(a));
    assert.match(await file(w), /org\/app:1\.1\.0 /);
    const p = first.policies.find((x) => x.name === 'flux-system/app')!;
    assert.equal(p.candidate, '1.1.0');
    assert.equal(p.unverified?.tag, '1.2.0');
    assert.match(p.unverified!.why, new RegExp(`${unsigned}.*no signature tag sha256-`));
    // Next pass: the line holds the newest verified tag; kept as unverified, with why.
    const second = await run(w);
    const k = second.automations[0]!.kept[0]!;
    assert.equal(k.reason, 'unverified');
    assert.match(k.detail, /newest tag 1\.2\.0 .*not verified.*1\.1\.0 is already the newest verified tag/);
    const explain = await w.pawl(['explain', 'flux-system/app']);
    assert.match(explain.stdout, /1\.2\.0 .*not verified: no signature tag/, explain.stdout);
  });

  test('wrong key, a signature for another digest, a tampered payload → never written', async () => {
    const w = await world();
    worlds.push(w);
    const base = await push(w, '1.0.0', trusted, 0);
    await push(w, '1.1.0', stranger, 1);
    const other = await pushImage(w.registry.url, 'org/app', '1.2.0', { created: new Date('2026-02-01Z') });
    // A valid signature by the trusted key, but its payload names 1.0.0's digest.
    await cosignSign(w.registry.url, w.registryHost, 'org/app', other.digest, trusted, {
      payloadDigest: base,
    });
    const tampered = await pushImage(w.registry.url, 'org/app', '1.3.0', {
      created: new Date('2026-03-01Z'),
    });
    // Signed over another payload than the one stored (the stored one names the right digest).
    const { simpleSigningPayload } = await import('../helpers/cosign.js');
    await cosignSign(w.registry.url, w.registryHost, 'org/app', tampered.digest, trusted, {
      signedPayload: simpleSigningPayload(`${w.registryHost}/org/app`, base),
    });
    const r = await run(w);
    const a = r.automations[0]!;
    assert.equal(a.changes.length, 0, JSON.stringify(a.changes));
    assert.match(await file(w), /org\/app:1\.0\.0 /);
    assert.equal(a.kept[0]!.reason, 'unverified');
    const why = r.policies[0]!.unverified!.why;
    assert.match(why, /by none of the keys of Secret flux-system\/cosign-keys/, why);
    assert.equal(r.policies[0]!.unverified!.tag, '1.3.0');
    // Each refusal, tag by tag, through explain's JSON-free text is long; the store's decision says it.
    const explain = await w.pawl(['explain', 'flux-system/app']);
    assert.equal(explain.code, 0, explain.stderr);
    assert.match(explain.stdout, /unverified: 1\.3\.0 .*by none of the keys/, explain.stdout);
  });

  test('a tag moved to an unsigned digest after it was verified → not written', async () => {
    const w = await world('1.0.0', 'IfNotPresent');
    worlds.push(w);
    await push(w, '1.0.0', trusted, 0);
    const signed = await push(w, '1.1.0', trusted, 1);
    const dry = await run(w, ['--dry-run']);
    assert.equal(dry.policies[0]!.candidate, '1.1.0', JSON.stringify(dry.policies));
    // 1.1.0 now names another image, which nobody signed.
    const moved = await push(w, '1.1.0', null, 5);
    assert.notEqual(moved, signed);
    const r = await run(w);
    // The newest verified tag is 1.0.0: its line only gains the verified digest.
    assert.equal(r.policies[0]!.candidate, '1.0.0', JSON.stringify(r.policies));
    assert.doesNotMatch(await file(w), /1\.1\.0/);
    assert.equal(r.policies[0]!.unverified?.tag, '1.1.0');
    assert.match(r.policies[0]!.unverified!.why, new RegExp(`${moved}.*no signature tag`));
  });
});
