/**
 * The daemon's side of the webhook receivers: which Receiver a `/hook/…` path belongs to, what
 * its verdict means for the scheduler, and replays. Verifying each vendor's signature is the
 * receivers module's job (src/serve/receivers/); this file only mounts it.
 */
import { createHash } from 'node:crypto';
import { refKey, type Config, type Receiver } from '../config/index.js';
import type { Logger } from '../util/log.js';
import type { WebhookResult } from './metrics.js';
import {
  MAX_WEBHOOK_BODY_BYTES,
  receiverRoutes,
  resolveTriggers,
  verifyWebhook,
  type IncomingWebhook,
  type ReceiverTarget,
} from './receivers/index.js';

export { MAX_WEBHOOK_BODY_BYTES };

export interface Hook {
  receiver: Receiver;
  target: ReceiverTarget;
}

/** Every Receiver whose token Secret is readable, by its Flux path; the others are logged. */
export function buildHooks(config: Config, log: Logger): Map<string, Hook> {
  const { byPath, problems } = receiverRoutes(config);
  for (const p of problems) log.warn({ receiver: p.receiver }, `${p.message}; the Receiver is not served`);
  // Flux shows this as status.webhookPath: a hash of the token, never the token.
  for (const [path, hook] of byPath)
    log.info({ receiver: refKey(hook.receiver.metadata), path }, 'receiver ready');
  return byPath;
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
    const hash = createHash('sha256').update(receiver).update('\0');
    if (delivery !== undefined) hash.update('id\0').update(delivery);
    else hash.update('body\0').update(body);
    const key = hash.digest('base64');
    const at = this.#seen.get(key);
    if (at !== undefined && now - at < this.windowMs) return true;
    this.#seen.delete(key);
    this.#seen.set(key, now);
    // Map keeps insertion order: the first entries are the oldest.
    while (this.#seen.size > this.max) this.#seen.delete(this.#seen.keys().next().value!);
    return false;
  }
}

export interface WebhookSink {
  current: { config: Config; hooks: Map<string, Hook> };
  trigger(
    repositories: readonly string[],
    automations?: readonly string[],
  ): { automations: string[]; repositories: string[] };
}

export interface WebhookOutcome {
  status: number;
  result: WebhookResult;
  receiver: string | null;
  body: Record<string, unknown>;
}

export function handleWebhook(
  sink: WebhookSink,
  replays: ReplayGuard,
  path: string,
  req: IncomingWebhook,
  now: number,
  log: Logger,
): WebhookOutcome {
  const hook = sink.current.hooks.get(path);
  if (!hook)
    return { status: 404, result: 'not-found', receiver: null, body: { error: 'no receiver at this path' } };
  const receiver = refKey(hook.receiver.metadata);
  if (hook.target.suspend) {
    // As Flux: a suspended Receiver answers 503, so the sender retries once it is resumed.
    return { status: 503, result: 'suspended', receiver, body: { error: 'the Receiver is suspended' } };
  }
  const verdict = verifyWebhook(hook.target, req);
  if (verdict.status === 200) {
    log.debug({ receiver, ignored: verdict.ignored }, 'webhook ignored');
    return { status: 200, result: 'ignored', receiver, body: { ignored: verdict.ignored } };
  }
  if (verdict.status !== 202) {
    const result =
      verdict.status === 400 ? 'malformed' : verdict.status === 401 ? 'unauthorized' : 'forbidden';
    log.info({ receiver, status: verdict.status, error: verdict.error }, 'webhook refused');
    return { status: verdict.status, result, receiver, body: { error: verdict.error } };
  }
  if (verdict.event.images.length > 0 && replays.replayed(receiver, verdict.event.delivery, req.body, now)) {
    log.info({ receiver }, 'webhook replayed; already acted on');
    return { status: 200, result: 'ignored', receiver, body: { ignored: 'this event was already received' } };
  }
  const { repositories, automations, skipped } = resolveTriggers(
    verdict.event,
    hook.receiver,
    sink.current.config,
  );
  const started = sink.trigger(repositories, automations);
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
