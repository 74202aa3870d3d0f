/**
 * Registry credentials, found the way Flux and Docker find them: a Secret named by `secretRef`
 * (dockerconfigjson, legacy dockercfg, or basic-auth `username`/`password`), else the Docker
 * config (`$DOCKER_CONFIG/config.json`): `credHelpers`, `credsStore`, `auths`.
 * Values never reach a log or an error: only `source` (where they came from) does.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { type Secret, refKey } from '../../config/index.js';
import { RuntimeError } from '../../util/index.js';
import { DOCKER_HUB } from './reference.js';

export interface Credentials {
  username?: string;
  password?: string;
  /** OAuth2 refresh token (`identitytoken`), exchanged at the token service. */
  identityToken?: string;
  /** A bearer token to send as is (`registrytoken`). */
  registryToken?: string;
  /** Where they came from, for messages: `Secret ns/name`, `docker config …`, `docker-credential-x`. */
  source: string;
  /** ms since the epoch when they stop working (cloud tokens); absent: they do not expire. */
  expiresAt?: number;
}

const authEntry = z.object({
  auth: z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
  identitytoken: z.string().optional(),
  registrytoken: z.string().optional(),
});
const dockerConfig = z.object({
  auths: z.record(z.string(), authEntry).optional(),
  credsStore: z.string().optional(),
  credHelpers: z.record(z.string(), z.string()).optional(),
});
type AuthEntry = z.infer<typeof authEntry>;

/** The host a config key names: `https://index.docker.io/v1/` → `index.docker.io`. */
function keyHost(key: string): string {
  return key
    .replace(/^[a-z]+:\/\//i, '')
    .replace(/\/.*$/, '')
    .toLowerCase();
}

function hostMatches(key: string, registry: string): boolean {
  const k = keyHost(key);
  const r = registry.toLowerCase();
  if (r === DOCKER_HUB) return k === 'docker.io' || k === 'index.docker.io' || k === 'registry-1.docker.io';
  return k === r;
}

function fromEntry(entry: AuthEntry, source: string): Credentials | null {
  const out: Credentials = { source };
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i > 0) {
      out.username = decoded.slice(0, i);
      out.password = decoded.slice(i + 1);
    }
  }
  if (entry.username) out.username = entry.username;
  if (entry.password) out.password = entry.password;
  if (entry.identitytoken) out.identityToken = entry.identitytoken;
  if (entry.registrytoken) out.registryToken = entry.registrytoken;
  if (!out.password && !out.identityToken && !out.registryToken) return null;
  return out;
}

function findAuth(
  auths: Record<string, AuthEntry> | undefined,
  registry: string,
): [string, AuthEntry] | undefined {
  if (!auths) return undefined;
  return Object.entries(auths).find(([k]) => hostMatches(k, registry));
}

/** Credentials for `registry` from a Secret (type dockerconfigjson, dockercfg or basic-auth). */
export function credentialsFromSecret(secret: Secret, registry: string): Credentials | null {
  const source = `Secret ${refKey(secret.metadata)}`;
  const json = secret.data['.dockerconfigjson'] ?? secret.data['.dockercfg'];
  if (json) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json.toString('utf8'));
    } catch {
      throw new RuntimeError(`${source}: .dockerconfigjson is not valid JSON`);
    }
    // `.dockercfg` is the auths map itself; `.dockerconfigjson` wraps it in `auths`.
    const wrapped = secret.data['.dockerconfigjson'] ? parsed : { auths: parsed };
    const cfg = dockerConfig.safeParse(wrapped);
    if (!cfg.success)
      throw new RuntimeError(
        `${source}: .dockerconfigjson does not look like a Docker config (expected {"auths": {...}})`,
      );
    const hit = findAuth(cfg.data.auths, registry);
    return hit ? fromEntry(hit[1], source) : null;
  }
  const username = secret.data.username?.toString('utf8');
  const password = secret.data.password?.toString('utf8');
  if (username !== undefined && password !== undefined) return { username, password, source };
  throw new RuntimeError(
    `${source} has neither .dockerconfigjson nor username/password; create it with "kubectl create secret docker-registry"`,
  );
}

export interface HelperRunner {
  (helper: string, serverUrl: string): Promise<{ Username?: string; Secret?: string } | null>;
}

/** Runs `docker-credential-<name> get` with the server URL on stdin; null when it has none. */
export const runCredentialHelper: HelperRunner = (helper, serverUrl) =>
  new Promise((resolve, reject) => {
    const child = execFile(
      `docker-credential-${helper}`,
      ['get'],
      { timeout: 30_000, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          const text = `${stdout}${stderr}`;
          if (/credentials not found/i.test(text)) return resolve(null);
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') {
            return reject(
              new RuntimeError(
                `credential helper docker-credential-${helper} is not on PATH (named in the Docker config)`,
              ),
            );
          }
          return reject(
            new RuntimeError(
              `credential helper docker-credential-${helper} failed (${err.message.split('\n')[0]})`,
            ),
          );
        }
        try {
          const parsed = z
            .object({ Username: z.string().optional(), Secret: z.string().optional() })
            .parse(JSON.parse(stdout));
          resolve(parsed);
        } catch {
          reject(
            new RuntimeError(
              `credential helper docker-credential-${helper} printed something that is not its JSON answer`,
            ),
          );
        }
      },
    );
    child.stdin?.end(serverUrl);
  });

export interface DockerConfigOptions {
  /** Directory holding config.json; default `$DOCKER_CONFIG`, else `~/.docker`. */
  dir?: string;
  runHelper?: HelperRunner;
}

/** Credentials for `registry` from the Docker config; null when it names none (or there is no config). */
export async function credentialsFromDockerConfig(
  registry: string,
  opts: DockerConfigOptions = {},
): Promise<Credentials | null> {
  const dir = opts.dir ?? process.env.DOCKER_CONFIG ?? join(homedir(), '.docker');
  const file = join(dir, 'config.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return null;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new RuntimeError(`${file} is not valid JSON`);
  }
  const cfg = dockerConfig.safeParse(raw);
  if (!cfg.success) throw new RuntimeError(`${file} does not look like a Docker config`);
  const run = opts.runHelper ?? runCredentialHelper;
  const serverUrl = registry === DOCKER_HUB ? 'https://index.docker.io/v1/' : registry;
  const helperEntry = Object.entries(cfg.data.credHelpers ?? {}).find(([k]) => hostMatches(k, registry));
  const helper = helperEntry?.[1] ?? cfg.data.credsStore;
  if (helper) {
    const got = await run(helper, serverUrl);
    if (got && got.Secret) {
      const source = `docker-credential-${helper}`;
      // Docker's convention: the user name `<token>` means the secret is an identity token.
      if (got.Username === '<token>') return { identityToken: got.Secret, source };
      return { ...(got.Username ? { username: got.Username } : {}), password: got.Secret, source };
    }
    if (helperEntry) return null;
  }
  const hit = findAuth(cfg.data.auths, registry);
  return hit ? fromEntry(hit[1], `docker config ${file}`) : null;
}

/** Every secret string in a set of credentials, for scrubbing text. */
export function secretValues(c: Credentials | null): string[] {
  if (!c) return [];
  const out = [c.password, c.identityToken, c.registryToken].filter((v): v is string => !!v && v.length >= 4);
  if (c.username && c.password) out.push(Buffer.from(`${c.username}:${c.password}`).toString('base64'));
  return out;
}
