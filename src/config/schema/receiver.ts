import { z } from 'zod';
import { RECEIVER_TYPES, type ReceiverType } from '../types.js';
import { duration, localRef, metadata, stringMap, tolerated } from './common.js';

export const RECEIVER_API_VERSIONS = [
  'notification.toolkit.fluxcd.io/v1',
  'notification.toolkit.fluxcd.io/v1beta2',
] as const;
/** Flux's types pawl does not verify: each needs what pawl cannot check offline (Google's OIDC keys, CDEvents schemas). */
const FLUX_ONLY_TYPES: Record<string, string> = {
  gcr: 'it authenticates Google Pub/Sub push requests with Google-signed OIDC tokens',
  'generic-oidc': 'it authenticates requests with OIDC tokens',
  cdevents: 'it validates CDEvents against their schemas',
};

export const receiverSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('Receiver'),
  metadata,
  spec: z.object({
    type: z.string().transform((t, ctx): ReceiverType => {
      if ((RECEIVER_TYPES as readonly string[]).includes(t)) return t as ReceiverType;
      ctx.issues.push({
        code: 'custom',
        input: t,
        message: Object.hasOwn(FLUX_ONLY_TYPES, t)
          ? `receiver type "${t}" is not supported by pawl (${FLUX_ONLY_TYPES[t]}); use one of ${RECEIVER_TYPES.join(', ')}`
          : `"${t}" is not one of ${RECEIVER_TYPES.join(', ')}`,
      });
      return z.NEVER;
    }),
    events: z.array(z.string()).default([]),
    resources: z
      .array(
        z
          .object({
            apiVersion: tolerated,
            kind: z.string().min(1),
            name: z.string().min(1),
            namespace: z.string().min(1).optional(),
            matchLabels: stringMap.optional(),
          })
          // Flux refuses a wildcard without labels at request time; pawl says so when it loads.
          .check((ctx) => {
            if (ctx.value.name === '*' && ctx.value.matchLabels === undefined) {
              ctx.issues.push({
                code: 'custom',
                input: ctx.value,
                path: ['matchLabels'],
                message:
                  'name "*" needs matchLabels (write matchLabels: {} to select every object of this kind)',
              });
            }
          }),
      )
      .min(1),
    secretRef: localRef,
    suspend: z.boolean().default(false),
    interval: duration().optional(),
  }),
  status: tolerated,
});
