/**
 * Providers configured carelessly (issue 22): Secret headers Node would refuse to send, a
 * receiver that redirects, a Secret that is missing. Real receivers on loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { Notifier, testProvider, type AlertEvent } from '../../src/notify/index.js';
import { configDir } from '../config/fixtures.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { TOKEN, configText, configWith } from './fixtures.js';

const event: AlertEvent = {
  object: { kind: 'ImagePolicy', namespace: 'apps', name: 'app' },
  severity: 'error',
  reason: 'DowngradeBlocked',
  message: 'Downgrade blocked (apps/b.yaml:9): kept.',
  metadata: {},
  at: new Date(Date.UTC(2026, 10, 30, 9, 0, 0)),
};

async function load(text: string) {
  const { dir, cleanup } = await configDir({ 'f.yaml': text });
  try {
    return await loadConfig([dir]);
  } finally {
    await cleanup();
  }
}

describe('Provider Secret headers are checked at load', () => {
  const bad: [string, string, RegExp][] = [
    [
      'a line break in a value',
      'X-Team: "images\\r\\nX-Injected: yes"\n',
      /header X-Team has a line break or another character HTTP does not allow/,
    ],
    ['a space in a name', 'X Team: images\n', /the 1st header's name is not a valid HTTP header name/],
    ['a colon in a name', '"X-Team:": images\n', /the 1st header's name is not a valid HTTP header name/],
    ['a line break in a name', 'X-Ok: 1\n"X-Team\\nEvil": images\n', /the 2nd header's name is not a valid/],
    ['not a map', '- X-Team\n', /must be a YAML map of header: value/],
  ];
  for (const [name, headers, message] of bad) {
    test(`${name}: an error naming the Provider and the key, never the value; the Provider is skipped`, async () => {
      const { problems, config, skipped } = await load(
        configText([{ address: 'http://127.0.0.1:9/hook', secret: { token: TOKEN, headers } }]),
      );
      const errors = problems.filter((p) => p.severity === 'error');
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.equal(errors[0]!.object, 'Provider apps/hooks');
      assert.match(errors[0]!.message, /^Secret apps\/hooks-secret key "headers": /);
      assert.match(errors[0]!.message, message);
      assert.doesNotMatch(errors[0]!.message, /images|Injected|Evil/);
      assert.equal(config.providers.has('apps/hooks'), false);
      assert.deepEqual(
        skipped.map((s) => `${s.kind} ${s.namespace}/${s.name}`),
        ['Provider apps/hooks', 'Alert apps/to-hooks'],
      );
    });
  }

  test('good headers load and are sent', async () => {
    const rx = await startReceiver({ token: TOKEN });
    try {
      const config = await configWith([
        { address: rx.url, secret: { token: TOKEN, headers: "X-Team: images\nX-Weird_Name!: 'a\tb'\n" } },
      ]);
      const r = await testProvider(config, 'apps/hooks');
      assert.equal(r.ok, true, r.error ?? '');
      assert.equal(rx.requests[0]!.headers['x-team'], 'images');
      assert.equal(rx.requests[0]!.headers['x-weird_name!'], 'a\tb');
    } finally {
      await rx.stop();
    }
  });
});

describe('a Provider that redirects', () => {
  let first: Receiver;
  let second: Receiver;
  before(async () => {
    first = await startReceiver({ token: TOKEN });
    second = await startReceiver({ token: TOKEN });
  });
  after(async () => {
    await first.stop();
    await second.stop();
  });

  for (const status of [307, 308]) {
    test(`${status} to the same origin: followed with the body, the signature and the Secret's headers`, async () => {
      first.reset();
      const config = await configWith([
        { address: first.url, secret: { token: TOKEN, headers: 'X-Api-Key: k1\n' } },
      ]);
      first.script({ redirect: status, location: '/moved' });
      const n = new Notifier({ config });
      n.publish(event);
      await n.idle();
      assert.equal(first.requests.length, 2);
      const [a, b] = first.requests;
      assert.equal(b!.url, '/moved');
      assert.equal(b!.method, 'POST');
      assert.deepEqual(b!.body, a!.body);
      assert.equal(b!.signatureValid, true);
      assert.equal(b!.headers['x-api-key'], 'k1');
      assert.equal(n.stats()['apps/hooks']!.delivered, 1);
    });

    test(`${status} to another origin: followed without the token's signature, Authorization or Secret headers`, async () => {
      first.reset();
      second.reset();
      const config = await configWith([
        {
          address: first.url,
          secret: { token: TOKEN, headers: 'X-Api-Key: k1\nAuthorization: Basic Zm9v\n' },
        },
        { name: 'chat', type: 'slack', address: first.url, secret: { token: 'xoxb-secret' } },
      ]);
      first.script(
        { redirect: status, location: `${second.url}?from=hooks` },
        { redirect: status, location: `${second.url}?from=chat` },
      );
      const n = new Notifier({ config });
      n.publish(event);
      await n.idle();
      assert.equal(second.requests.length, 2);
      for (const r of second.requests) {
        assert.equal(r.method, 'POST');
        assert.ok(r.body.length > 0);
        assert.equal(r.headers.authorization, undefined, r.url);
        assert.equal(r.headers['x-signature'], undefined, r.url);
        assert.equal(r.headers['x-api-key'], undefined, r.url);
        assert.equal(r.headers['content-type'], 'application/json');
      }
      // The first hop had them.
      assert.ok(first.requests.some((r) => r.headers.authorization === 'Bearer xoxb-secret'));
      assert.ok(first.requests.some((r) => r.signatureValid === true));
    });
  }

  test('a redirect loop stops after 10 hops, is not retried, and counts as failed', async () => {
    first.reset();
    const config = await configWith([{ address: first.url, secret: { token: TOKEN } }]);
    // Enough for the Notifier's request and the probe's below, each the first try and 10 hops.
    first.script(...Array.from({ length: 22 }, () => ({ redirect: 307, location: '/again' })));
    const n = new Notifier({ config, sleep: () => Promise.resolve() });
    n.publish(event);
    await n.idle();
    assert.equal(first.requests.length, 11, 'the first request and 10 redirects');
    assert.equal(n.stats()['apps/hooks']!.failed, 1);
    assert.equal(n.stats()['apps/hooks']!.retried, 0);
    const probe = await testProvider(config, 'apps/hooks');
    assert.match(probe.error ?? '', /more than 10 redirects/);
  });

  test('a redirect to something other than http(s) is a failure, not followed', async () => {
    first.reset();
    const config = await configWith([{ address: first.url, secret: { token: TOKEN } }]);
    first.script({ redirect: 308, location: 'file:///etc/passwd' });
    const r = await testProvider(config, 'apps/hooks');
    assert.equal(r.ok, false);
    assert.match(r.error ?? '', /redirected \(308\) to a file: URL; only http and https are followed/);
    assert.equal(first.requests.length, 1);
  });
});

describe('a Provider whose Secret is missing', () => {
  test('is an error at load; it and its Alerts are skipped, and nothing is sent or counted', async () => {
    const rx = await startReceiver({ token: TOKEN });
    try {
      const text = configText([{ address: rx.url, secret: { token: TOKEN } }]).replace(
        /---\napiVersion: v1\nkind: Secret\n[\s\S]*?(?=---\n)/,
        '',
      );
      assert.doesNotMatch(text, /kind: Secret/);
      const { config, problems, skipped } = await load(text);
      const errors = problems.filter((p) => p.severity === 'error');
      assert.equal(errors.length, 1);
      assert.equal(errors[0]!.object, 'Provider apps/hooks');
      assert.match(errors[0]!.message, /^Secret apps\/hooks-secret not found/);
      assert.deepEqual(
        skipped.map((s) => `${s.kind} ${s.namespace}/${s.name} ${s.reason}`),
        ['Provider apps/hooks invalid', 'Alert apps/to-hooks dependency'],
      );
      const n = new Notifier({ config });
      assert.deepEqual(n.problems, []);
      n.publish(event);
      await n.idle();
      assert.equal(rx.requests.length, 0);
      assert.deepEqual(n.stats(), {});
    } finally {
      await rx.stop();
    }
  });
});
