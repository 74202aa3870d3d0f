import { z } from 'zod';
import { checkCommitMessageTemplate } from '../commit-data.js';
import { parseTemplate } from '../../go/index.js';
import {
  fluxDuration,
  labelSelector,
  localRef,
  metadata,
  namespacedRef,
  oneOf,
  stringMap,
  throwsToIssue,
  tolerated,
} from './common.js';
import type { GitRef } from '../types.js';

export const gitRef = z
  .object({
    branch: z.string().min(1).optional(),
    tag: z.string().min(1).optional(),
    semver: z.string().min(1).optional(),
    name: z.string().min(1).optional(),
    commit: z.string().min(1).optional(),
  })
  .transform((r): GitRef => {
    const out: GitRef = {};
    for (const k of ['branch', 'tag', 'semver', 'name', 'commit'] as const)
      if (r[k] !== undefined) out[k] = r[k];
    return out;
  });

/** `update.path`: a directory inside the repository, never outside it. */
const updatePath = z.string().check((ctx) => {
  const p = ctx.value;
  const fail = (message: string): void => void ctx.issues.push({ code: 'custom', message, input: p });
  if (p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p) || p.startsWith('\\')) {
    fail(`"${p}" is absolute; write a path relative to the repository root, e.g. "./clusters/prod"`);
  } else if (p.split(/[\\/]/).includes('..')) {
    fail(`"${p}" contains ".."; update.path must stay inside the repository`);
  }
});

const template = z.string().check((ctx) => {
  const problem = throwsToIssue(() => parseTemplate(ctx.value));
  if (problem) {
    ctx.issues.push({ code: 'custom', input: ctx.value, message: `is not a valid Go template: ${problem}` });
  }
});

export const imageUpdateAutomationSchema = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('ImageUpdateAutomation'),
    metadata,
    spec: z.object({
      sourceRef: namespacedRef.extend({
        kind: oneOf(['GitRepository'] as const).default('GitRepository'),
        apiVersion: tolerated,
      }),
      interval: fluxDuration('interval'),
      suspend: z.boolean().default(false),
      git: z.object({
        checkout: z.object({ ref: gitRef }).optional(),
        commit: z
          .object({
            author: z.object({ name: z.string().default(''), email: z.string().min(1) }),
            // Flux: `type` empty means gpg (`git.asc`); ssh reads `identity` (+ `password`).
            signingKey: z
              .object({ secretRef: localRef, type: oneOf(['gpg', 'ssh'] as const).default('gpg') })
              .optional(),
            messageTemplate: template.optional(),
            messageTemplateValues: stringMap.default({}),
          })
          .check((ctx) => {
            // A template that parses can still fail for every commit (a removed Flux field, a
            // value it needs that is not set, a wrong argument type): render it over a sample
            // change now, so the failure is a configuration error and not a surprise at run time.
            const { messageTemplate, messageTemplateValues } = ctx.value;
            if (messageTemplate === undefined || throwsToIssue(() => parseTemplate(messageTemplate))) return;
            const problem = throwsToIssue(() =>
              checkCommitMessageTemplate(messageTemplate, messageTemplateValues),
            );
            if (problem) {
              ctx.issues.push({
                code: 'custom',
                input: messageTemplate,
                path: ['messageTemplate'],
                message: `cannot be rendered: ${problem}`,
              });
            }
          }),
        push: z
          .object({
            branch: z.string().min(1).optional(),
            refspec: z.string().min(1).optional(),
            options: stringMap.default({}),
          })
          .optional(),
      }),
      update: z
        .object({
          path: updatePath.default('.'),
          strategy: oneOf(['Setters'] as const).default('Setters'),
        })
        .default({ path: '.', strategy: 'Setters' }),
      policySelector: labelSelector.optional(),
    }),
    status: tolerated,
  })
  .transform((o) => {
    const { name, namespace } = o.spec.sourceRef;
    const { checkout, commit, push } = o.spec.git;
    return {
      ...o,
      spec: {
        ...o.spec,
        sourceRef: { kind: 'GitRepository' as const, name, namespace: namespace ?? o.metadata.namespace },
        git: {
          ...(checkout ? { checkout } : {}),
          commit: {
            author: commit.author,
            ...(commit.signingKey ? { signingKey: commit.signingKey } : {}),
            ...(commit.messageTemplate !== undefined ? { messageTemplate: commit.messageTemplate } : {}),
            messageTemplateValues: commit.messageTemplateValues,
          },
          ...(push ? { push } : {}),
        },
      },
    };
  });
