/**
 * A second SIGTERM during the grace period stops the real `pawl serve` process at once, with
 * exit code 1, instead of waiting out a grace period of an hour. The run in progress is a scan
 * of a registry on loopback that accepts the connection and never answers; every step waits
 * on an event (the connection, the log record), none on time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, type ServeProcess } from '../helpers/serve.js';

let dir: string;
let registry: Server;
const sockets = new Set<Socket>();
let connected: Promise<void>;
let serve: ServeProcess | undefined;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pawl-second-signal-'));
  let onConnect!: () => void;
  connected = new Promise((resolve) => (onConnect = resolve));
  // Accepts, reads and never answers: the scan stays in progress for as long as the test needs.
  registry = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('data', () => {});
    onConnect();
  });
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
  const port = (registry.address() as { port: number }).port;
  await writeFile(
    join(dir, 'app.yaml'),
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec:
  image: 127.0.0.1:${port}/team/app
  interval: 1h
  timeout: 60m
`,
  );
});

after(async () => {
  await serve?.stop('SIGKILL');
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => registry.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

test(
  'a second SIGTERM while a run holds the grace period exits at once with code 1',
  { timeout: 120_000 },
  async () => {
    serve = await startServe({
      configDir: dir,
      stateDir: join(dir, 'state'),
      args: ['--grace-period', '1h', '--no-watch'],
    });
    await connected;
    serve.child.kill('SIGTERM');
    await serve.waitForLog(
      (r) => r.msg === 'stopping: waiting for runs in progress',
      'the first SIGTERM waits for the scan in progress',
    );
    serve.child.kill('SIGTERM');
    const exit = await serve.exited;
    assert.deepEqual(
      exit,
      { code: 1, signal: null },
      'the second signal exits with code 1, not by the signal',
    );
    assert.ok(
      serve.records().some((r) => r.msg === 'second signal: exiting now'),
      'and says why it stopped without finishing',
    );
  },
);
