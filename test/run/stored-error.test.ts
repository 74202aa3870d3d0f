/**
 * Issue 23, item 6: a stored scan error is dated and says how to retry now, and a repository
 * whose Secret changed (a fixed password) has another fingerprint, so the next pass scans it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderRun, storedWhen } from '../../src/cli/commands/run.js';
import type { CommandContext } from '../../src/cli/context.js';
import { emptyConfig, type ImageRepository, type Secret } from '../../src/config/index.js';
import { secretPrint } from '../../src/run/secret-prints.js';

test('a stored scan error says when it was said, and how to retry now', () => {
  let out = '';
  const ctx = {
    stdout: { write: (s: string) => ((out += s), true) },
    options: {},
  } as unknown as CommandContext;
  const errorAt = new Date(Date.now() - 3 * 3600_000).toISOString();
  renderRun(ctx, {
    repositories: [
      {
        name: 'flux-system/web',
        tags: 0,
        scanned: false,
        anomalies: [],
        error: 'HTTP 401 Unauthorized',
        errorAt,
      },
    ],
    policies: [],
    automations: [],
  });
  assert.match(
    out,
    /^repository flux-system\/web: scan failed \(at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, 3 h ago\): HTTP 401 Unauthorized$/m,
  );
  assert.match(out, /to retry now, pawl scan flux-system\/web or pawl run --refresh/);
  assert.equal(
    storedWhen('2026-12-01T20:00:00.000Z', new Date('2026-12-01T20:00:40Z')),
    'at 2026-12-01T20:00:00Z, 40 s ago',
  );
});

test("a Secret's new password changes the repository's fingerprint; an unrelated Secret does not", () => {
  const config = emptyConfig();
  const repo = {
    metadata: { namespace: 'flux-system', name: 'web' },
    spec: { secretRef: 'regcred' },
  } as unknown as ImageRepository;
  const secret = (password: string): Secret =>
    ({ data: { username: Buffer.from('bob'), password: Buffer.from(password) } }) as unknown as Secret;
  config.secrets.set('flux-system/regcred', secret('old'));
  const before = secretPrint(config, repo);
  config.secrets.set('flux-system/other', secret('whatever'));
  assert.equal(secretPrint(config, repo), before);
  config.secrets.set('flux-system/regcred', secret('fixed'));
  assert.notEqual(secretPrint(config, repo), before);
  assert.ok(!before.includes('old'));
});
