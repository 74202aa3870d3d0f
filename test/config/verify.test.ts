/**
 * `spec.verify` on an ImagePolicy as the loader reads it (docs/gates.md): Flux's
 * `OCIRepository.spec.verify` shape; errors name the field or the Secret and say what to write.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { loadConfig } from '../../src/config/load.js';
import { POLICY, REPO, configDir } from './fixtures.js';

const PEM = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .publicKey.export({ type: 'spki', format: 'pem' })
  .toString();

const secret = (keys: Record<string, string>): string =>
  `apiVersion: v1\nkind: Secret\nmetadata: {name: keys, namespace: apps}\nstringData:\n${Object.entries(keys)
    .map(([k, v]) => `  ${k}: |\n${v.trimEnd().replace(/^/gm, '    ')}\n`)
    .join('')}`;

async function load(verify: string, keys: Record<string, string> = { 'cosign.pub': PEM }) {
  const { dir, cleanup } = await configDir({
    'a.yaml': [REPO, `${POLICY}  verify:\n${verify.replace(/^/gm, '    ')}\n`, secret(keys)].join('---\n'),
  });
  try {
    return await loadConfig([dir]);
  } finally {
    await cleanup();
  }
}

const errors = (r: Awaited<ReturnType<typeof load>>): string[] =>
  r.problems.filter((p) => p.severity === 'error').map((p) => p.message);

describe('spec.verify', () => {
  test('provider cosign with a Secret of *.pub keys is read', async () => {
    const r = await load('provider: cosign\nsecretRef:\n  name: keys');
    assert.deepEqual(errors(r), []);
    assert.deepEqual(r.config.imagePolicies.get('apps/app')?.spec.verify, {
      provider: 'cosign',
      secretRef: 'keys',
      matchOIDCIdentity: [],
    });
  });

  test('a Secret without *.pub keys, or whose key is not PEM, is an error naming it', async () => {
    const none = await load('secretRef:\n  name: keys', { 'cosign.key': 'x' });
    assert.match(errors(none).join('\n'), /Secret apps\/keys has no key ending in \.pub/);
    const bad = await load('secretRef:\n  name: keys', { 'cosign.pub': 'not a key' });
    assert.match(errors(bad).join('\n'), /Secret apps\/keys key cosign\.pub is not a PEM public key/);
  });

  test('keyless identities need a trusted root; a bad regex is named; secretRef or identities are required', async () => {
    const keyless = await load(
      'matchOIDCIdentity:\n  - issuer: "^https://token.actions.githubusercontent.com$"\n    subject: ".*"',
    );
    assert.match(
      errors(keyless).join('\n'),
      /trustedRootSecretRef.*is required with matchOIDCIdentity.*trusted_root\.json/,
    );
    const rooted = await load(
      'matchOIDCIdentity:\n  - issuer: "^https://token.actions.githubusercontent.com$"\n    subject: ".*"\ntrustedRootSecretRef:\n  name: keys',
      { 'trusted_root.json': '{}' },
    );
    assert.deepEqual(errors(rooted), []);
    assert.equal(rooted.config.imagePolicies.get('apps/app')?.spec.verify?.trustedRootSecretRef, 'keys');
    const noRootKey = await load(
      'matchOIDCIdentity:\n  - issuer: "x"\n    subject: ".*"\ntrustedRootSecretRef:\n  name: keys',
      { 'root.json': '{}' },
    );
    assert.match(errors(noRootKey).join('\n'), /Secret apps\/keys has no key trusted_root\.json/);
    const regex = await load(
      'secretRef:\n  name: keys\nmatchOIDCIdentity:\n  - issuer: "("\n    subject: ".*"',
    );
    assert.match(errors(regex).join('\n'), /not a valid RE2 regular expression/);
    const missing = await load('provider: cosign');
    assert.match(errors(missing).join('\n'), /secretRef.*is required.*or give matchOIDCIdentity/);
    const notation = await load('provider: notation\nsecretRef:\n  name: keys');
    assert.match(errors(notation).join('\n'), /provider/);
  });
});
