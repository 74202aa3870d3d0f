import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { configDir } from '../config/fixtures.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { TOKEN, configText } from './fixtures.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function pawl(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, PAWL_LOG_LEVEL: 'silent' } },
      (err, stdout) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout }),
    );
  });
}

describe('pawl notify test', { concurrency: 1 }, () => {
  let rx: Receiver;
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    rx = await startReceiver({ token: TOKEN });
    ({ dir, cleanup } = await configDir({
      'f.yaml': configText([{ address: rx.url, secret: { token: TOKEN } }]),
    }));
  });
  after(async () => {
    await rx.stop();
    await cleanup();
  });

  test('sends one signed test event to the Provider and exits 0 when it is accepted', async () => {
    rx.reset();
    const { code, stdout } = await pawl(['notify', 'test', '--provider', 'hooks', '-c', dir]);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /^Provider apps\/hooks: accepted \(HTTP 200\)$/m);
    assert.equal(rx.requests.length, 1);
    assert.equal(rx.requests[0]!.signatureValid, true);
    const b = JSON.parse(rx.requests[0]!.body.toString()) as Record<string, unknown>;
    assert.equal(b.reason, 'NotificationTest');
    assert.deepEqual(b.involvedObject, {
      kind: 'Provider',
      namespace: 'apps',
      name: 'hooks',
      apiVersion: 'notification.toolkit.fluxcd.io/v1beta3',
    });
  });

  test('a receiver answering 500 makes it exit 1 with the status; an unknown Provider is a usage error', async () => {
    rx.reset();
    rx.script('fail');
    const failed = await pawl(['notify', 'test', '--provider', 'apps/hooks', '-c', dir, '--json']);
    assert.equal(failed.code, 1);
    const out = JSON.parse(failed.stdout) as { ok: boolean; status: number; error: string };
    assert.equal(out.ok, false);
    assert.equal(out.status, 500);
    assert.match(out.error, /request failed with status code 500/);
    const unknown = await pawl(['notify', 'test', '--provider', 'apps/nope', '-c', dir]);
    assert.equal(unknown.code, 2);
  });
});
