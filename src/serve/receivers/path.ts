import { createHash } from 'node:crypto';

/** Where every Receiver's path starts, as in Flux (`apiv1.ReceiverWebhookPath`). */
export const HOOK_PREFIX = '/hook/';

/**
 * A Receiver's URL path exactly as Flux's notification-controller derives it
 * (`Receiver.GetWebhookPath`): `/hook/` + hex SHA-256 of token, name and namespace concatenated.
 * So a Flux Receiver keeps its URL when pawl takes over, and the path itself is a secret.
 */
export function receiverHookPath(token: string, name: string, namespace: string): string {
  return (
    HOOK_PREFIX +
    createHash('sha256')
      .update(token + name + namespace, 'utf8')
      .digest('hex')
  );
}
