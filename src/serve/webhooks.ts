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

/**
 * Remembers recently accepted event bodies per receiver: the same signed body delivered again
 * (a retry, or someone replaying a captured request) does no work twice. Bounded in size.
 */
export class ReplayGuard {
  readonly #seen = new Map<string, number>();
  constructor(
    private readonly windowMs = 10 * 60_000,
    private readonly max = 4096,
  ) {}

  /**
   * True when the same delivery (the vendor's delivery id, else the same body) was accepted for
   * `receiver` within the window; records it otherwise.
   */
  replayed(receiver: string, delivery: string | undefined, body: Buffer, now: number): boolean {
    const key = this.#key(receiver, delivery, body);
    const at = this.#seen.get(key);
    if (at !== undefined && now - at < this.windowMs) return true;
    this.#seen.delete(key);
    this.#seen.set(key, now);
    // Map keeps insertion order: the first entries are the oldest.
    while (this.#seen.size > this.max) this.#seen.delete(this.#seen.keys().next().value!);
    return false;
  }

  /** Forgets a delivery that was not acted on after all, so that its retry is not a replay. */
  forget(receiver: string, delivery: string | undefined, body: Buffer): void {
    this.#seen.delete(this.#key(receiver, delivery, body));
  }

  #key(receiver: string, delivery: string | undefined, body: Buffer): string {
    const hash = createHash('sha256').update(receiver).update('\0');
    if (delivery !== undefined) hash.update('id\0').update(delivery);
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

export interface WebhookOutcome {
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
): Promise<WebhookOutcome> {
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
  if (out.event.images.length > 0 && replays.replayed(receiver, out.event.delivery, req.body, now)) {
    log.info({ receiver }, 'webhook replayed; already acted on');
    return { status: 200, result: 'ignored', receiver, body: { ignored: 'this event was already received' } };
  }
  const { repositories, automations, tags, skipped } = out.triggers;
  let started: { automations: string[] };
  try {
    started = await sink.trigger(repositories, automations, tags);
  } catch (err) {
    // The sender will deliver it again: it must not then count as a replay.
    replays.forget(receiver, out.event.delivery, req.body);
    log.warn({ receiver, err: errorMessage(err) }, 'webhook not queued; the sender will retry');
    return {
      status: 503,
      result: 'unavailable',
      receiver,
      body: { error: 'the work queue is unavailable; retry later' },
    };
  }
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
