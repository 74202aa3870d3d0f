import { refKey, type Config, type Receiver } from '../../config/types.js';
import { receiverHookPath } from './path.js';
import type { ReceiverTarget } from './types.js';

export interface ReceiverRoutes {
  /** Hook path → the Receiver it belongs to. Paths not in here are 404. */
  byPath: Map<string, { target: ReceiverTarget; receiver: Receiver }>;
  /** Receivers that cannot be served, with why (never quoting the token). */
  problems: { receiver: string; message: string }[];
}

/** The Receiver with its token read from its Secret, or why it cannot be served. */
export function receiverTarget(receiver: Receiver, config: Config): ReceiverTarget | { problem: string } {
  const ns = receiver.metadata.namespace;
  const secret = config.secrets.get(`${ns}/${receiver.spec.secretRef}`);
  const raw = secret?.data.token;
  if (!raw) return { problem: `Secret ${ns}/${receiver.spec.secretRef} has no "token" key` };
  const token = raw.toString('utf8');
  if (token === '') return { problem: `Secret ${ns}/${receiver.spec.secretRef} has an empty "token"` };
  return {
    namespace: ns,
    name: receiver.metadata.name,
    type: receiver.spec.type,
    token,
    events: receiver.spec.events,
    resources: receiver.spec.resources,
    suspend: receiver.spec.suspend,
  };
}

/** Every Receiver of the configuration by its Flux hook path, for the HTTP layer to route. */
export function receiverRoutes(config: Config): ReceiverRoutes {
  const byPath: ReceiverRoutes['byPath'] = new Map();
  const problems: ReceiverRoutes['problems'] = [];
  for (const receiver of config.receivers.values()) {
    const target = receiverTarget(receiver, config);
    if ('problem' in target) {
      problems.push({ receiver: refKey(receiver.metadata), message: target.problem });
      continue;
    }
    byPath.set(receiverHookPath(target.token, target.name, target.namespace), { target, receiver });
  }
  return { byPath, problems };
}
