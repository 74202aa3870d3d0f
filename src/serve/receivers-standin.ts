/**
 * STAND-IN for src/serve/receivers/ (branch `receivers`), coded against its agreed contract so
 * the daemon can be built and tested meanwhile. Only `generic` and `distribution` are verified
 * here. Deleted when that branch is merged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config, Receiver, ReceiverType } from '../config/types.js';
import { refKey } from '../config/types.js';

export const MAX_WEBHOOK_BODY_BYTES = 1 << 20;

export function receiverHookPath(token: string, name: string, namespace: string): string {
  return `/hook/${createHash('sha256')
    .update(token + name + namespace)
    .digest('hex')}`;
}

export interface ReceiverTarget {
  namespace: string;
  name: string;
  type: ReceiverType;
  token: string;
  events: string[];
  resources: Receiver['spec']['resources'];
}

export interface IncomingWebhook {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface ReceivedEvent {
  receiver: string;
  type: ReceiverType;
  images: { repository?: string; tag?: string }[];
}

export type WebhookVerdict =
  | { status: 202; event: ReceivedEvent }
  | { status: 200; ignored: string }
  | { status: 400 | 401 | 403; error: string };

const same = (a: string, b: string): boolean => {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a.length === b.length;
};

export function verifyWebhook(target: ReceiverTarget, req: IncomingWebhook): WebhookVerdict {
  const receiver = `${target.namespace}/${target.name}`;
  if (target.type === 'generic') return { status: 202, event: { receiver, type: target.type, images: [] } };
  if (target.type !== 'distribution') return { status: 403, error: `stand-in cannot verify ${target.type}` };
  const auth = req.headers.authorization;
  if (typeof auth !== 'string') return { status: 401, error: 'missing Authorization header' };
  if (!same(auth, `Bearer ${target.token}`)) return { status: 403, error: 'wrong token' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body.toString('utf8'));
  } catch {
    return { status: 400, error: 'body is not JSON' };
  }
  const events = (parsed as { events?: unknown }).events;
  if (!Array.isArray(events)) return { status: 400, error: 'no events array' };
  const images: { repository?: string; tag?: string }[] = [];
  for (const e of events as { action?: unknown; target?: { repository?: unknown; tag?: unknown } }[]) {
    if (e.action !== 'push' || typeof e.target?.tag !== 'string') continue;
    images.push({
      tag: e.target.tag,
      ...(typeof e.target.repository === 'string' ? { repository: e.target.repository } : {}),
    });
  }
  if (images.length === 0) return { status: 200, ignored: 'no push of a tag' };
  return { status: 202, event: { receiver, type: target.type, images } };
}

export function resolveTriggers(
  event: ReceivedEvent,
  receiver: Receiver,
  config: Config,
): { repositories: string[]; skipped: string[] } {
  const repositories: string[] = [];
  for (const r of receiver.spec.resources) {
    if (r.kind !== 'ImageRepository') continue;
    const ns = r.namespace ?? receiver.metadata.namespace;
    for (const repo of config.imageRepositories.values()) {
      if (repo.metadata.namespace !== ns) continue;
      const byName = r.name === '*' || r.name === repo.metadata.name;
      const labels = Object.entries(r.matchLabels ?? {}).every(([k, v]) => repo.metadata.labels[k] === v);
      if (!byName || !labels) continue;
      const path = repo.spec.image.split('/').slice(1).join('/');
      if (event.images.some((i) => i.repository === undefined || i.repository === path))
        repositories.push(refKey(repo.metadata));
    }
  }
  return { repositories: [...new Set(repositories)], skipped: [] };
}
