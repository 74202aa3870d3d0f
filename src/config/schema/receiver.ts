import { z } from 'zod';
import { RECEIVER_TYPES, type ReceiverType } from '../types.js';
import { duration, localRef, metadata, stringMap, tolerated } from './common.js';

export const RECEIVER_API_VERSIONS = [
  'notification.toolkit.fluxcd.io/v1',
  'notification.toolkit.fluxcd.io/v1beta2',
] as const;
const FLUX_ONLY_TYPES = ['bitbucket', 'gcr', 'nexus', 'acr', 'cdevents'];

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
        message: FLUX_ONLY_TYPES.includes(t)
          ? `receiver type "${t}" is not supported by pawl yet; supported: ${RECEIVER_TYPES.join(', ')}`
          : `"${t}" is not one of ${RECEIVER_TYPES.join(', ')}`,
      });
      return z.NEVER;
    }),
    events: z.array(z.string()).default([]),
    resources: z
      .array(
        z.object({
          apiVersion: tolerated,
          kind: z.string().min(1),
          name: z.string().min(1),
          namespace: z.string().min(1).optional(),
          matchLabels: stringMap.optional(),
        }),
      )
      .min(1),
    secretRef: localRef,
    suspend: z.boolean().default(false),
    interval: duration().optional(),
  }),
  status: tolerated,
});
