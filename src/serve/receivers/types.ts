import type { Receiver, ReceiverType } from '../../config/index.js';

export type { ReceiverType };

/** Refused by the HTTP layer with 413 before verifyWebhook sees the body; no vendor sends more. */
export const MAX_WEBHOOK_BODY_BYTES = 1024 * 1024;

/** Images named by one event, at most this many (a registry batches several events in one body). */
export const MAX_EVENT_IMAGES = 256;

/** Everything verifyWebhook needs to know about one Receiver (see receiverTargets). */
export interface ReceiverTarget {
  namespace: string;
  name: string;
  type: ReceiverType;
  /** The Secret's `token`: the HMAC key, the expected header value, and part of the path. */
  token: string;
  /** Event types accepted (github, gitlab, bitbucket); empty accepts all. Case-insensitive, as Flux. */
  events: string[];
  resources: Receiver['spec']['resources'];
  /** Flux answers 503 for a suspended Receiver; the HTTP layer should do the same. */
  suspend: boolean;
}

export interface IncomingWebhook {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One image a registry event names. */
export interface EventImage {
  /** `registry/path` when the vendor says which registry, else the path alone (nexus, harbor without resource_url). */
  repository?: string;
  tag?: string;
  /** The registry host[:port] as the vendor reports it (`request.host`, `docker_url`'s host …). */
  registry?: string;
  /** The repository path inside the registry (`org/app`; Docker Hub's official images as `library/x`). */
  path?: string;
}

export interface ReceivedEvent {
  /** `namespace/name` of the Receiver. */
  receiver: string;
  type: ReceiverType;
  /** The vendor's event name when it sends one (`push`, `Push Hook`, `PUSH_ARTIFACT`, `push` action …). */
  event?: string;
  /**
   * The vendor's delivery id when it sends one (X-GitHub-Delivery, X-Gitlab-Event-UUID,
   * X-Request-Id, X-Nexus-Webhook-Delivery, the registry event id), for logs. A header id is
   * not signed: anyone may change it, so it never decides what is a replay (see `replayId`).
   */
  delivery?: string;
  /**
   * The delivery id when the body itself carries it (the registry event id, ACR's id): as
   * trustworthy as the body. The daemon recognises a replay by it, else by the body's hash
   * (docs/receivers.md, "Replays").
   */
  replayId?: string;
  /** Empty when the event names no image (forges, generic): every resource of the Receiver is due. */
  images: EventImage[];
}

export type WebhookVerdict =
  /** Verified; work may follow (resolveTriggers decides which). */
  | { status: 202; event: ReceivedEvent }
  /** Verified, nothing to do: a ping, a pull, a delete, an event type not in `events`. */
  | { status: 200; ignored: string }
  /** 400 malformed body or headers; 401 no credential; 403 wrong credential; 413 body over the limit. */
  | { status: 400 | 401 | 403 | 413; error: string };
