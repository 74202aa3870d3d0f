/** Webhook receivers (SPEC §6): Flux's Receiver paths, each vendor's verification, and what an event triggers. See docs/receivers.md. */
export {
  MAX_WEBHOOK_BODY_BYTES,
  MAX_EVENT_IMAGES,
  type ReceiverType,
  type ReceiverTarget,
  type IncomingWebhook,
  type EventImage,
  type ReceivedEvent,
  type WebhookVerdict,
} from './types.js';
export { HOOK_PREFIX, receiverHookPath } from './path.js';
export { verifyWebhook } from './verify.js';
export { resolveTriggers, type Triggers } from './triggers.js';
export { receiverTarget, receiverRoutes, type ReceiverRoutes } from './target.js';
export { imageMatcher } from './match.js';
export { MAX_JSON_DEPTH } from './request.js';
export { handleWebhook, type ReceiverVerdict, type WebhookRequest } from './handle.js';
