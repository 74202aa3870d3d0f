/**
 * Starts Debian's real `docker-registry` (distribution 2.8) for tests, on a free port, with
 * filesystem storage in a temp dir, in one of three set-ups: anonymous, htpasswd (Basic) or
 * token auth (with our token server).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTokenServer, type TokenServer } from './token-server.js';
import type { Secret } from '../../src/config/types.js';

const exec = promisify(execFile);
const REGISTRY_BIN = process.env.PAWL_REGISTRY_BIN ?? '/usr/bin/docker-registry';

export type RegistryAuth = 'none' | 'htpasswd' | 'token';

/** One of the registry's `notifications.endpoints`: where it POSTs its event envelopes. */
export interface RegistryNotificationEndpoint {
  name: string;
  url: string;
  /** Sent with every request, e.g. `{ Authorization: ['Bearer TOKEN'] }`. */
  headers?: Record<string, string[]>;
  /** Go durations; defaults keep a test's retries quick. */
  timeout?: string;
  threshold?: number;
  backoff?: string;
  /** `ignore.mediatypes` and `ignore.actions` (e.g. `['pull']`). */
  ignore?: { mediatypes?: string[]; actions?: string[] };
}

export interface RegistryOptions {
  /** The registry sends its push/pull/delete events to these endpoints. */
  notifications?: RegistryNotificationEndpoint[];
  auth?: RegistryAuth;
  /** name → password; default `{ alice: 'wonderland-secret-1' }` when auth is not 'none'. */
  users?: Record<string, string>;
  /** Token set-up only: anonymous requests may pull (Docker Hub style). Default false. */
  anonymousPull?: boolean;
  /** Token set-up only: identity (refresh) tokens the token server accepts: token → user. */
  identityTokens?: Record<string, string>;
  /** Token set-up only: token lifetime in seconds. */
  tokenExpiresIn?: number;
}

export interface TestRegistry {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `127.0.0.1:PORT` — use as the registry part of image references. */
  host: string;
  auth: RegistryAuth;
  users: Record<string, string>;
  /** The first user, for convenience (undefined with auth 'none'). */
  user?: { username: string; password: string };
  /** The token server (auth 'token' only). */
  tokenServer?: TokenServer;
  /** Storage root (filesystem driver). */
  storageDir: string;
  /** Registry stderr so far, for debugging a failing test. */
  output(): string;
  stop(): Promise<void>;
}

/** Registries still running, killed if the test process exits without stopping them. */
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

async function htpasswdFile(path: string, users: Record<string, string>): Promise<void> {
  const lines: string[] = [];
  for (const [name, password] of Object.entries(users)) {
    // bcrypt cost 4: the registry checks every request, and the default cost makes tests crawl.
    const { stdout } = await exec('htpasswd', ['-nbB', '-C', '4', name, password]);
    lines.push(stdout.trim());
  }
  await writeFile(path, lines.join('\n') + '\n');
}

async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`docker-registry exited with ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${url}/v2/`);
      await res.arrayBuffer();
      if (res.status === 200 || res.status === 401) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`docker-registry did not answer on ${url} within 15s:\n${output()}`);
}

/** JSON is YAML: each endpoint is written as one flow mapping, so URLs and tokens need no quoting rules. */
function notificationsBlock(endpoints: RegistryNotificationEndpoint[] | undefined): string {
  if (!endpoints?.length) return '';
  const lines = endpoints.map((e) => {
    const endpoint = { timeout: '2s', threshold: 3, backoff: '200ms', ...e };
    return `    - ${JSON.stringify(endpoint)}\n`;
  });
  return `notifications:\n  endpoints:\n${lines.join('')}`;
}

export async function startRegistry(opts: RegistryOptions = {}): Promise<TestRegistry> {
  const auth = opts.auth ?? 'none';
  const users = auth === 'none' ? {} : (opts.users ?? { alice: 'wonderland-secret-1' });
  const dir = await mkdtemp(join(tmpdir(), 'pawl-registry-'));
  const storageDir = join(dir, 'storage');
  await mkdir(storageDir);
  let tokenServer: TokenServer | undefined;
  let authBlock = '';
  if (auth === 'htpasswd') {
    await htpasswdFile(join(dir, 'htpasswd'), users);
    authBlock = `auth:\n  htpasswd:\n    realm: pawl-test\n    path: ${join(dir, 'htpasswd')}\n`;
  } else if (auth === 'token') {
    tokenServer = await startTokenServer({
      users,
      service: 'pawl-test-registry',
      issuer: 'pawl-test-issuer',
      anonymousPull: opts.anonymousPull ?? false,
      expiresIn: opts.tokenExpiresIn ?? 300,
      ...(opts.identityTokens ? { identityTokens: opts.identityTokens } : {}),
    });
    authBlock =
      `auth:\n  token:\n    realm: ${tokenServer.realm}\n    service: ${tokenServer.service}\n` +
      `    issuer: ${tokenServer.issuer}\n    rootcertbundle: ${tokenServer.certFile}\n`;
  }

  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    // PAWL_REGISTRY_LOG_LEVEL=info shows the registry's requests and notification retries.
    const config =
      `version: 0.1\n` +
      `log:\n  level: ${process.env.PAWL_REGISTRY_LOG_LEVEL ?? 'error'}\n  accesslog:\n    disabled: true\n` +
      `storage:\n  filesystem:\n    rootdirectory: ${storageDir}\n  delete:\n    enabled: true\n` +
      `  maintenance:\n    uploadpurging:\n      enabled: false\n` +
      `http:\n  addr: 127.0.0.1:${port}\n  secret: pawl-test-http-secret\n` +
      authBlock +
      notificationsBlock(opts.notifications);
    const configFile = join(dir, 'config.yml');
    await writeFile(configFile, config);
    const child = spawn(REGISTRY_BIN, ['serve', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(child);
    child.once('exit', () => live.delete(child));
    // A test that forgets stop() must not hang its process: the registry does not keep the
    // event loop alive, and the exit handler above kills it.
    child.unref();
    for (const stream of [child.stdout, child.stderr])
      (stream as unknown as { unref?: () => void } | null)?.unref?.();
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitReady(url, child, () => out);
    } catch (err) {
      lastError = err;
      child.kill('SIGKILL');
      continue;
    }
    const first = Object.entries(users)[0];
    return {
      url,
      host: `127.0.0.1:${port}`,
      auth,
      users,
      ...(first ? { user: { username: first[0], password: first[1] } } : {}),
      ...(tokenServer ? { tokenServer } : {}),
      storageDir,
      output: () => out,
      async stop() {
        if (child.exitCode === null) {
          const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
          await exited;
          clearTimeout(timer);
        }
        await tokenServer?.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  await tokenServer?.stop();
  await rm(dir, { recursive: true, force: true });
  throw lastError instanceof Error ? lastError : new Error('docker-registry did not start');
}

/** A `kubernetes.io/dockerconfigjson` Secret object, as the config loader produces it. */
export function dockerConfigSecret(
  host: string,
  username: string,
  password: string,
  name = 'regcred',
): Secret {
  const auths = { [host]: { auth: Buffer.from(`${username}:${password}`).toString('base64') } };
  return {
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { namespace: 'default', name, labels: {}, annotations: {} },
    source: { file: 'test/secret.yaml', line: 1 },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })) },
  };
}

/** An Opaque Secret with the given string values (e.g. a certSecretRef with `ca.crt`). */
export function opaqueSecret(values: Record<string, string>, name = 'certs'): Secret {
  return {
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { namespace: 'default', name, labels: {}, annotations: {} },
    source: { file: 'test/secret.yaml', line: 1 },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v)])),
  };
}
