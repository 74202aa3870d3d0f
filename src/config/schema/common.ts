import { z } from 'zod';
import { compileRegex } from '../../go/index.js';
import { parseDuration } from '../duration.js';
import type { LabelSelector } from '../types.js';

/**
 * Building blocks shared by the per-kind schemas. Messages from custom checks say what is
 * wrong and what to write instead; the loader prefixes them with the field's path.
 * No message ever quotes a Secret's value.
 */

/** A field Flux knows but pawl does not act on: accepted, with a warning naming the reason. */
export function ignored(reason: string) {
  return z.unknown().optional().meta({ pawlIgnored: reason });
}

/** A field Flux knows and pawl has no use for: accepted in silence. */
export const tolerated = z.unknown().optional();

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const objectName = z.string().check((ctx) => {
  const v = ctx.value;
  if (v.length === 0) ctx.issues.push({ code: 'custom', message: 'must not be empty', input: v });
  else if (v.length > 253 || !DNS_SUBDOMAIN.test(v)) {
    ctx.issues.push({
      code: 'custom',
      message: `"${v}" is not a valid Kubernetes name; use lowercase letters, digits, "-" and "."`,
      input: v,
    });
  }
});

export const stringMap = z.record(z.string(), z.string());

const metadataShape = {
  name: objectName,
  namespace: objectName.default('default'),
  labels: stringMap.default({}),
  annotations: stringMap.default({}),
  uid: tolerated,
  resourceVersion: tolerated,
  generation: tolerated,
  creationTimestamp: tolerated,
  deletionTimestamp: tolerated,
  managedFields: tolerated,
  finalizers: tolerated,
  ownerReferences: tolerated,
  generateName: tolerated,
  selfLink: tolerated,
};

/**
 * Most objects have no labels or no annotations: they share one frozen empty record rather than
 * each keeping two empty objects of its own (80,000 of them at 10,000 images).
 */
const NONE: Record<string, string> = Object.freeze({});
const orNone = (r: Record<string, string>): Record<string, string> => {
  for (const _ in r) return r;
  return NONE;
};

export const metadata = z.object(metadataShape).transform((m) => ({
  name: m.name,
  namespace: m.namespace,
  labels: orNone(m.labels),
  annotations: orNone(m.annotations),
}));

/** Go duration in milliseconds; `positive` rejects 0 and negatives. */
export function duration(opts: { positive?: boolean } = {}) {
  return z.string().transform((v, ctx) => {
    let ms: number;
    try {
      ms = parseDuration(v);
    } catch (err) {
      ctx.issues.push({ code: 'custom', message: (err as Error).message, input: v });
      return z.NEVER;
    }
    if (opts.positive && ms <= 0) {
      ctx.issues.push({ code: 'custom', message: `must be longer than 0, e.g. 5m`, input: v });
      return z.NEVER;
    }
    if (ms < 0) {
      ctx.issues.push({ code: 'custom', message: `must not be negative`, input: v });
      return z.NEVER;
    }
    return ms;
  });
}

/**
 * The duration patterns of Flux's v1 CRDs (image-reflector-controller, image-automation-
 * controller, source-controller): the API server refuses anything else before a controller
 * sees it, so pawl refuses it too. Go accepts more (`ns`, `us`, a sign, a bare `0`).
 */
export const FLUX_DURATION_RULES = {
  interval: { pattern: /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/, units: 'ms, s, m, h' },
  timeout: { pattern: /^([0-9]+(\.[0-9]+)?(ms|s|m))+$/, units: 'ms, s, m (no h)' },
} as const;

/** `3_600_000` → `60m`: the same time in units the timeout pattern allows. */
function withoutHours(ms: number): string {
  const m = Math.floor(ms / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const rest = ms % 1000;
  const out = `${m > 0 ? `${m}m` : ''}${s > 0 ? `${s}s` : ''}${rest > 0 ? `${rest}ms` : ''}`;
  return out || '0s';
}

/**
 * A duration field of a Flux object: Flux's CRD pattern for `rule`, then Go's syntax, in
 * milliseconds; longer than 0.
 */
export function fluxDuration(rule: keyof typeof FLUX_DURATION_RULES) {
  const { pattern, units } = FLUX_DURATION_RULES[rule];
  return z.string().transform((v, ctx) => {
    if (!pattern.test(v)) {
      let hint = rule === 'interval' ? 'e.g. 30s, 5m, 1h30m' : 'e.g. 30s, 5m, 90s';
      try {
        const ms = parseDuration(v);
        if (ms > 0 && rule === 'timeout') hint = `write ${withoutHours(ms)}`;
      } catch {
        // Not a Go duration either; the generic hint stands.
      }
      ctx.issues.push({
        code: 'custom',
        input: v,
        message: `"${v}" does not match Flux's ${rule} pattern ${pattern.source} (units ${units}); ${hint}`,
      });
      return z.NEVER;
    }
    const ms = parseDuration(v);
    if (ms <= 0) {
      ctx.issues.push({ code: 'custom', message: `must be longer than 0, e.g. 5m`, input: v });
      return z.NEVER;
    }
    return ms;
  });
}

/** An enum with a helpful error; a case-only mismatch gets a suggestion (Flux's enums are exact). */
export function oneOf<const T extends readonly string[]>(values: T) {
  return z.string().transform((v, ctx): T[number] => {
    if (values.includes(v)) return v;
    const folded = values.find((x) => x.toLowerCase() === v.toLowerCase());
    const hint = folded !== undefined ? `; did you mean ${folded}?` : '';
    ctx.issues.push({
      code: 'custom',
      message: `"${v}" is not one of ${values.join(', ')}${hint}`,
      input: v,
    });
    return z.NEVER;
  });
}

/** `{name}` reference to an object in the same namespace, yielding the name. */
export const localRef = z.object({ name: objectName }).transform((r) => r.name);

/** `{name, namespace?}` reference; the namespace is filled in by the caller's object. */
export const namespacedRef = z.object({ name: objectName, namespace: objectName.optional() });

const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

export const labelSelector = z
  .object({
    matchLabels: stringMap.default({}),
    matchExpressions: z
      .array(
        z.object({
          key: z.string().min(1),
          operator: oneOf(SELECTOR_OPERATORS),
          values: z.array(z.string()).default([]),
        }),
      )
      .default([]),
  })
  .superRefine((s, ctx) => {
    s.matchExpressions.forEach((e, i) => {
      const needsValues = e.operator === 'In' || e.operator === 'NotIn';
      if (needsValues && e.values.length === 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['matchExpressions', i, 'values'],
          message: `operator ${e.operator} needs at least one value`,
        });
      }
      if (!needsValues && e.values.length > 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['matchExpressions', i, 'values'],
          message: `operator ${e.operator} takes no values; remove them`,
        });
      }
    });
  })
  .transform((s): LabelSelector => s);

/** Runs a validator that throws; its message becomes the issue. */
export function throwsToIssue(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** A regular expression from the configuration: RE2, as Flux's Go reads it; why not, when it is not. */
export const re2 = z.string().check((ctx) => {
  const problem = throwsToIssue(() => compileRegex(ctx.value));
  if (problem) {
    ctx.issues.push({
      code: 'custom',
      message: `not a valid RE2 regular expression: ${problem}`,
      input: ctx.value,
    });
  }
});
