/**
 * The request each Provider type receives, shaped as Flux's notification-controller posts it
 * (internal/notifier/*.go): the same JSON fields in the same order, the same headers. Where Go
 * iterates a map (Slack fields, Teams facts, Google Chat key-values) Flux's order is random;
 * pawl sorts by key.
 */
import { createHmac } from 'node:crypto';
import type { ProviderType } from '../config/index.js';
import { goJson, type FluxEvent } from './event.js';

/** What a Provider resolves to, with its Secrets read. */
export interface Target {
  /** `ns/name` of the Provider. */
  provider: string;
  type: ProviderType;
  url: string;
  token?: string;
  /** Extra request headers (generic and generic-hmac only, as in Flux). */
  headers: Record<string, string>;
  username?: string;
  channel?: string;
  proxy?: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  timeoutMs: number;
}

export interface Payload {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Flux's `author`/title for chat providers: `imagepolicy/app.apps`. */
function objectName(e: FluxEvent): string {
  return `${e.involvedObject.kind.toLowerCase()}/${e.involvedObject.name}.${e.involvedObject.namespace}`;
}

const entries = (e: FluxEvent): [string, string][] =>
  Object.entries(e.metadata ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

function slackLike(
  e: FluxEvent,
  opts: { channel: string; username: string; color: string; fallback: string },
): unknown {
  return {
    channel: opts.channel,
    username: opts.username,
    icon_url: '',
    icon_emoji: '',
    attachments: [
      {
        fallback: opts.fallback,
        color: opts.color,
        author_name: objectName(e),
        text: e.message,
        mrkdwn_in: ['text'],
        fields: entries(e).map(([title, value]) => ({ title, value, short: false })),
      },
    ],
  };
}

/** Flux picks the legacy MessageCard for Office 365 connector URLs, else an Adaptive Card. */
export function teamsUsesMessageCard(url: string): boolean {
  try {
    return new URL(url).hostname.endsWith('.webhook.office.com');
  } catch {
    return false;
  }
}

function teams(e: FluxEvent, url: string): unknown {
  const name = objectName(e);
  const error = e.severity === 'error';
  if (teamsUsesMessageCard(url)) {
    return {
      '@type': 'MessageCard',
      '@context': 'http://schema.org/extensions',
      themeColor: error ? 'FF0000' : '0076D7',
      summary: name,
      sections: [
        {
          activityTitle: e.message,
          activitySubtitle: name,
          facts: entries(e).map(([k, v]) => ({ name: k, value: v })),
        },
      ],
    };
  }
  // The summary fact first, the others by key (Flux sorts them too).
  const meta = entries(e);
  const facts = [...meta.filter(([k]) => k === 'summary'), ...meta.filter(([k]) => k !== 'summary')].map(
    ([title, value]) => ({ title, value }),
  );
  const message = {
    type: 'TextBlock',
    text: e.message,
    ...(error ? { color: 'attention' } : {}),
    wrap: true,
  };
  return {
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
                { type: 'TextBlock', text: name, size: 'large', weight: 'bolder', wrap: true },
                message,
                // Go's omitempty drops an empty fact list.
                facts.length > 0 ? { type: 'FactSet', facts } : { type: 'FactSet' },
              ],
            },
          ],
          msteams: { width: 'Full' },
        },
      },
    ],
  };
}

function googleChat(e: FluxEvent): unknown {
  const text = e.severity === 'error' ? `<font color="#ff0000">${e.message}</font>` : e.message;
  const sections: unknown[] = [{ header: '', widgets: [{ textParagraph: { text }, keyValue: null }] }];
  const meta = entries(e);
  if (meta.length > 0) {
    sections.push({
      header: '',
      widgets: meta.map(([k, v]) => ({
        textParagraph: null,
        keyValue: { topLabel: k, content: v, contentMultiline: false, bottomLabel: null, icon: null },
      })),
    });
  }
  return {
    cards: [
      {
        header: { title: objectName(e), subtitle: e.reportingController, imageUrl: null, imageStyle: null },
        sections,
      },
    ],
  };
}

/** Discord's Slack-compatible endpoint: Flux appends `/slack` to the webhook URL. */
export function discordUrl(url: string): string {
  if (url.endsWith('/slack')) return url;
  const u = new URL(url);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/slack`;
  return u.toString();
}

/** HMAC-SHA256 of the body with the token, as Flux's generic-hmac signs (`sha256=<hex>`). */
export function signature(body: Buffer, token: string): string {
  return `sha256=${createHmac('sha256', token).update(body).digest('hex')}`;
}

/**
 * The headers of a request to `t` that must not follow a redirect to another origin: the token
 * (`Authorization`), what is made with it (`X-Signature`), and the Secret's `headers` but for
 * Content-Type, which says what the body is.
 */
export function credentialHeaders(t: Target): string[] {
  return [
    'Authorization',
    'X-Signature',
    ...Object.keys(t.headers).filter((h) => h.toLowerCase() !== 'content-type'),
  ];
}

export function payloadFor(t: Target, e: FluxEvent): Payload {
  const json = { 'Content-Type': 'application/json' };
  switch (t.type) {
    case 'generic':
    case 'generic-hmac': {
      const body = goJson(e);
      const headers: Record<string, string> = {
        ...json,
        'gotk-component': e.reportingController,
        ...t.headers,
      };
      if (t.type === 'generic-hmac' && t.token) headers['X-Signature'] = signature(body, t.token);
      return { url: t.url, headers, body };
    }
    case 'slack': {
      const body = goJson(
        slackLike(e, {
          channel: t.channel ?? '',
          username: t.username || e.reportingController,
          color: e.severity === 'error' ? 'danger' : 'good',
          fallback: `${objectName(e)}: ${e.message.split('\n')[0]}`,
        }),
      );
      return {
        url: t.url,
        headers: { ...json, ...(t.token ? { Authorization: `Bearer ${t.token}` } : {}) },
        body,
      };
    }
    case 'discord':
      return {
        url: discordUrl(t.url),
        headers: json,
        body: goJson(
          slackLike(e, {
            channel: '',
            username: t.username || e.reportingController,
            color: e.severity === 'error' ? 'danger' : 'good',
            fallback: '',
          }),
        ),
      };
    case 'rocket':
      return {
        url: t.url,
        headers: json,
        body: goJson(
          slackLike(e, {
            channel: t.channel ?? '',
            username: t.username ?? '',
            color: e.severity === 'error' ? '#FF0000' : '#0076D7',
            fallback: '',
          }),
        ),
      };
    case 'msteams':
      return { url: t.url, headers: json, body: goJson(teams(e, t.url)) };
    case 'googlechat':
      return { url: t.url, headers: json, body: goJson(googleChat(e)) };
  }
}

/** Flux checks Slack's Web API answer (`ok`), not only the status, for chat.postMessage. */
export function rejectsBody(t: Target, body: string): string | null {
  if (t.type !== 'slack' || t.url !== 'https://slack.com/api/chat.postMessage') return null;
  try {
    const r = JSON.parse(body) as { ok?: unknown; error?: unknown };
    return r.ok === true ? null : `Slack responded with error: ${String(r.error)}`;
  } catch {
    return 'unable to read Slack response';
  }
}
