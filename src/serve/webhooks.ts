/**
 * The daemon's side of the webhook receivers: which Receiver a `/hook/…` path belongs to, what
 * its verdict means for the scheduler, and replays. Verifying each vendor's signature is the
 * receivers module's job (src/serve/receivers/); this file only mounts it.
 */
import { createHash } from 'node:crypto';
import { refKey, type Config } from '../config/index.js';
import { errorMessage, type Logger } from '../util/index.js';
import type { WebhookResult } from './metrics.js';
import {
  MAX_WEBHOOK_BODY_BYTES,
  handleWebhook,
  receiverRoutes,
  type IncomingWebhook,
  type ReceiverRoutes,
} from './receivers/index.js';

export { MAX_WEBHOOK_BODY_BYTES };

/** Every Receiver whose token Secret is readable, by its Flux path; the others are logged. */
export function buildRoutes(config: Config, log: Logger): ReceiverRoutes {
  const routes = receiverRoutes(config);
  for (const p of routes.problems)
    log.warn({ receiver: p.receiver }, `${p.message}; the Receiver is not served`);
  // Flux shows this as status.webhookPath: a hash of the token, never the token.
  for (const [path, hook] of routes.byPath)
    log.info({ receiver: refKey(hook.receiver.metadata), path }, 'receiver ready');
  return routes;
}

/** How long an accepted event is remembered (docs/receivers.md, "Replays"). */
export const REPLAY_WINDOW_MS = 10 * 60_000;
/**
 * For `generic`, whose requests sign nothing and often carry no body at all (`curl -X POST` from
 * CI): a shorter window, so that two builds a few minutes apart are two events, while a sender's
 * retry or a burst of the same request is still one.
 */
export const GENERIC_REPLAY_WINDOW_MS = 60_000;

/**
 * Remembers recently accepted events per receiver: the same signed content delivered again (a
 * retry, or someone replaying a captured request) does no work twice. An event is known by the
 * delivery id its body carries, else by the hash of the body — never by a header id, which the
 * signature does not cover and a replayer may change at will. Bounded in size.
 */
export class ReplayGuard {
  readonly #seen = new Map<string, { at: number; windowMs: number }>();
  constructor(private readonly max = 4096) {}

  /**
   * True when the same event was accepted for `receiver` within `windowMs`; records it otherwise.
   */
  replayed(
    receiver: string,
    replayId: string | undefined,
    body: Buffer,
    now: number,
    windowMs = REPLAY_WINDOW_MS,
  ): boolean {
    const key = this.#key(receiver, replayId, body);
    const seen = this.#seen.get(key);
    if (seen !== undefined && now - seen.at < seen.windowMs) return true;
    this.#seen.delete(key);
    this.#seen.set(key, { at: now, windowMs });
    // Map keeps insertion order: the first entries are the oldest.
    while (this.#seen.size > this.max) this.#seen.delete(this.#seen.keys().next().value!);
    return false;
  }

  /** Forgets an event that was not acted on after all, so that its retry is not a replay. */
  forget(receiver: string, replayId: string | undefined, body: Buffer): void {
    this.#seen.delete(this.#key(receiver, replayId, body));
  }

  #key(receiver: string, replayId: string | undefined, body: Buffer): string {
    const hash = createHash('sha256').update(receiver).update('\0');
    if (replayId !== undefined) hash.update('id\0').update(replayId);
    else hash.update('body\0').update(body);
    return hash.digest('base64');
  }
}

export interface WebhookSink {
  current: { config: Config; routes: ReceiverRoutes };
  trigger(
    repositories: readonly string[],
    automations?: readonly string[],
    tags?: readonly string[],
  ): Promise<{ automations: string[]; repositories: string[] }>;
}

export interface WebhookAnswer {
  status: number;
  result: WebhookResult;
  receiver: string | null;
  body: Record<string, unknown>;
}

const RESULTS: Record<number, WebhookResult> = {
  200: 'ignored',
  400: 'malformed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not-found',
  413: 'too-large',
  503: 'suspended',
};

/**
 * One request: the receivers module's verdict, then replays, then the work queue. When the work
 * cannot be queued (the database of the replicas is unreachable) the answer is 503: the sender
 * retries, and nothing is lost.
 */
export async function acceptWebhook(
  sink: WebhookSink,
  replays: ReplayGuard,
  path: string,
  req: IncomingWebhook,
  now: number,
  log: Logger,
): Promise<WebhookAnswer> {
  const out = handleWebhook(sink.current.routes, sink.current.config, { ...req, path });
  if (out.status === 404)
    return { status: 404, result: 'not-found', receiver: null, body: { error: out.error } };
  const receiver = out.receiver;
  if (out.status === 200) {
    log.debug({ receiver, ignored: out.ignored }, 'webhook ignored');
    return { status: 200, result: 'ignored', receiver, body: { ignored: out.ignored } };
  }
  if (out.status !== 202) {
    log.info({ receiver, status: out.status, error: out.error }, 'webhook refused');
    return {
      status: out.status,
      result: RESULTS[out.status] ?? 'malformed',
      receiver,
      body: { error: out.error },
    };
  }
  const windowMs = out.event.type === 'generic' ? GENERIC_REPLAY_WINDOW_MS : REPLAY_WINDOW_MS;
  const replayId = out.event.replayId;
  if (replays.replayed(receiver, replayId, req.body, now, windowMs)) {
    log.info({ receiver, delivery: out.event.delivery }, 'webhook replayed; already acted on');
    return {
      status: 200,
      result: 'replayed',
      receiver,
      body: { ignored: 'this event was already received' },
    };
  }
  const { repositories, automations, tags, skipped } = out.triggers;
  const nothing = (why: string): WebhookAnswer => {
    log.info({ receiver, skipped }, `webhook verified; ${why}`);
    return { status: 200, result: 'triggered-nothing', receiver, body: { ignored: why, skipped } };
  };
  if (repositories.length === 0 && automations.length === 0)
    return nothing('no resource of the receiver is due for this event');
  let started: { automations: string[]; repositories: string[] };
  try {
    started = await sink.trigger(repositories, automations, tags);
  } catch (err) {
    // The sender will deliver it again: it must not then count as a replay.
    replays.forget(receiver, replayId, req.body);
    log.warn({ receiver, err: errorMessage(err) }, 'webhook not queued; the sender will retry');
    return {
      status: 503,
      result: 'unavailable',
      receiver,
      body: { error: 'the work queue is unavailable; retry later' },
    };
  }
  if (started.automations.length === 0 && started.repositories.length === 0)
    return nothing('every automation it would run is suspended');
  log.info(
    { receiver, repositories, automations: started.automations, skipped: skipped.length },
    'webhook accepted',
  );
  return {
    status: 202,
    result: 'accepted',
    receiver,
    body: { accepted: true, repositories, automations: started.automations, skipped },
  };
}
