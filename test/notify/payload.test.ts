/**
 * Each Provider type's request, as received by a loopback receiver, against the shapes of
 * Flux's notification-controller (internal/notifier/{forwarder,slack,discord,rocket,teams,
 * google_chat}.go). Expected bodies are written out in Go's field order and compared byte for byte.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fluxEvent, Notifier, payloadFor, type FluxEvent, type AlertEvent } from '../../src/notify/index.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { configWith } from './fixtures.js';

const EVENT: AlertEvent = {
  object: { kind: 'ImagePolicy', namespace: 'apps', name: 'app' },
  severity: 'error',
  reason: 'DowngradeBlocked',
  message: 'Downgrade blocked (apps/b.yaml:9): 2.0.0 is newer than 1.1.0; kept.\nsecond line',
  metadata: { file: 'apps/b.yaml:9', current: '2.0.0' },
  at: new Date('2026-11-30T09:00:00.123Z'),
};

const AUTHOR = 'imagepolicy/app.apps';
// The Alert adds cluster: prod; keys sorted.
const FIELDS: [string, string][] = [
  ['cluster', 'prod'],
  ['current', '2.0.0'],
  ['file', 'apps/b.yaml:9'],
];

async function deliver(rx: Receiver, type: string, extra = '', secret?: Record<string, string>) {
  rx.reset();
  const config = await configWith([
    { name: 'p', type, address: rx.url, extra, ...(secret ? { secret } : {}) },
  ]);
  const n = new Notifier({ config, reportingInstance: 'pawl-0', attempts: 1 });
  n.publish(EVENT);
  await n.idle();
  assert.equal(rx.requests.length, 1, `${type}: one request`);
  return rx.requests[0]!;
}

describe('Provider payloads as Flux posts them', { concurrency: 1 }, () => {
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
  });
  after(async () => {
    await rx.stop();
  });

  test('generic: the event JSON, with gotk-component and the Secret’s headers', async () => {
    const r = await deliver(rx, 'generic', '', { headers: 'X-Team: images\nAuthorization: Basic Zm9v\n' });
    const expected = {
      involvedObject: {
        kind: 'ImagePolicy',
        namespace: 'apps',
        name: 'app',
        apiVersion: 'image.toolkit.fluxcd.io/v1',
      },
      severity: 'error',
      timestamp: '2026-11-30T09:00:00Z',
      message: EVENT.message,
      reason: 'DowngradeBlocked',
      metadata: Object.fromEntries(FIELDS),
      reportingController: 'pawl',
      reportingInstance: 'pawl-0',
    };
    assert.equal(r.body.toString(), JSON.stringify(expected));
    assert.equal(r.headers['gotk-component'], 'pawl');
    assert.equal(r.headers['x-team'], 'images');
    assert.equal(r.headers.authorization, 'Basic Zm9v');
    assert.equal(r.headers['x-signature'], undefined, 'generic does not sign');
  });

  test('slack: one attachment, danger for errors, Bearer token, username defaulting to the controller', async () => {
    const r = await deliver(rx, 'slack', "  channel: '#images'\n", { token: 'xoxb-1' });
    const expected = {
      channel: '#images',
      username: 'pawl',
      icon_url: '',
      icon_emoji: '',
      attachments: [
        {
          fallback: `${AUTHOR}: Downgrade blocked (apps/b.yaml:9): 2.0.0 is newer than 1.1.0; kept.`,
          color: 'danger',
          author_name: AUTHOR,
          text: EVENT.message,
          mrkdwn_in: ['text'],
          fields: FIELDS.map(([title, value]) => ({ title, value, short: false })),
        },
      ],
    };
    assert.equal(r.body.toString(), JSON.stringify(expected));
    assert.equal(r.headers.authorization, 'Bearer xoxb-1');
  });

  test('discord: Slack’s shape at the webhook’s /slack path, no channel, no fallback', async () => {
    const r = await deliver(rx, 'discord', "  username: 'pawl-bot'\n");
    assert.equal(r.url, '/hook/slack');
    const expected = {
      channel: '',
      username: 'pawl-bot',
      icon_url: '',
      icon_emoji: '',
      attachments: [
        {
          fallback: '',
          color: 'danger',
          author_name: AUTHOR,
          text: EVENT.message,
          mrkdwn_in: ['text'],
          fields: FIELDS.map(([title, value]) => ({ title, value, short: false })),
        },
      ],
    };
    assert.equal(r.body.toString(), JSON.stringify(expected));
  });

  test('rocket: Slack’s shape with Rocket.Chat’s colours and no default username', async () => {
    const r = await deliver(rx, 'rocket', "  channel: 'ops'\n");
    const b = JSON.parse(r.body.toString()) as {
      channel: string;
      username: string;
      attachments: { color: string; fallback: string }[];
    };
    assert.equal(b.channel, 'ops');
    assert.equal(b.username, '');
    assert.equal(b.attachments[0]!.color, '#FF0000');
    assert.equal(b.attachments[0]!.fallback, '');
  });

  test('msteams: Flux’s Adaptive Card (1.4), the message in attention colour for errors', async () => {
    const r = await deliver(rx, 'msteams');
    const expected = {
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.4',
            body: [
              {
                type: 'Container',
                items: [
                  { type: 'TextBlock', text: AUTHOR, size: 'large', weight: 'bolder', wrap: true },
                  { type: 'TextBlock', text: EVENT.message, color: 'attention', wrap: true },
                  { type: 'FactSet', facts: FIELDS.map(([title, value]) => ({ title, value })) },
                ],
              },
            ],
            msteams: { width: 'Full' },
          },
        },
      ],
    };
    assert.equal(r.body.toString(), JSON.stringify(expected));
  });

  test('msteams: an Office 365 connector URL gets the legacy MessageCard, as in Flux', () => {
    const e: FluxEvent = {
      involvedObject: { kind: 'ImagePolicy', namespace: 'apps', name: 'app' },
      severity: 'info',
      timestamp: '2026-11-30T09:00:00Z',
      message: 'm',
      reason: 'UpgradeWritten',
      metadata: { commit: 'abc' },
      reportingController: 'pawl',
    };
    const p = payloadFor(
      {
        provider: 'apps/p',
        type: 'msteams',
        url: 'https://org.webhook.office.com/x',
        headers: {},
        timeoutMs: 1,
      },
      e,
    );
    assert.equal(
      p.body.toString(),
      JSON.stringify({
        '@type': 'MessageCard',
        '@context': 'http://schema.org/extensions',
        themeColor: '0076D7',
        summary: AUTHOR,
        sections: [
          { activityTitle: 'm', activitySubtitle: AUTHOR, facts: [{ name: 'commit', value: 'abc' }] },
        ],
      }),
    );
  });

  test('googlechat: a card with the message (red for errors) and one key-value per metadata key', async () => {
    const r = await deliver(rx, 'googlechat');
    const expected = {
      cards: [
        {
          header: { title: AUTHOR, subtitle: 'pawl', imageUrl: null, imageStyle: null },
          sections: [
            {
              header: '',
              widgets: [
                { textParagraph: { text: `<font color="#ff0000">${EVENT.message}</font>` }, keyValue: null },
              ],
            },
            {
              header: '',
              widgets: FIELDS.map(([k, v]) => ({
                textParagraph: null,
                keyValue: { topLabel: k, content: v, contentMultiline: false, bottomLabel: null, icon: null },
              })),
            },
          ],
        },
      ],
    };
    // Go escapes < and > in strings.
    const go = JSON.stringify(expected).replace(/</g, '\\u003c').replace(/>/g, '\\u003e');
    assert.equal(r.body.toString(), go);
  });

  test('Alert summary and eventMetadata join the metadata; the emitter’s own keys win', async () => {
    rx.reset();
    const config = await configWith(
      [{ name: 'p', type: 'generic', address: rx.url }],
      '  summary: images in prod\n',
    );
    config.alerts.get('apps/to-p')!.spec.eventMetadata.current = 'from the alert';
    const n = new Notifier({ config, attempts: 1 });
    n.publish(EVENT);
    await n.idle();
    const b = JSON.parse(rx.requests[0]!.body.toString()) as { metadata: Record<string, string> };
    assert.deepEqual(b.metadata, {
      cluster: 'prod',
      current: '2.0.0',
      file: 'apps/b.yaml:9',
      summary: 'images in prod',
    });
  });
});

describe('fluxEvent: the message limit', () => {
  // The Event CRD's message has maxLength 39000 (notification-controller api/v1beta3/event_types.go).
  const at = (n: number): string =>
    fluxEvent({ ...EVENT, message: 'x'.repeat(n) }, { metadata: {}, reportingController: 'pawl' }).message;
  test('39000 characters pass whole; one more is cut to 39000', () => {
    assert.equal(at(39_000).length, 39_000);
    assert.equal(at(39_001).length, 39_000);
    assert.equal(at(50_000).length, 39_000);
  });
});
