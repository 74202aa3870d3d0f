/**
 * `spec.git.commit.signingKey` as Flux v1 defines it: `type` gpg (the default, key `git.asc`)
 * or ssh (key `identity`, the GitRepository SSH Secret's layout).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { AUTOMATION, GIT, POLICY, REPO, configDir } from './fixtures.js';

const secret = (name: string, keys: string[]): string =>
  `apiVersion: v1\nkind: Secret\nmetadata: {name: ${name}, namespace: apps}\nstringData:\n${keys.map((k) => `  ${k}: x\n`).join('')}`;

async function load(signingKey: string, keys: string[]) {
  const { dir, cleanup } = await configDir({
    'a.yaml': [
      REPO,
      POLICY,
      GIT,
      AUTOMATION.replace('    push:', `      signingKey: ${signingKey}\n    push:`),
      secret('key', keys),
    ].join('---\n'),
  });
  try {
    return await loadConfig([dir]);
  } finally {
    await cleanup();
  }
}

const errors = (r: Awaited<ReturnType<typeof load>>): string[] =>
  r.problems.filter((p) => p.severity === 'error').map((p) => p.message);

describe('signingKey', () => {
  test('type ssh with an identity Secret is accepted (what flux create image update --signing-key-type=ssh writes)', async () => {
    const r = await load('{type: ssh, secretRef: {name: key}}', ['identity', 'password']);
    assert.deepEqual(errors(r), []);
    assert.deepEqual(r.config.automations.get('apps/fleet')?.spec.git.commit.signingKey, {
      secretRef: 'key',
      type: 'ssh',
    });
  });

  test('without type it is gpg, as in Flux, and needs git.asc', async () => {
    const ok = await load('{secretRef: {name: key}}', ['git.asc', 'passphrase']);
    assert.deepEqual(errors(ok), []);
    assert.equal(ok.config.automations.get('apps/fleet')?.spec.git.commit.signingKey?.type, 'gpg');
    const explicit = await load('{type: gpg, secretRef: {name: key}}', ['git.asc']);
    assert.deepEqual(errors(explicit), []);
  });

  test('an SSH key without type: ssh is refused with a hint, as Flux reads git.asc then', async () => {
    const r = await load('{secretRef: {name: key}}', ['identity']);
    assert.equal(errors(r).length, 1);
    assert.match(errors(r)[0]!, /no "git\.asc" key.*set signingKey\.type: ssh/);
  });

  test('type ssh with only git.asc names the missing identity key', async () => {
    const r = await load('{type: ssh, secretRef: {name: key}}', ['git.asc']);
    assert.equal(errors(r).length, 1);
    assert.match(errors(r)[0]!, /Secret apps\/key has no "identity" key; signingKey type ssh/);
  });

  test('type is Flux enum gpg|ssh', async () => {
    const r = await load('{type: x509, secretRef: {name: key}}', ['git.asc']);
    assert.deepEqual(
      errors(r).filter((m) => m.includes('x509')),
      ['spec.git.commit.signingKey.type: "x509" is not one of gpg, ssh'],
    );
    const upper = await load('{type: SSH, secretRef: {name: key}}', ['identity']);
    assert.match(errors(upper).join('\n'), /"SSH" is not one of gpg, ssh; did you mean ssh\?/);
  });
});
