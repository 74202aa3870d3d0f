/**
 * Secrets that are not in the `-c` files (the bootstrap `flux-system` Secret, SOPS-encrypted
 * ones, `secretGenerator` inputs kept out of Git) come from two more places, tried in order:
 *
 * 1. `--secrets-dir DIR`, laid out as Kubernetes mounts Secrets: `DIR/NAMESPACE/NAME/KEY`, one
 *    file per key holding the raw value (entries starting with `..`, Kubernetes' own, are skipped);
 * 2. environment variables `PAWL_SECRET_<NAMESPACE>_<NAME>_<KEY>`, each part upper-cased with
 *    every run of other characters than letters and digits written `_` (and none at either end):
 *    `PAWL_SECRET_FLUX_SYSTEM_GIT_CREDENTIALS_PASSWORD`. Only the keys pawl reads are looked up
 *    (ENV_KEYS), so that the name and the key cannot be confused.
 *
 * A Secret is taken whole from the first place that has it; the places are not mixed.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_LIMITS, readBounded } from './limits.js';
import type { ObjectRef } from './types.js';

/** The keys pawl reads from Secrets: the only ones looked up in the environment. */
export const ENV_KEYS = [
  'username',
  'password',
  'bearerToken',
  'token',
  'identity',
  'identity.pub',
  'cosign.pub',
  'known_hosts',
  'ca.crt',
  'tls.crt',
  'tls.key',
  'caFile',
  'certFile',
  'keyFile',
  '.dockerconfigjson',
  'git.asc',
  'ssh-privatekey',
] as const;

export interface SecretSources {
  dir?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

/** A Secret found outside the `-c` files: where, and its values by key. */
export interface FoundSecret {
  /** `DIR/NAMESPACE/NAME` or `environment (PAWL_SECRET_…_*)`. */
  origin: string;
  values: Record<string, string>;
  /** Key files over the size limit, left out of `values`. */
  tooBig: { file: string; bytes: number }[];
}

export function envPart(s: string): string {
  return s
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

export function envPrefix(ref: ObjectRef): string {
  return `PAWL_SECRET_${envPart(ref.namespace)}_${envPart(ref.name)}_`;
}

/** Where pawl looks for a Secret besides the `-c` files, in words, for "not found" messages. */
export function whereLooked(ref: ObjectRef, sources: SecretSources): string {
  const dir = sources.dir
    ? `in ${join(sources.dir, ref.namespace, ref.name)}/ (--secrets-dir)`
    : 'in no --secrets-dir (none given)';
  return `pawl looked in the -c files, ${dir}, and in environment variables ${envPrefix(ref)}<KEY>`;
}

async function fromDir(dir: string, ref: ObjectRef, maxBytes: number): Promise<FoundSecret | undefined> {
  const base = join(dir, ref.namespace, ref.name);
  const st = await stat(base).catch(() => undefined);
  if (!st?.isDirectory()) return undefined;
  const values: Record<string, string> = {};
  const tooBig: FoundSecret['tooBig'] = [];
  for (const name of (await readdir(base)).sort()) {
    if (name.startsWith('..')) continue;
    const file = join(base, name);
    // Kubernetes mounts each key as a symlink into `..data/`; stat follows it.
    const f = await stat(file).catch(() => undefined);
    if (!f?.isFile()) continue;
    const read = await readBounded(file, maxBytes);
    if ('tooBig' in read) tooBig.push({ file, bytes: read.tooBig });
    else values[name] = read.text;
  }
  return { origin: base, values, tooBig };
}

function fromEnv(env: Readonly<Record<string, string | undefined>>, ref: ObjectRef): FoundSecret | undefined {
  const prefix = envPrefix(ref);
  const values: Record<string, string> = {};
  for (const key of ENV_KEYS) {
    const v = env[prefix + envPart(key)];
    if (v !== undefined) values[key] = v;
  }
  return Object.keys(values).length > 0
    ? { origin: `environment (${prefix}*)`, values, tooBig: [] }
    : undefined;
}

export async function findSecret(
  ref: ObjectRef,
  sources: SecretSources,
  maxKeyBytes = DEFAULT_LIMITS.secretKeyBytes,
): Promise<FoundSecret | undefined> {
  if (sources.dir) {
    const found = await fromDir(sources.dir, ref, maxKeyBytes);
    if (found) return found;
  }
  return sources.env ? fromEnv(sources.env, ref) : undefined;
}

/** The Secret as a raw object for the Secret schema; a Docker config gets its type so it is checked. */
export function secretObject(ref: ObjectRef, found: FoundSecret): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: ref.name, namespace: ref.namespace },
    type: '.dockerconfigjson' in found.values ? 'kubernetes.io/dockerconfigjson' : 'Opaque',
    stringData: found.values,
  };
}
