/** A world for the daemon's tests: one image, one policy, one automation, a distribution Receiver. */
import { createHash, randomUUID } from 'node:crypto';
import { pushTags } from '../helpers/push.js';
import { freePort } from '../helpers/registry.js';
import { gitObjects, imageObjects, startWorld, type World } from '../helpers/world.js';
import type { StartOptions } from '../../src/serve/index.js';
import { silentLogger } from '../../src/util/log.js';

export const TOKEN = 'registry-notify-token-0123456789';
export const RECEIVER = { namespace: 'flux-system', name: 'registry' };
/** Flux's path: sha256 of token, name and namespace. */
export const HOOK_PATH = `/hook/${createHash('sha256')
  .update(TOKEN + RECEIVER.name + RECEIVER.namespace)
  .digest('hex')}`;

export const RECEIVER_YAML = `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  name: ${RECEIVER.name}
  namespace: ${RECEIVER.namespace}
spec:
  type: distribution
  resources:
    - apiVersion: image.toolkit.fluxcd.io/v1
      kind: ImageRepository
      name: app
  secretRef:
    name: webhook-token
---
apiVersion: v1
kind: Secret
metadata:
  name: webhook-token
  namespace: flux-system
stringData:
  token: ${TOKEN}
`;

export const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: {{REGISTRY}}/team/app:1.0.0 # {"$imagepolicy": "flux-system:app"}
`;

export interface ServeWorld {
  world: World;
  /** The port pawl serve must listen on (the registry notifies it). */
  port: number;
}

/** Registry notifying 127.0.0.1:port, git remote with DEPLOY, config with the objects above. */
export async function startServeWorld(
  opts: { intervals?: string; automationInterval?: string; proxy?: boolean } = {},
): Promise<ServeWorld> {
  const port = await freePort();
  const world = await startWorld({
    ...(opts.proxy ? { proxy: true } : {}),
    registry: {
      notifications: [
        {
          name: 'pawl',
          url: `http://127.0.0.1:${port}${HOOK_PATH}`,
          headers: { Authorization: [`Bearer ${TOKEN}`] },
        },
      ],
    },
    files: { 'apps/app.yaml': DEPLOY },
    config: { ...oneAppConfig(opts.intervals, opts.automationInterval), 'receiver.yaml': RECEIVER_YAML },
  });
  return { world, port };
}

/** The one app of these tests' worlds: its GitRepository and automation, and its image objects. */
function oneAppConfig(intervals = '1h', automationInterval = '1h'): Record<string, string> {
  return {
    'git.yaml': gitObjects().replace('interval: 5m', `interval: ${automationInterval}`),
    'app.yaml': imageObjects('app', '{{REGISTRY}}/team/app', 'semver:\n  range: ">=1.0.0"', {
      interval: intervals,
    }),
  };
}

/**
 * A world of one app (apps/app.yaml deployed, hourly objects for team/app), `extra` configuration
 * files beside it, and `tags` pushed; the test sends its own webhooks or signals.
 */
export async function oneAppWorld(
  opts: { proxy?: boolean; extra?: Record<string, string>; tags?: string[]; intervals?: string } = {},
): Promise<World> {
  const w = await startWorld({
    ...(opts.proxy ? { proxy: true } : {}),
    files: { 'apps/app.yaml': DEPLOY },
    config: { ...oneAppConfig(opts.intervals), ...opts.extra },
  });
  if (opts.tags) await pushTags(w.registry.url, 'team/app', opts.tags);
  return w;
}

/** The registry's notification of one pushed tag, as a `distribution` Receiver takes it. */
export function pushEvent(tag: string): string {
  return JSON.stringify({
    events: [
      {
        id: randomUUID(),
        timestamp: new Date().toISOString(),
        action: 'push',
        target: {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: `sha256:${'0'.repeat(64)}`,
          repository: 'team/app',
          tag,
        },
      },
    ],
  });
}

/** Posts that notification with the Receiver's token; the answer's status. */
export async function postEvent(url: string, tag: string, token = TOKEN): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/vnd.docker.distribution.events.v1+json',
      authorization: `Bearer ${token}`,
    },
    body: pushEvent(tag),
  });
  await res.text();
  return res.status;
}

/** `startServer` in-process on the world: loopback listeners, no file watch, everything due at once. */
export function inProcess(sw: ServeWorld): StartOptions {
  return {
    configPaths: [sw.world.configDir],
    stateDir: sw.world.stateDir,
    log: silentLogger,
    listen: '127.0.0.1:0',
    adminListen: '127.0.0.1:0',
    watch: false,
    startSpreadMs: 0,
  };
}
