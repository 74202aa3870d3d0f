import { z } from 'zod';
import { compileRegex, parseSemverRange } from '../../go/index.js';
import { checkTimeZone, parseCron } from '../../util/index.js';
import { DEFAULT_GUARD, type GuardSpec, type PolicyChoice } from '../types.js';
import {
  duration,
  fluxDuration,
  localRef,
  metadata,
  namespacedRef,
  oneOf,
  throwsToIssue,
  tolerated,
} from './common.js';

// Flux's CRD enum is exactly `asc|desc`: `ASC` is refused by the API server.
const ORDER = oneOf(['asc', 'desc'] as const);
const STRATEGIES = ['semver', 'alphabetical', 'numerical', 'newestBuild'] as const;

const policyChoice = z
  .object({
    semver: z
      .object({
        range: z.string().check((ctx) => {
          const problem = throwsToIssue(() => parseSemverRange(ctx.value));
          if (problem) {
            ctx.issues.push({
              code: 'custom',
              input: ctx.value,
              message: `"${ctx.value}" is not a valid semver range (${problem}); e.g. ">=1.0.0", "^2.3", "1.x"`,
            });
          }
        }),
      })
      .optional(),
    alphabetical: z.object({ order: ORDER.default('asc') }).optional(),
    numerical: z.object({ order: ORDER.default('asc') }).optional(),
    newestBuild: z.object({}).optional(),
  })
  .superRefine(
    (p, ctx) => {
      const given = STRATEGIES.filter((s) => p[s] !== undefined);
      if (given.length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `needs one of ${STRATEGIES.join(', ')}, e.g. semver: {range: ">=1.0.0"}`,
        });
      } else if (given.length > 1) {
        ctx.addIssue({
          code: 'custom',
          message: `has ${given.join(' and ')}; a policy uses exactly one of them, keep one`,
        });
      }
      // Also when a strategy itself is invalid, so that every problem is reported in one go.
    },
    {
      when: (payload) =>
        typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value),
    },
  )
  .transform((p): PolicyChoice => {
    if (p.semver) return { strategy: 'semver', range: p.semver.range };
    if (p.alphabetical) return { strategy: 'alphabetical', order: p.alphabetical.order };
    if (p.numerical) return { strategy: 'numerical', order: p.numerical.order };
    return { strategy: 'newestBuild' };
  });

/**
 * `guard.window`: cron minutes (in `timeZone`) on which writing opens, each for `duration`. The
 * default of one minute makes a plain cron read as cron does: `* 9-17 * * 1-5` is open through
 * every matching minute, `0 9 * * 1-5` with `duration: 8h` from 09:00 to 17:00.
 */
const writeWindow = z
  .object({
    schedule: z.string(),
    timeZone: z
      .string()
      .default('UTC')
      .check((ctx) => {
        const problem = throwsToIssue(() => checkTimeZone(ctx.value));
        if (problem) ctx.issues.push({ code: 'custom', input: ctx.value, message: problem });
      }),
    duration: duration({ positive: true }).default(60_000),
  })
  .superRefine((w, ctx) => {
    try {
      checkTimeZone(w.timeZone);
    } catch {
      return; // reported on timeZone itself
    }
    const problem = throwsToIssue(() => parseCron(w.schedule, w.timeZone));
    if (problem) ctx.addIssue({ code: 'custom', path: ['schedule'], message: problem });
  });

/** `os/architecture[/variant]`, as `docker --platform` writes it: `linux/arm64`, `linux/arm/v7`. */
const platform = z.string().transform((v, ctx) => {
  const parts = v.split('/');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !/^[a-z0-9._-]+$/.test(p))) {
    ctx.issues.push({
      code: 'custom',
      input: v,
      message: `"${v}" is not a platform; write os/architecture[/variant], e.g. linux/arm64 or linux/arm/v7`,
    });
    return z.NEVER;
  }
  const [os, architecture, variant] = parts as [string, string, string | undefined];
  return variant ? { os, architecture, variant } : { os, architecture };
});

/** An RE2 pattern of `matchOIDCIdentity`, checked when the file is read. */
const identityPattern = z.string().check((ctx) => {
  const problem = throwsToIssue(() => compileRegex(ctx.value));
  if (problem)
    ctx.issues.push({
      code: 'custom',
      input: ctx.value,
      message: `not a valid RE2 regular expression: ${problem}`,
    });
});

/**
 * `spec.verify` (docs/gates.md): Flux's `OCIRepository.spec.verify` shape, and pawl's
 * `trustedRootSecretRef`: keyless certificates are checked offline against the Sigstore trusted
 * root it names, never one fetched at run time.
 */
const verify = z
  .object({
    provider: oneOf(['cosign'] as const).default('cosign'),
    secretRef: localRef.optional(),
    matchOIDCIdentity: z.array(z.object({ issuer: identityPattern, subject: identityPattern })).default([]),
    trustedRootSecretRef: localRef.optional(),
  })
  .superRefine((v, ctx) => {
    if (v.matchOIDCIdentity.length > 0 && v.trustedRootSecretRef === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['trustedRootSecretRef'],
        message:
          'is required with matchOIDCIdentity: name a Secret whose key trusted_root.json is the Sigstore trusted root (cosign trusted-root create, or the public-good one from the Sigstore TUF repository); pawl fetches no root at run time',
      });
    } else if (v.matchOIDCIdentity.length === 0 && v.secretRef === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['secretRef'],
        message:
          'is required: name a Secret whose keys ending in .pub hold the PEM public keys (cosign.pub), or give matchOIDCIdentity for keyless signatures',
      });
    }
  });

const guard = z
  .object({
    downgrades: oneOf(['Block', 'Allow'] as const).default(DEFAULT_GUARD.downgrades),
    compare: oneOf(['Policy', 'BuildTime'] as const).default(DEFAULT_GUARD.compare),
    manualEdits: oneOf(['Respect', 'Override'] as const).default(DEFAULT_GUARD.manualEdits),
    staleScan: z
      .object({
        confirmations: z.number().int().min(1).default(DEFAULT_GUARD.staleScan.confirmations),
        window: duration().default(DEFAULT_GUARD.staleScan.window),
      })
      .default({ ...DEFAULT_GUARD.staleScan }),
    verifyCandidate: z.boolean().default(DEFAULT_GUARD.verifyCandidate),
    // Gates (docs/gates.md): they hold a candidate back, never pick an older one.
    minimumAge: duration().optional(),
    window: writeWindow.optional(),
  })
  .default(() => structuredClone(DEFAULT_GUARD))
  .transform((g): GuardSpec => (isDefaultGuard(g) ? SHARED_DEFAULT_GUARD : g));

/**
 * The guard most policies have, one frozen object for all of them: a daemon keeps every policy
 * for its life, and each default guard was ~0.2 KB of it (issue 27).
 */
const SHARED_DEFAULT_GUARD: GuardSpec = Object.freeze({
  ...DEFAULT_GUARD,
  staleScan: Object.freeze({ ...DEFAULT_GUARD.staleScan }),
});

function isDefaultGuard(g: GuardSpec): boolean {
  return (
    g.downgrades === DEFAULT_GUARD.downgrades &&
    g.compare === DEFAULT_GUARD.compare &&
    g.manualEdits === DEFAULT_GUARD.manualEdits &&
    g.staleScan.confirmations === DEFAULT_GUARD.staleScan.confirmations &&
    g.staleScan.window === DEFAULT_GUARD.staleScan.window &&
    g.verifyCandidate === DEFAULT_GUARD.verifyCandidate &&
    g.minimumAge === undefined &&
    g.window === undefined &&
    Object.keys(g).length === Object.keys(DEFAULT_GUARD).length
  );
}

export const imagePolicySchema = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('ImagePolicy'),
    metadata,
    spec: z
      .object({
        imageRepositoryRef: namespacedRef,
        policy: policyChoice,
        filterTags: z
          .object({
            pattern: z
              .string()
              .default('')
              .check((ctx) => {
                const problem = throwsToIssue(() => compileRegex(ctx.value));
                if (problem) {
                  ctx.issues.push({
                    code: 'custom',
                    input: ctx.value,
                    message: `not a valid RE2 regular expression: ${problem}`,
                  });
                }
              }),
            extract: z.string().default(''),
          })
          .optional(),
        digestReflectionPolicy: oneOf(['Never', 'IfNotPresent', 'Always'] as const).default('Never'),
        interval: fluxDuration('interval').optional(),
        digest: z.object({ platform: platform }).optional(),
        // Flux 2.7's: no new selection while true; the markers keep what they hold.
        suspend: z.boolean().default(false),
        guard,
        verify: verify.optional(),
      })
      .superRefine((s, ctx) => {
        // Flux's own CEL rules: interval exactly when digests are re-read on a schedule.
        if (s.interval !== undefined && s.digestReflectionPolicy !== 'Always') {
          ctx.addIssue({
            code: 'custom',
            path: ['interval'],
            message:
              'is only accepted when digestReflectionPolicy is Always; remove it or set digestReflectionPolicy: Always',
          });
        }
        if (s.digest !== undefined && s.digestReflectionPolicy === 'Never') {
          ctx.addIssue({
            code: 'custom',
            path: ['digest'],
            message:
              'chooses a platform digest, but digestReflectionPolicy is Never (no digest is written); set digestReflectionPolicy: IfNotPresent or Always, or remove digest',
          });
        }
        if (s.interval === undefined && s.digestReflectionPolicy === 'Always') {
          ctx.addIssue({
            code: 'custom',
            path: ['digestReflectionPolicy'],
            message:
              'is Always, which needs spec.interval (how often to re-read digests), e.g. interval: 10m',
          });
        }
      }),
    status: tolerated,
  })
  .transform((o) => ({
    ...o,
    spec: {
      ...o.spec,
      imageRepositoryRef: {
        namespace: o.spec.imageRepositoryRef.namespace ?? o.metadata.namespace,
        name: o.spec.imageRepositoryRef.name,
      },
    },
  }));
