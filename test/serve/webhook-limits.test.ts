/**
 * A stranger who can reach `--listen` must not be able to switch the webhooks off: requests
 * that send their headers and a byte of body and then vanish (or stall) hold nothing once they
 * end, the stalled ones are dropped at the body deadline, and none of them takes the slots that
 * verified requests need. Against the daemon in-process, with the real registry and git server,
 * over raw sockets on loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { pushTags } from '../helpers/push.js';
import { eventually, metricValue } from '../helpers/serve.js';
import { automationJob, startServer, type PassEvent, type Server } from '../../src/serve/index.js';
import { HOOK_PATH, TOKEN, inProcess, startServeWorld, type ServeWorld } from './fixtures.js';

const AUTOMATION = 'flux-system/fleet';
const BODY_TIMEOUT_MS = 3_000;

function pushEvent(tag: string): string {
  return JSON.stringify({
    events: [
      {
        id: randomUUID(),
        action: 'push',
        target: { mediaType: 'application/vnd.oci.image.manifest.v1+json', repository: 'team/app', tag },
      },
    ],
  });
}

/**
 * A request that announces a 100-byte body, sends its headers and one byte, and then stops.
 * Resolves once the bytes are written; `closed` resolves when the socket closes (either side).
 */
async function halfRequest(
  listen: string,
  path: string,
  localAddress: string,
): Promise<{ socket: Socket; closed: Promise<void> }> {
  const [host, port] = [
    listen.slice(0, listen.lastIndexOf(':')),
    Number(listen.slice(listen.lastIndexOf(':') + 1)),
  ];
  const socket = connect({ host, port, localAddress });
  socket.on('error', () => {});
  // Answers (503s) are read and dropped, so that the socket is not held up by its own buffers.
  socket.on('data', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const head =
    `POST ${path} HTTP/1.1\r\nHost: ${listen}\r\nContent-Type: application/json\r\n` +
    `Content-Length: 100\r\n\r\n{`;
  await new Promise<void>((resolve) => socket.write(head, () => resolve()));
  return { socket, closed };
}

/** Many at once, at most 100 connecting at a time (bounded, loopback only). */
async function halfRequests(n: number, listen: string, localAddress: string) {
  const out: Awaited<ReturnType<typeof halfRequest>>[] = [];
  for (let i = 0; i < n; i += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, (_, j) =>
        halfRequest(listen, (i + j) % 2 === 0 ? HOOK_PATH : `/hook/${randomUUID()}`, localAddress),
      ),
    );
    out.push(...batch);
  }
  return out;
}

describe('webhook limits: aborted and stalled uploads from a stranger', () => {
  let sw: ServeWorld;
  let server: Server;
  const passes: PassEvent[] = [];
  const metrics = async () => (await fetch(`http://${server.admin}/metrics`)).text();
  const idle = () =>
    eventually(async () => {
      const st = server.daemon.scheduler.status(automationJob(AUTOMATION));
      return st && !st.running && !st.queued ? true : undefined;
    }, 'the automation is idle');

  /** A valid registry notification for `tag` is accepted, and the tag reaches the Git remote. */
  async function validWebhookLands(tag: string): Promise<void> {
    await pushTags(sw.world.registry.url, 'team/app', [tag]);
    const before = passes.length;
    const res = await fetch(`http://${server.listen}${HOOK_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/vnd.docker.distribution.events.v1+json',
        authorization: `Bearer ${TOKEN}`,
      },
      body: pushEvent(tag),
    });
    assert.equal(res.status, 202, `the valid webhook: ${await res.text()}`);
    await eventually(
      async () =>
        passes.slice(before).some((p) => p.report.automations[0]?.result === 'pushed') ? true : undefined,
      `a pass that pushes ${tag}`,
    );
    await idle();
    const log = await sw.world.git.log(sw.world.repoName, 'main');
    assert.match(
      await sw.world.git.show(sw.world.repoName, log[0]!.sha, 'apps/app.yaml'),
      new RegExp(`app:${tag.replaceAll('.', '\\.')} `),
    );
  }

  /** Nothing is left held: no upload, no verified request in flight; ready. */
  async function nothingHeld(): Promise<void> {
    await eventually(async () => {
      const m = await metrics();
      return metricValue(m, 'pawl_webhook_uploads') === 0 ? true : undefined;
    }, 'no upload left open');
    const m = await metrics();
    assert.equal(metricValue(m, 'pawl_webhook_in_flight'), 0);
    assert.equal((await fetch(`http://${server.admin}/readyz`)).status, 200);
  }

  before(async () => {
    sw = await startServeWorld();
    await pushTags(sw.world.registry.url, 'team/app', ['1.0.0']);
    server = await startServer({
      ...inProcess(sw),
      receivers: { bodyTimeoutMs: BODY_TIMEOUT_MS, headersTimeoutMs: BODY_TIMEOUT_MS },
    });
    server.daemon.events.onReport((e) => passes.push(e));
    await eventually(async () => (passes.length >= 1 ? true : undefined), 'the first pass');
    await idle();
  });
  after(async () => {
    await server?.stop(5_000);
    await sw?.world.close();
  });

  test('64 requests that send headers and a byte and then close: nothing held, a valid webhook lands', async () => {
    // From the very address the valid webhook comes from: their slots must come back.
    const before = await metrics();
    const abortedBefore = metricValue(before, 'pawl_webhook_requests_total', { result: 'aborted' });
    const timedOutBefore = metricValue(before, 'pawl_webhook_requests_total', { result: 'timeout' });
    const half = await halfRequests(64, server.listen, '127.0.0.1');
    // Each is held as an upload (all 64 places of this address) before its sender vanishes.
    await eventually(
      async () => (metricValue(await metrics(), 'pawl_webhook_uploads') === 64 ? true : undefined),
      'the daemon holds the 64 uploads',
    );
    for (const h of half) h.socket.destroy();
    await Promise.all(half.map((h) => h.closed));
    await nothingHeld();
    const m = await metrics();
    assert.equal(metricValue(m, 'pawl_webhook_requests_total', { result: 'aborted' }) - abortedBefore, 64);
    // Given back when the connection closed, not by the body deadline.
    assert.equal(metricValue(m, 'pawl_webhook_requests_total', { result: 'timeout' }), timedOutBefore);
    await validWebhookLands('1.1.0');
    await nothingHeld();
  });

  test('requests whose headers never end are closed by the daemon (headers and idle deadlines); nothing is held', async () => {
    const [host, port] = [server.listen.split(':')[0]!, Number(server.listen.split(':')[1])];
    const sockets = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const socket = connect({ host, port, localAddress: '127.0.0.3' });
        socket.on('error', () => {});
        // The daemon's answer (a 408 or 400) is read and dropped: a socket whose data nobody
        // reads never sees the end that follows it, and never closes (a hang, when the daemon
        // answered before closing rather than closing first).
        socket.on('data', () => {});
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        await new Promise<void>((resolve) => socket.once('connect', resolve));
        socket.write(`POST ${HOOK_PATH} HTTP/1.1\r\nHost: ${server.listen}\r\nContent-Len`);
        return { closed };
      }),
    );
    // Closed by the daemon; nothing was held for them (their headers never ended).
    await Promise.all(sockets.map((s) => s.closed));
    await nothingHeld();
  });

  test('1,000 stalled requests from a stranger: a valid webhook lands meanwhile; all dropped at the deadline; memory bounded', async () => {
    const rssBefore = process.memoryUsage().rss;
    const counts = (m: string) => ({
      refused: metricValue(m, 'pawl_webhook_requests_total', { result: 'too-many-uploads' }),
      timedOut: metricValue(m, 'pawl_webhook_requests_total', { result: 'timeout' }),
      held: metricValue(m, 'pawl_webhook_uploads'),
    });
    const start = counts(await metrics());
    const half = await halfRequests(1_000, server.listen, '127.0.0.2');
    // The daemon has read every one of them: held as an upload, refused at once, or (connecting
    // 1,000 takes a while) already ended by the body deadline.
    const seen = await eventually(async () => {
      const c = counts(await metrics());
      const n = c.held + c.refused - start.refused + c.timedOut - start.timedOut;
      return n >= 1_000 ? c : undefined;
    }, 'the daemon read all 1,000 requests');
    assert.ok(seen.held <= 64, `one address holds at most 64 uploads (${seen.held})`);
    await validWebhookLands('1.2.0');
    // The body deadline ends the stalled ones: each socket is closed by the daemon.
    await Promise.all(half.map((h) => h.closed));
    await nothingHeld();
    const end = counts(await metrics());
    assert.ok(end.timedOut > start.timedOut, 'some were held until the deadline');
    assert.equal(
      end.refused - start.refused + end.timedOut - start.timedOut,
      1_000,
      'each was refused at once or ended by the body deadline',
    );
    const grown = process.memoryUsage().rss - rssBefore;
    assert.ok(grown < 256 * 1024 * 1024, `RSS grew by ${grown} bytes over 1,000 stalled requests`);
    await validWebhookLands('1.3.0');
  });
});
