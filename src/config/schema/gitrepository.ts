import { z } from 'zod';
import { fluxDuration, ignored, localRef, metadata, tolerated } from './common.js';
import { gitRef } from './imageupdateautomation.js';

export const GIT_API_VERSIONS = ['source.toolkit.fluxcd.io/v1', 'source.toolkit.fluxcd.io/v1beta2'] as const;

/** Why `url` is not a Git URL pawl can clone; undefined when it is fine. */
export function gitUrlProblem(url: string): string | undefined {
  if (url.trim() === '') return 'must not be empty';
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(url);
  if (scheme) {
    const s = scheme[1]!.toLowerCase();
    if (!['https', 'http', 'ssh', 'file'].includes(s)) {
      return `"${s}://" is not supported; use https://, http://, ssh://, file://, git@host:path or a local path`;
    }
    if (s !== 'file') {
      try {
        const u = new URL(url);
        if (!u.hostname) return `"${url}" has no host`;
      } catch {
        return `"${url}" is not a valid URL`;
      }
    }
    return undefined;
  }
  // scp-like syntax (user@host:path) as git understands it: a colon before any slash.
  const scp = /^(?:[^@/]+@)?([^:/]+):(.*)$/.exec(url);
  if (scp && !/^[A-Za-z]$/.test(scp[1]!)) {
    if (scp[2] === '') return `"${url}" has no repository path after ":"`;
    return undefined;
  }
  // Anything else is a local path, which git accepts as is.
  return undefined;
}

export const gitRepositorySchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('GitRepository'),
  metadata,
  spec: z.object({
    url: z.string().check((ctx) => {
      const problem = gitUrlProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    }),
    ref: gitRef.optional(),
    secretRef: localRef.optional(),
    interval: fluxDuration('interval'),
    timeout: fluxDuration('timeout').default(60_000),
    suspend: tolerated,
    ignore: tolerated,
    include: tolerated,
    recurseSubmodules: tolerated,
    sparseCheckout: tolerated,
    accessFrom: tolerated,
    gitImplementation: tolerated,
    provider: ignored('pawl authenticates to Git with secretRef only'),
    proxySecretRef: ignored('pawl does not support Git proxies yet'),
    verify: ignored('pawl does not verify commit signatures'),
  }),
  status: tolerated,
});
