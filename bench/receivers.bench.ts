/**
 * What one webhook costs the receiver before any work is done: verifyWebhook on a typical
 * registry envelope, on 1 MiB bodies (the limit) signed and hostile, and resolveTriggers for a
 * `*` Receiver over 500 repositories. Prints the median per request (and CPU time) and peak RSS.
 */
import os from 'node:os';
import { createHmac } from 'node:crypto';
import type { Config, ImagePolicy, ImageRepository, Receiver } from '../src/config/types.js';
import { DEFAULT_GUARD } from '../src/config/types.js';
import { emptyConfig } from '../src/config/index.js';
import {
  MAX_WEBHOOK_BODY_BYTES,
  resolveTriggers,
  verifyWebhook,
  type ReceiverTarget,
  type ReceivedEvent,
} from '../src/serve/receivers/index.js';

const TOKEN = 'bench-token-0123456789';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function target(type: ReceiverTarget['type']): ReceiverTarget {
  return { namespace: 'apps', name: 'hook', type, token: TOKEN, events: [], resources: [], suspend: false };
}

function bench(label: string, runs: number, fn: () => unknown): void {
  const wall: number[] = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    wall.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(c0);
  const cpuPer = (cpu.user + cpu.system) / 1000 / runs;
  console.log(
    `${label.padEnd(58)} median ${median(wall).toFixed(3)} ms   cpu ${cpuPer.toFixed(3)} ms/request`,
  );
}

const envelope = Buffer.from(
  JSON.stringify({
    events: [
      {
        id: 'e1',
        timestamp: '2026-11-30T09:00:00Z',
        action: 'push',
        target: {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: 'sha256:a711770343e0405c907c38a181fdd0835b66715e6239fe52cf43b97bad81ee1a',
          repository: 'team/app-42',
          tag: '1.42.7',
        },
        request: { id: 'r', host: 'registry.example.com', method: 'PUT' },
      },
    ],
  }),
);
const bearer = { authorization: `Bearer ${TOKEN}` };
const big = Buffer.alloc(MAX_WEBHOOK_BODY_BYTES, 0x61);
const bigSig = { 'x-signature': `sha256=${createHmac('sha256', TOKEN).update(big).digest('hex')}` };
const nested = Buffer.from('['.repeat(MAX_WEBHOOK_BODY_BYTES / 2) + ']'.repeat(MAX_WEBHOOK_BODY_BYTES / 2));
const bigJson = Buffer.from(
  JSON.stringify({
    events: Array.from({ length: 6000 }, (_, i) => ({ action: 'pull', target: { tag: `t${i}` } })),
  }),
);

bench('distribution push envelope (1 event), verified', 20_000, () =>
  verifyWebhook(target('distribution'), { headers: bearer, body: envelope }),
);
bench('distribution, wrong token (refused before parsing)', 20_000, () =>
  verifyWebhook(target('distribution'), { headers: { authorization: 'Bearer nope' }, body: envelope }),
);
bench('generic-hmac, 1 MiB body, correct sha256 signature', 200, () =>
  verifyWebhook(target('generic-hmac'), { headers: bigSig, body: big }),
);
bench(`distribution, ${(nested.length / 1024).toFixed(0)} KiB of nested brackets (400)`, 200, () =>
  verifyWebhook(target('distribution'), { headers: bearer, body: nested }),
);
bench(`distribution, ${(bigJson.length / 1024).toFixed(0)} KiB envelope of 6,000 pulls (200)`, 200, () =>
  verifyWebhook(target('distribution'), { headers: bearer, body: bigJson }),
);

// resolveTriggers: a Receiver selecting 500 repositories by label, each with one semver policy.
const source = { file: 'bench.yaml', line: 1 };
const meta = (name: string, labels: Record<string, string> = {}) => ({
  namespace: 'apps',
  name,
  labels,
  annotations: {},
});
const config: Config = emptyConfig();
for (let i = 0; i < 500; i++) {
  const repo: ImageRepository = {
    kind: 'ImageRepository',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: meta(`app-${i}`, { team: 'a' }),
    source,
    spec: {
      image: `registry.example.com/team/app-${i}`,
      interval: 300_000,
      timeout: 60_000,
      insecure: false,
      exclusionList: ['^.*\\.sig$'],
      suspend: false,
      provider: 'generic',
    },
  };
  const policy: ImagePolicy = {
    kind: 'ImagePolicy',
    apiVersion: 'image.toolkit.fluxcd.io/v1',
    metadata: meta(`app-${i}`),
    source,
    spec: {
      imageRepositoryRef: { namespace: 'apps', name: `app-${i}` },
      policy: { strategy: 'semver', range: '>=1.0.0' },
      digestReflectionPolicy: 'Never',
      suspend: false,
      guard: DEFAULT_GUARD,
    },
  };
  config.imageRepositories.set(`apps/app-${i}`, repo);
  config.imagePolicies.set(`apps/app-${i}`, policy);
}
const receiver: Receiver = {
  kind: 'Receiver',
  apiVersion: 'notification.toolkit.fluxcd.io/v1',
  metadata: meta('hook'),
  source,
  spec: {
    type: 'distribution',
    events: [],
    resources: [{ kind: 'ImageRepository', name: '*', matchLabels: { team: 'a' } }],
    secretRef: 'hook',
    suspend: false,
  },
};
const verdict = verifyWebhook(target('distribution'), { headers: bearer, body: envelope });
if (verdict.status !== 202) throw new Error(`bench set-up: ${JSON.stringify(verdict)}`);
const event: ReceivedEvent = verdict.event;
let triggered = 0;
bench('resolveTriggers: 1 pushed tag, "*" over 500 repositories', 500, () => {
  triggered = resolveTriggers(event, receiver, config).repositories.length;
});
console.log(`  (triggered ${triggered} of 500)`);

console.log(
  `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB; load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
