import { z } from 'zod';
import { imageRepositoryProblem } from '../imageref.js';
import { parseRepository, providerHostProblem } from '../../image/index.js';
import { fluxDuration, ignored, localRef, metadata, oneOf, re2, stringMap, tolerated } from './common.js';
import type { AccessFrom } from '../types.js';

export const IMAGE_API_VERSIONS = [
  'image.toolkit.fluxcd.io/v1',
  'image.toolkit.fluxcd.io/v1beta2',
  'image.toolkit.fluxcd.io/v1beta1',
  'image.pawl.dev/v1alpha1',
] as const;

export const DEFAULT_EXCLUSION_LIST = ['^.*\\.sig$'];
const FLUX_PROVIDERS = ['generic', 'aws', 'azure', 'gcp'] as const;

/** Flux's CRD `exclusionList` `maxItems`. */
export const EXCLUSION_LIST_MAX = 25;

/** Flux's `acl.AccessFrom`: `namespaceSelectors` is required, each selector only has matchLabels. */
const accessFrom = z
  .object({ namespaceSelectors: z.array(z.object({ matchLabels: stringMap.default({}) })) })
  .transform((a): AccessFrom => a);

export const imageRepositorySchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('ImageRepository'),
  metadata,
  spec: z
    .object({
      image: z.string().check((ctx) => {
        const problem = imageRepositoryProblem(ctx.value);
        if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
      }),
      interval: fluxDuration('interval'),
      timeout: fluxDuration('timeout').default(60_000),
      secretRef: localRef.optional(),
      certSecretRef: localRef.optional(),
      insecure: z.boolean().default(false),
      exclusionList: z
        .array(re2)
        // Flux's CRD: `maxItems: 25`.
        .check((ctx) => {
          if (ctx.value.length <= EXCLUSION_LIST_MAX) return;
          ctx.issues.push({
            code: 'custom',
            input: ctx.value,
            message: `has ${ctx.value.length} entries; Flux's CRD allows at most ${EXCLUSION_LIST_MAX} (maxItems), combine patterns with |`,
          });
        })
        .default(() => [...DEFAULT_EXCLUSION_LIST]),
      suspend: z.boolean().default(false),
      provider: oneOf(FLUX_PROVIDERS).default('generic'),
      serviceAccountName: ignored('pawl does not read Kubernetes service accounts; use secretRef'),
      proxySecretRef: ignored('pawl does not support registry proxies yet'),
      accessFrom: accessFrom.optional(),
    })
    .superRefine((spec, ctx) => {
      // Flux checks the image against the provider's registry pattern at the first scan; pawl
      // says so when loading.
      if (spec.provider === 'generic') return;
      let host: string;
      try {
        host = parseRepository(spec.image).domain;
      } catch {
        return; // spec.image has its own error
      }
      const problem = providerHostProblem(spec.provider, host);
      if (problem) ctx.addIssue({ code: 'custom', path: ['provider'], message: problem });
    }),
  status: tolerated,
});
