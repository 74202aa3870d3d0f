import { z } from 'zod';
import { parseDuration } from '../duration.js';
import { ALERT_SOURCE_KINDS, PROVIDER_TYPES, type AlertSourceKind, type ProviderType } from '../types.js';
import { ignored, localRef, metadata, oneOf, re2, stringMap, tolerated } from './common.js';

/** Flux's notification-controller API versions that carry Provider and Alert. */
export const NOTIFICATION_API_VERSIONS = [
  'notification.toolkit.fluxcd.io/v1beta3',
  'notification.toolkit.fluxcd.io/v1beta2',
] as const;

/** Provider types Flux knows and pawl does not send to (yet): a clear error instead of "unknown". */
const FLUX_ONLY_PROVIDER_TYPES = [
  'github',
  'gitlab',
  'gitea',
  'giteapullrequestcomment',
  'bitbucketserver',
  'bitbucket',
  'azuredevops',
  'googlepubsub',
  'webex',
  'sentry',
  'azureeventhub',
  'telegram',
  'lark',
  'matrix',
  'opsgenie',
  'alertmanager',
  'grafana',
  'githubdispatch',
  'githubpullrequestcomment',
  'gitlabmergerequestcomment',
  'pagerduty',
  'datadog',
  'nats',
  'zulip',
  'otel',
  'zoom',
  'incident.io',
];

// Flux's CRD patterns: a Provider timeout has no hours; the deprecated interval may.
const FLUX_TIMEOUT = /^([0-9]+(\.[0-9]+)?(ms|s|m))+$/;

const providerTimeout = z.string().transform((v, ctx) => {
  if (!FLUX_TIMEOUT.test(v)) {
    ctx.issues.push({
      code: 'custom',
      input: v,
      message: `"${v}" is not a valid timeout; use a duration in ms, s or m, e.g. 30s`,
    });
    return z.NEVER;
  }
  const ms = parseDuration(v);
  if (ms <= 0) {
    ctx.issues.push({ code: 'custom', input: v, message: 'must be longer than 0, e.g. 15s' });
    return z.NEVER;
  }
  return ms;
});

const httpUrl = (what: string) =>
  z
    .string()
    .max(2048)
    .check((ctx) => {
      let ok = false;
      try {
        const u = new URL(ctx.value);
        ok = u.protocol === 'http:' || u.protocol === 'https:';
      } catch {
        ok = false;
      }
      if (!ok) {
        ctx.issues.push({
          code: 'custom',
          input: ctx.value,
          message: `is not an http(s) URL; write the ${what} as http://… or https://…`,
        });
      }
    });

export const providerSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('Provider'),
  metadata,
  spec: z
    .object({
      type: z.string().transform((t, ctx): ProviderType => {
        if ((PROVIDER_TYPES as readonly string[]).includes(t)) return t as ProviderType;
        ctx.issues.push({
          code: 'custom',
          input: t,
          message: FLUX_ONLY_PROVIDER_TYPES.includes(t)
            ? `provider type "${t}" is not supported by pawl yet; supported: ${PROVIDER_TYPES.join(', ')}`
            : `"${t}" is not one of ${PROVIDER_TYPES.join(', ')}`,
        });
        return z.NEVER;
      }),
      address: httpUrl('address').optional(),
      channel: z.string().max(2048).optional(),
      username: z.string().max(2048).optional(),
      secretRef: localRef.optional(),
      certSecretRef: localRef.optional(),
      proxy: httpUrl('proxy').optional(),
      timeout: providerTimeout.default(15_000),
      suspend: z.boolean().default(false),
      interval: tolerated,
      proxySecretRef: ignored('pawl does not read proxySecretRef yet; use spec.proxy'),
      serviceAccountName: ignored('pawl does not read Kubernetes service accounts'),
      commitStatusExpr: ignored('pawl has no commit status providers'),
    })
    .superRefine((spec, ctx) => {
      if (spec.type === 'generic-hmac' && spec.secretRef === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['type'],
          message: 'generic-hmac needs a secretRef to a Secret with a "token" key (the HMAC key)',
        });
      }
      if (spec.address === undefined && spec.secretRef === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['address'],
          message:
            'is required unless secretRef names a Secret with an "address" key; pawl has nowhere to send events',
        });
      }
    }),
  status: tolerated,
});

const eventSource = z.object({
  apiVersion: tolerated,
  kind: z.string().transform((k, ctx): AlertSourceKind => {
    if ((ALERT_SOURCE_KINDS as readonly string[]).includes(k)) return k as AlertSourceKind;
    ctx.issues.push({
      code: 'custom',
      input: k,
      message: `"${k}" is not one of ${ALERT_SOURCE_KINDS.join(', ')}`,
    });
    return z.NEVER;
  }),
  name: z.string().min(1).max(253),
  namespace: z.string().min(1).max(253).optional(),
  matchLabels: stringMap.optional(),
});

export const alertSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('Alert'),
  metadata,
  spec: z.object({
    providerRef: localRef,
    eventSeverity: oneOf(['info', 'error'] as const).default('info'),
    eventSources: z.array(eventSource).min(1),
    inclusionList: z.array(re2).default([]),
    exclusionList: z.array(re2).default([]),
    summary: z.string().max(255).optional(),
    eventMetadata: stringMap.default({}),
    suspend: z.boolean().default(false),
  }),
  status: tolerated,
});
