import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EVENT_REASONS,
  Notifier,
  emptyMemory,
  eventsFrom,
  goTime,
  type AlertMemory,
  type NotifyMetrics,
  type PassObservation,
  type AlertEvent,
} from '../../src/notify/index.js';
import type { GuardEvent } from '../../src/guard/types.js';
import type { RunReport } from '../../src/records/index.js';
import { closedPort, loopbackCertificate, startReceiver, type Receiver } from '../helpers/receiver.js';
import {
  BLOCKED,
  COMMIT,
  MISSING,
  PINNED,
  PIN_COMMIT,
  TOKEN,
  automation,
  configWith,
  kept,
  report,
} from './fixtures.js';

const at = (m: number): Date => new Date(Date.UTC(2026, 10, 30, 9, m, 7, 250));

interface Counted extends NotifyMetrics {
  counts: Record<string, number>;
}

function countingMetrics(): Counted {
  const counts: Record<string, number> = {};
  const inc = (k: string): void => {
    counts[k] = (counts[k] ?? 0) + 1;
  };
  return {
    counts,
    delivered: (p) => inc(`delivered ${p}`),
    failed: (p) => inc(`failed ${p}`),
    retried: (p) => inc(`retried ${p}`),
    dropped: (p) => inc(`dropped ${p}`),
    suppressed: () => inc('suppressed'),
  };
}

/** A sleep the test controls: records each wait and returns at once (no real time passes). */
function instantSleep(): { sleep: (ms: number) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
  };
}

/** A report whose policy's newest tag 1.2.0 failed spec.verify (1.1.0 is the newest verified). */
function withUnverified(r: RunReport): RunReport {
  return {
    ...r,
    policies: r.policies.map((p) => ({
      ...p,
      unverified: { tag: '1.2.0', why: 'is not verified: no signature tag' },
    })),
  };
}

/** Three passes that between them produce every event type once. */
function passes(): PassObservation[] {
  const pinEvent: GuardEvent = {
    kind: 'pin',
    policy: 'apps/app',
    file: 'apps/d.yaml',
    line: 5,
    current: '1.0.0',
    candidate: '1.1.0',
    commit: PIN_COMMIT,
    detail: PINNED.detail,
  };
  const stale: GuardEvent = {
    kind: 'stale-scan',
    policy: 'apps/app',
    selected: '1.0.0',
    highWater: '1.1.0',
    highWaterExists: true,
  };
  const change = {
    file: 'apps/a.yaml',
    line: 12,
    setter: 'apps:app',
    policy: 'apps/app',
    old: '1.0.0',
    new: '1.1.0',
    reason: 'upgrade' as const,
  };
  const failedScan = (m: number) => ({ repository: 'apps/app', at: at(m), ok: false, error: 'HTTP 503' });
  return [
    {
      at: at(1),
      report: withUnverified(
        report([
          automation({
            result: 'pushed',
            commit: COMMIT,
            changes: [change],
            kept: [BLOCKED, MISSING, PINNED],
            pullRequest: {
              number: 12,
              url: 'https://gitea.example.test/org/fleet/pulls/12',
              action: 'opened',
              state: 'open',
              closed: [],
            },
          }),
        ]),
      ),
      guardEvents: [stale, pinEvent],
      scans: [failedScan(-1), failedScan(0), failedScan(1)],
    },
    {
      at: at(2),
      report: report([automation({ result: 'failed', error: 'git push: rejected (non-fast-forward)' })]),
      guardEvents: [],
      scans: [{ repository: 'apps/app', at: at(2), ok: true, error: null }],
    },
    {
      at: at(3),
      report: report([
        automation({
          kept: [
            BLOCKED,
            MISSING,
            kept('apps/d.yaml', 5, 'up-to-date', '1.1.0', '1.1.0', ''),
            kept(
              'apps/e.yaml',
              7,
              'too-new',
              '1.0.0',
              '1.1.0',
              '1.1.0 was first seen by pawl less than 1h ago.',
            ),
          ],
        }),
      ]),
      guardEvents: [],
    },
  ];
}

function derive(observations: PassObservation[]): AlertEvent[] {
  let memory: AlertMemory = emptyMemory();
  const out: AlertEvent[] = [];
  for (const o of observations) {
    const r = eventsFrom(memory, o);
    memory = r.memory;
    out.push(...r.events);
  }
  return out;
}

const body = (r: { body: Buffer }): Record<string, unknown> =>
  JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;

describe('Notifier against a webhook receiver on loopback', { concurrency: 1 }, () => {
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver({ token: TOKEN });
  });
  after(async () => {
    await rx.stop();
  });

  test('each event type arrives once, signed, with Flux’s event fields', async () => {
    rx.reset();
    const config = await configWith([
      { address: rx.url, secret: { token: TOKEN, headers: 'X-Team: images\n' } },
    ]);
    const metrics = countingMetrics();
    const n = new Notifier({ config, metrics, reportingInstance: 'pawl-0', sleep: instantSleep().sleep });
    const events = derive(passes());
    assert.deepEqual([...events.map((e) => e.reason)].sort(), [...EVENT_REASONS].sort());

    n.publish(events);
    assert.equal(rx.requests.length, 0, 'publish returns before anything is sent');
    await n.idle();
    // Publishing the same events again (a restarted deriver, a repeated pass) sends nothing new.
    n.publish(events);
    await n.idle();

    assert.equal(rx.requests.length, EVENT_REASONS.length);
    assert.equal(metrics.counts['delivered apps/hooks'], EVENT_REASONS.length);
    assert.equal(metrics.counts.suppressed, EVENT_REASONS.length);
    const byReason = new Map(rx.requests.map((r) => [body(r).reason as string, r]));
    for (const e of events) {
      const r = byReason.get(e.reason);
      assert.ok(r, `${e.reason} arrived`);
      assert.equal(r.signatureValid, true, `${e.reason} signature verifies`);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(r.headers['gotk-component'], 'pawl');
      assert.equal(r.headers['x-team'], 'images');
      const b = body(r);
      const apiVersion =
        e.object.kind === 'ImageUpdateAutomation'
          ? 'image.toolkit.fluxcd.io/v1beta2'
          : 'image.toolkit.fluxcd.io/v1';
      assert.deepEqual(b.involvedObject, { ...e.object, apiVersion });
      assert.equal(b.severity, e.severity);
      assert.equal(b.timestamp, goTime(e.at));
      assert.match(b.timestamp as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(b.message, e.message);
      assert.deepEqual(b.metadata, { cluster: 'prod', ...e.metadata });
      assert.equal(b.reportingController, 'pawl');
      assert.equal(b.reportingInstance, 'pawl-0');
      assert.deepEqual(Object.keys(b), [
        'involvedObject',
        'severity',
        'timestamp',
        'message',
        'reason',
        'metadata',
        'reportingController',
        'reportingInstance',
      ]);
    }
    assert.equal((body(byReason.get('UpgradeWritten')!).metadata as Record<string, string>).commit, COMMIT);
    assert.equal((body(byReason.get('PinCreated')!).metadata as Record<string, string>).commit, PIN_COMMIT);
    assert.equal(body(byReason.get('DowngradeBlocked')!).severity, 'error');
    assert.equal(body(byReason.get('ScanFailing')!).severity, 'error');
    assert.equal(body(byReason.get('UpgradeWritten')!).severity, 'info');
  });

  test('a signature made with another token does not verify (the check can fail)', async () => {
    rx.reset();
    const config = await configWith([{ address: rx.url, secret: { token: 'another-token' } }]);
    const n = new Notifier({ config, sleep: instantSleep().sleep });
    n.publish(derive(passes()).slice(0, 1));
    await n.idle();
    assert.equal(rx.requests.length, 1);
    assert.equal(rx.requests[0]!.signatureValid, false);
  });

  test('a burst of 1,000 identical events becomes one message; a changed one is sent; after the interval it is sent again', async () => {
    rx.reset();
    const config = await configWith([{ address: rx.url, secret: { token: TOKEN } }]);
    let now = at(10);
    const metrics = countingMetrics();
    const n = new Notifier({ config, metrics, now: () => now, sleep: instantSleep().sleep });
    const [e] = derive([{ at: at(10), report: report([automation({ kept: [BLOCKED] })]) }]);
    for (let i = 0; i < 500; i++) n.publish(e!);
    n.publish(Array.from({ length: 500 }, () => e!));
    await n.idle();
    assert.equal(rx.requests.length, 1);
    assert.equal(metrics.counts.suppressed, 999);

    n.publish({ ...e!, message: `${e!.message} (again)` });
    n.publish({ ...e!, metadata: { ...e!.metadata, candidate: '1.2.0' } });
    await n.idle();
    assert.equal(rx.requests.length, 3, 'a changed message or metadata is a new event');

    now = new Date(at(10).getTime() + 4 * 60_000);
    n.publish(e!);
    await n.idle();
    assert.equal(rx.requests.length, 3, 'within five minutes: still suppressed');
    now = new Date(at(10).getTime() + 5 * 60_000);
    n.publish(e!);
    await n.idle();
    assert.equal(rx.requests.length, 4, 'after the interval: sent again');
  });

  test('a receiver answering 500, or dropping the connection, is retried with growing backoff', async () => {
    rx.reset();
    rx.script('fail', 'drop', 'fail');
    const config = await configWith([{ address: rx.url, secret: { token: TOKEN } }]);
    const metrics = countingMetrics();
    const { sleep, waits } = instantSleep();
    const n = new Notifier({ config, metrics, sleep, random: () => 0.5 });
    const [e] = derive([{ at: at(20), report: report([automation({ kept: [MISSING] })]) }]);
    n.publish(e!);
    await n.idle();
    assert.equal(rx.requests.length, 4);
    assert.equal(rx.accepted().length, 1);
    assert.equal(metrics.counts['retried apps/hooks'], 3);
    assert.equal(metrics.counts['delivered apps/hooks'], 1);
    assert.equal(metrics.counts['failed apps/hooks'], undefined);
    // Each attempt posts the same signed bytes.
    assert.ok(rx.requests.every((r) => r.body.equals(rx.requests[0]!.body) && r.signatureValid));
    // 1s, 2s, 4s, each between half and all of it (random 0.5 → three quarters).
    assert.deepEqual(waits, [750, 1500, 3000]);
  });

  test("retryablehttp's policy by status: 429 and 5xx are retried, 501 and other 4xx are not", async () => {
    const config = await configWith([{ address: 'http://127.0.0.1:9/hook', secret: { token: TOKEN } }]);
    const [e] = derive([{ at: at(22), report: report([automation({ kept: [MISSING] })]) }]);
    for (const [status, posts] of [
      [429, 3],
      [500, 3],
      [502, 3],
      [503, 3],
      [501, 1],
      [400, 1],
      [404, 1],
      [410, 1],
    ] as const) {
      let n = 0;
      const notifier = new Notifier({
        config,
        sleep: instantSleep().sleep,
        attempts: 3,
        transport: async () => {
          n++;
          return { status, body: '' };
        },
      });
      notifier.publish(e!);
      await notifier.idle();
      assert.equal(n, posts, `status ${status}: ${posts} post(s)`);
    }
  });

  test('a 4xx answer is not retried; a receiver that stays down is given up after the attempts, and counted', async () => {
    rx.reset();
    rx.script('reject');
    const port = await closedPort();
    const config = await configWith([
      { name: 'hooks', address: rx.url, secret: { token: TOKEN } },
      { name: 'down', type: 'generic', address: `http://127.0.0.1:${port}/hook` },
    ]);
    const metrics = countingMetrics();
    const { sleep, waits } = instantSleep();
    const n = new Notifier({ config, metrics, sleep, attempts: 4 });
    const [e] = derive([{ at: at(21), report: report([automation({ kept: [MISSING] })]) }]);
    n.publish(e!);
    await n.idle();
    assert.equal(rx.requests.length, 1);
    assert.equal(metrics.counts['failed apps/hooks'], 1);
    assert.equal(metrics.counts['retried apps/hooks'], undefined);
    assert.equal(metrics.counts['failed apps/down'], 1);
    assert.equal(metrics.counts['retried apps/down'], 3);
    assert.equal(waits.length, 3);
    assert.deepEqual(n.stats()['apps/down'], { queued: 0, delivered: 0, failed: 1, retried: 3, dropped: 0 });
  });

  test('a slow receiver never stalls the caller or another Provider; its queue is bounded and drops the oldest', async () => {
    const slow = await startReceiver();
    const fast = await startReceiver();
    try {
      slow.script('hold');
      const config = await configWith([
        { name: 'slow', type: 'generic', address: slow.url },
        { name: 'fast', type: 'generic', address: fast.url },
      ]);
      const metrics = countingMetrics();
      const n = new Notifier({ config, metrics, queueSize: 3, sleep: instantSleep().sleep });
      const event = (i: number): AlertEvent => ({
        object: { kind: 'ImagePolicy', namespace: 'apps', name: 'app' },
        severity: 'error',
        reason: 'DowngradeBlocked',
        message: `event ${i}`,
        metadata: {},
        at: at(30),
      });
      n.publish(event(0));
      await slow.arrived(1);
      // The slow receiver holds event 0. Publishing more returns at once, every time, and the
      // other Provider delivers each one meanwhile.
      for (let i = 1; i <= 9; i++) {
        n.publish(event(i));
        await fast.arrived(i + 1);
      }
      assert.equal(fast.accepted().length, 10, 'the other Provider got everything meanwhile');
      assert.equal(slow.requests.length, 1, 'the slow one is still on its first');
      assert.equal(n.stats()['apps/slow']!.queued, 3);
      assert.equal(metrics.counts['dropped apps/slow'], 6);
      assert.equal(metrics.counts['dropped apps/fast'], undefined);
      slow.release();
      await n.idle();
      const got = slow.requests.map((r) => body(r).message);
      assert.deepEqual(got, ['event 0', 'event 7', 'event 8', 'event 9'], 'the oldest waiting were dropped');
    } finally {
      await slow.stop();
      await fast.stop();
    }
  });

  test('a receiver that does not answer within the Provider’s timeout is retried', async () => {
    const slow = await startReceiver();
    try {
      slow.script('hold');
      const config = await configWith([
        { name: 'slow', type: 'generic', address: slow.url, extra: '  timeout: 1s\n' },
      ]);
      const metrics = countingMetrics();
      const n = new Notifier({ config, metrics, sleep: instantSleep().sleep });
      n.publish({
        object: { kind: 'ImageRepository', namespace: 'apps', name: 'app' },
        severity: 'error',
        reason: 'ScanFailing',
        message: 'm',
        metadata: {},
        at: at(31),
      });
      await n.idle();
      // The held request timed out and was tried again. (On a loaded machine an answered attempt
      // may time out too; what must hold is that the timeout leads to a retry and a delivery.)
      assert.ok(slow.requests.length >= 2, `${slow.requests.length} requests`);
      assert.equal(metrics.counts['retried apps/slow'], slow.requests.length - 1);
      assert.equal(metrics.counts['delivered apps/slow'], 1);
    } finally {
      await slow.stop();
    }
  });

  test('through an HTTP proxy, and over TLS with the Provider’s CA', async () => {
    const proxy = await startReceiver();
    const pair = await loopbackCertificate();
    const secure = await startReceiver({ tls: pair, token: TOKEN });
    try {
      const config = await configWith([
        {
          name: 'proxied',
          type: 'generic',
          address: 'http://127.0.0.1:9/hook',
          extra: `  proxy: ${proxy.url.replace('/hook', '')}\n`,
        },
        { name: 'secure', address: secure.url, secret: { token: TOKEN } },
        {
          name: 'tunnelled',
          type: 'generic',
          address: secure.url,
          extra: `  proxy: ${proxy.url.replace('/hook', '')}\n`,
        },
      ]);
      // The CA comes from certSecretRef.
      config.secrets.set('apps/ca', {
        kind: 'Secret',
        apiVersion: 'v1',
        type: 'Opaque',
        metadata: { namespace: 'apps', name: 'ca', labels: {}, annotations: {} },
        source: { file: 'x', line: 1 },
        data: { 'ca.crt': pair.cert },
      });
      config.providers.get('apps/secure')!.spec.certSecretRef = 'ca';
      config.providers.get('apps/tunnelled')!.spec.certSecretRef = 'ca';
      const metrics = countingMetrics();
      const n = new Notifier({ config, metrics, sleep: instantSleep().sleep, attempts: 1 });
      n.publish({
        object: { kind: 'ImagePolicy', namespace: 'apps', name: 'app' },
        severity: 'info',
        reason: 'UpgradeWritten',
        message: 'via proxy & TLS <ok>',
        metadata: {},
        at: at(40),
      });
      await n.idle();
      assert.equal(proxy.requests.length, 1);
      assert.equal(proxy.requests[0]!.url, 'http://127.0.0.1:9/hook', 'the proxy got the absolute URI');
      assert.deepEqual(proxy.tunnels, [`127.0.0.1:${secure.port}`], 'HTTPS went through a CONNECT tunnel');
      assert.equal(secure.requests.length, 2);
      const signed = secure.requests.find((r) => r.headers['x-signature'] !== undefined)!;
      assert.equal(signed.signatureValid, true);
      // Go's encoding/json escapes <, > and &; the signature covers those bytes.
      assert.match(signed.body.toString(), /via proxy \\u0026 TLS \\u003cok\\u003e/);
      assert.equal(metrics.counts['delivered apps/secure'], 1);
      assert.equal(metrics.counts['delivered apps/tunnelled'], 1);
    } finally {
      await proxy.stop();
      await secure.stop();
    }
  });

  test('a Provider that cannot be used is reported and its events are counted as failed', async () => {
    const config = await configWith([{ address: rx.url, secret: { token: TOKEN } }]);
    config.secrets.delete('apps/hooks-secret');
    const metrics = countingMetrics();
    const n = new Notifier({ config, metrics });
    assert.deepEqual(n.problems, ['Provider apps/hooks: Secret apps/hooks-secret not found']);
    n.publish(derive(passes()).slice(0, 2));
    await n.idle();
    assert.equal(metrics.counts['failed apps/hooks'], 2);
  });
});
