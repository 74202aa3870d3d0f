/**
 * One webhook request from path to work, for the HTTP layer to call with the raw body: routing
 * (404), suspension (503), verification (verifyWebhook) and, when verified, resolveTriggers.
 * Pure over the routes and configuration it is given; the listener only moves bytes.
 */
import type { Config } from '../../config/index.js';
import type { ReceiverRoutes } from './target.js';
import { resolveTriggers, type Triggers } from './triggers.js';
import type { IncomingWebhook, WebhookVerdict } from './types.js';
import { verifyWebhook } from './verify.js';

export type ReceiverVerdict =
  | { status: 404; error: string }
  /** `receiver` is set from here on: `namespace/name`, for logs and metrics. */
  | { status: 503; error: string; receiver: string }
  | (Extract<WebhookVerdict, { status: 202 }> & { receiver: string; triggers: Triggers })
  | (Exclude<WebhookVerdict, { status: 202 }> & { receiver: string });

export interface WebhookRequest extends IncomingWebhook {
  /** The request target as received (`/hook/<hex>`, a query string is ignored). */
  path: string;
}

export function handleWebhook(routes: ReceiverRoutes, config: Config, req: WebhookRequest): ReceiverVerdict {
  const q = req.path.indexOf('?');
  const path = q < 0 ? req.path : req.path.slice(0, q);
  const route = routes.byPath.get(path);
  if (!route) return { status: 404, error: 'no receiver at this path' };
  const receiver = `${route.target.namespace}/${route.target.name}`;
  if (route.target.suspend) return { status: 503, error: 'the receiver is suspended', receiver };
  const verdict = verifyWebhook(route.target, req);
  if (verdict.status !== 202) return { ...verdict, receiver };
  return { ...verdict, receiver, triggers: resolveTriggers(verdict.event, route.receiver, config) };
}
