import { z } from 'zod';
import { checkCommitMessageTemplate } from '../commit-data.js';
import { parseTemplate } from '../../go/index.js';
import {
  duration,
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
import type { GitRef, PullRequestSpec } from '../types.js';

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

/** A user name on a forge: letters, digits, `-`, `_`, `.` (no `@`: the name, not a mention). */
const forgeUser = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/, 'is not a user name on a forge, e.g. "alice" (no "@")');

/**
 * pawl's `spec.git.push.pullRequest` (image.pawl.dev/v1alpha1): the pushed branch is proposed as
 * a pull request. The token is the key `token` of the Secret `secretRef` names.
 */
const pullRequest = z
  .object({
    provider: oneOf(['github', 'gitlab', 'gitea'] as const).optional(),
    apiURL: z
      .string()
      .check((ctx) => {
        let u: URL | null = null;
        try {
          u = new URL(ctx.value);
        } catch {
          // reported below
        }
        if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:'))
          ctx.issues.push({
            code: 'custom',
            input: ctx.value,
            message: `"${ctx.value}" is not an http(s) URL, e.g. https://gitlab.example.com/api/v4`,
          });
        else if (u.username || u.password)
          ctx.issues.push({
            code: 'custom',
            input: '[redacted]',
            message: 'must not hold credentials: put the token in the Secret secretRef names',
          });
      })
      .optional(),
    secretRef: localRef,
    title: template.optional(),
    body: template.optional(),
    labels: z.array(z.string().min(1).max(50)).default([]),
    draft: z.boolean().default(false),
    // User names on the forge; asked when the pull request is opened (a person may change them).
    reviewers: z.array(forgeUser).default([]),
    assignees: z.array(forgeUser).default([]),
    autoMerge: z
      .object({ method: oneOf(['merge', 'squash', 'rebase'] as const).default('merge') })
      .optional(),
  })
  .transform((p): PullRequestSpec => {
    const out: PullRequestSpec = {
      secretRef: p.secretRef,
      labels: p.labels,
      draft: p.draft,
      reviewers: p.reviewers,
      assignees: p.assignees,
    };
    if (p.autoMerge) out.autoMerge = p.autoMerge;
    if (p.provider) out.provider = p.provider;
    if (p.apiURL) out.apiURL = p.apiURL;
    if (p.title !== undefined) out.title = p.title;
    if (p.body !== undefined) out.body = p.body;
    return out;
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
            // pawl's (image.pawl.dev/v1alpha1): one commit per pass or per changed policy, and a
            // window that holds the first change so that later ones land in the same commit.
            group: oneOf(['pass', 'policy'] as const).default('pass'),
            batch: duration({ positive: true }).optional(),
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
            // A template (Flux's commit-message data) makes a branch per change.
            branch: z.string().min(1).pipe(template).optional(),
            refspec: z.string().min(1).optional(),
            options: stringMap.default({}),
            pullRequest: pullRequest.optional(),
          })
          .check((ctx) => {
            const { branch, pullRequest: pr } = ctx.value;
            if (pr && branch === undefined)
              ctx.issues.push({
                code: 'custom',
                input: ctx.value,
                path: ['branch'],
                message:
                  'is needed with pullRequest: name the branch to propose, e.g. "pawl/{{ .AutomationObject.Name }}"',
              });
            for (const [field, t] of [
              ['branch', branch],
              ['pullRequest.title', pr?.title],
              ['pullRequest.body', pr?.body],
            ] as const) {
              if (t === undefined || throwsToIssue(() => parseTemplate(t))) continue;
              const problem = throwsToIssue(() => checkCommitMessageTemplate(t));
              if (problem)
                ctx.issues.push({
                  code: 'custom',
                  input: t,
                  path: field.split('.'),
                  message: `cannot be rendered: ${problem}`,
                });
            }
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
  .check((ctx) => {
    // A field of pawl's own version of the kind: under Flux's, a cluster would drop it unseen.
    if (ctx.value.apiVersion === 'image.pawl.dev/v1alpha1') return;
    const { commit, push } = ctx.value.spec.git;
    const own: [string[], boolean][] = [
      [['spec', 'git', 'push', 'pullRequest'], !!push?.pullRequest],
      [['spec', 'git', 'commit', 'group'], commit.group !== 'pass'],
      [['spec', 'git', 'commit', 'batch'], commit.batch !== undefined],
    ];
    for (const [path, set] of own)
      if (set)
        ctx.issues.push({
          code: 'custom',
          input: ctx.value.apiVersion,
          path,
          message: `is pawl's field, not Flux's: set apiVersion: image.pawl.dev/v1alpha1 (it is ${ctx.value.apiVersion})`,
        });
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
            ...(commit.group !== 'pass' ? { group: commit.group } : {}),
            ...(commit.batch !== undefined ? { batch: commit.batch } : {}),
          },
          ...(push ? { push } : {}),
        },
      },
    };
  });
