/**
 * Alerts: the cost of `publish` (routing, rate limit, payload) and the memory a Provider that
 * never answers costs. 100,000 distinct events go to one generic-hmac Provider whose transport
 * hangs forever; the queue must stay at its bound. Prints time per event and heap growth.
 */
import os from 'node:os';
import { emptyConfig } from '../src/config/load.js';
import type { Alert, Provider, Secret } from '../src/config/types.js';
import { Notifier, type AlertEvent } from '../src/notify/index.js';

const N = 100_000;
const meta = (name: string) => ({ namespace: 'apps', name, labels: {}, annotations: {} });
const source = { file: 'bench', line: 1 };

const config = emptyConfig();
const provider: Provider = {
  kind: 'Provider',
  apiVersion: 'notification.toolkit.fluxcd.io/v1beta3',
  metadata: meta('hooks'),
  source,
  spec: {
    type: 'generic-hmac',
    address: 'http://127.0.0.1:9/hook',
    secretRef: 'tok',
    timeout: 15_000,
    suspend: false,
  },
};
const secret: Secret = {
  kind: 'Secret',
  apiVersion: 'v1',
  metadata: meta('tok'),
  source,
  type: 'Opaque',
  data: { token: Buffer.from('t') },
};
const alert: Alert = {
  kind: 'Alert',
  apiVersion: 'notification.toolkit.fluxcd.io/v1beta3',
  metadata: meta('all'),
  source,
  spec: {
    providerRef: 'hooks',
    eventSeverity: 'info',
    eventSources: [{ kind: 'ImagePolicy', name: '*' }],
    inclusionList: [],
    exclusionList: ['^never$'],
    eventMetadata: { cluster: 'prod' },
    suspend: false,
  },
};
config.providers.set('apps/hooks', provider);
config.secrets.set('apps/tok', secret);
config.alerts.set('apps/all', alert);

let dropped = 0;
const n = new Notifier({
  config,
  // A receiver that never answers: every message stays in flight or queued.
  transport: () => new Promise(() => undefined),
  metrics: {
    delivered: () => undefined,
    failed: () => undefined,
    retried: () => undefined,
    dropped: () => dropped++,
    suppressed: () => undefined,
  },
});

const event = (i: number): AlertEvent => ({
  object: { kind: 'ImagePolicy', namespace: 'apps', name: `app-${i % 500}` },
  severity: 'error',
  reason: 'DowngradeBlocked',
  message: `Downgrade blocked (apps/f${i}.yaml:9): 2.0.${i} is newer than the candidate 1.1.0 by the policy’s order; kept.`,
  metadata: { automation: 'apps/fleet', file: `apps/f${i}.yaml:9`, current: `2.0.${i}`, candidate: '1.1.0' },
  at: new Date(),
});

global.gc?.();
const heap0 = process.memoryUsage().heapUsed;
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < N; i++) n.publish(event(i));
const ms = performance.now() - t0;
const cpu = process.cpuUsage(c0);
const cpuMs = (cpu.user + cpu.system) / 1000;
global.gc?.();
const heap1 = process.memoryUsage().heapUsed;
const stats = n.stats()['apps/hooks']!;
console.log(
  `publish: ${N} distinct events in ${ms.toFixed(0)} ms wall, ${cpuMs.toFixed(0)} ms CPU (${((cpuMs * 1000) / N).toFixed(1)} µs CPU/event)`,
);
console.log(`queue: ${stats.queued} waiting (bound 100), ${dropped} dropped`);
console.log(
  `heap: +${((heap1 - heap0) / 1024 / 1024).toFixed(1)} MiB after ${N} events (rate-limit keys bounded at 10,000)`,
);
console.log(
  `peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB; load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
process.exit(0);
