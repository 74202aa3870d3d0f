/**
 * Where the API server is and how to prove who pawl is: a kubeconfig file (`KUBECONFIG`, or
 * ~/.kube/config), or the Pod's service account when pawl runs in the cluster. Only what pawl's
 * client needs is read: the current context's server, CA, token (or token file) and client
 * certificate. Exec and auth-provider plugins are not supported; the error says so.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { UsageError } from '../util/index.js';

export interface KubeConnection {
  /** `https://host:port`, no trailing slash. */
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  insecureSkipTlsVerify: boolean;
  /** The bearer token, read again for each request (a projected token is rotated). */
  token?: () => string;
  /** The namespace of the context, or of the Pod; `default` when none is named. */
  namespace: string;
  /** Where this came from, for messages. */
  origin: string;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const kubeconfigSchema = z.object({
  clusters: z
    .array(
      z.object({
        name: z.string(),
        cluster: z.object({
          server: z.string().min(1),
          'certificate-authority': z.string().optional(),
          'certificate-authority-data': z.string().optional(),
          'insecure-skip-tls-verify': z.boolean().optional(),
        }),
      }),
    )
    .default([]),
  users: z
    .array(
      z.object({
        name: z.string(),
        user: z
          .object({
            token: z.string().optional(),
            tokenFile: z.string().optional(),
            'client-certificate': z.string().optional(),
            'client-certificate-data': z.string().optional(),
            'client-key': z.string().optional(),
            'client-key-data': z.string().optional(),
            exec: z.unknown().optional(),
            'auth-provider': z.unknown().optional(),
          })
          .default({}),
      }),
    )
    .default([]),
  contexts: z
    .array(
      z.object({
        name: z.string(),
        context: z.object({
          cluster: z.string(),
          user: z.string().optional(),
          namespace: z.string().optional(),
        }),
      }),
    )
    .default([]),
  'current-context': z.string().optional(),
});

export interface ConnectionOptions {
  /** A kubeconfig file; default `KUBECONFIG` (its first entry), else ~/.kube/config. */
  kubeconfig?: string;
  /** A context of that file other than its current one. */
  context?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * The in-cluster service account when `KUBERNETES_SERVICE_HOST` is set and no kubeconfig is
 * named, otherwise the kubeconfig. Throws UsageError naming the file and what is wrong.
 */
export function loadConnection(opts: ConnectionOptions = {}): KubeConnection {
  const env = opts.env ?? process.env;
  const named = opts.kubeconfig ?? env.KUBECONFIG?.split(':').find((p) => p !== '');
  if (!named && env.KUBERNETES_SERVICE_HOST) return inCluster(env);
  return fromKubeconfig(named ?? join(homedir(), '.kube', 'config'), opts.context);
}

/** The Pod's service account: the token file, the cluster's CA, and the service's address. */
export function inCluster(env: NodeJS.ProcessEnv, dir = SA_DIR): KubeConnection {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  const tokenFile = join(dir, 'token');
  const read = (name: string): Buffer => {
    try {
      return readFileSync(join(dir, name));
    } catch (err) {
      throw new UsageError(
        `KUBERNETES_SERVICE_HOST is set but ${join(dir, name)} cannot be read (${(err as Error).message}); mount the service account token (automountServiceAccountToken) or pass --kubeconfig`,
      );
    }
  };
  const ca = read('ca.crt');
  read('token');
  let namespace = 'default';
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || 'default';
  } catch {
    // An older Pod without the namespace file: `default`, as client-go does.
  }
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca,
    insecureSkipTlsVerify: false,
    token: () => readFileSync(tokenFile, 'utf8').trim(),
    namespace,
    origin: `the service account in ${dir}`,
  };
}

export function fromKubeconfig(file: string, contextName?: string): KubeConnection {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the kubeconfig ${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    throw new UsageError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  const parsed = kubeconfigSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UsageError(`${file}: ${i.path.join('.') || 'the file'}: ${i.message}`);
  }
  const cfg = parsed.data;
  const name = contextName ?? cfg['current-context'];
  if (!name) throw new UsageError(`${file}: no current-context; name a context with --context`);
  const ctx = cfg.contexts.find((c) => c.name === name)?.context;
  if (!ctx) throw new UsageError(`${file}: context "${name}" is not defined`);
  const cluster = cfg.clusters.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster) throw new UsageError(`${file}: cluster "${ctx.cluster}" of context "${name}" is not defined`);
  const user = ctx.user ? (cfg.users.find((u) => u.name === ctx.user)?.user ?? {}) : {};
  if (user.exec !== undefined || user['auth-provider'] !== undefined) {
    throw new UsageError(
      `${file}: user "${ctx.user}" authenticates with an exec or auth-provider plugin, which pawl does not run; use a token, a token file or a client certificate`,
    );
  }
  const base = dirname(file);
  const at = (p: string): string => (isAbsolute(p) ? p : join(base, p));
  const bytes = (data: string | undefined, path: string | undefined, what: string): Buffer | undefined => {
    if (data !== undefined) return Buffer.from(data, 'base64');
    if (path === undefined) return undefined;
    try {
      return readFileSync(at(path));
    } catch (err) {
      throw new UsageError(`${file}: cannot read the ${what} ${at(path)}: ${(err as Error).message}`);
    }
  };
  const tokenFile = user.tokenFile;
  const token =
    user.token !== undefined
      ? () => user.token!
      : tokenFile !== undefined
        ? () => readFileSync(at(tokenFile), 'utf8').trim()
        : undefined;
  return {
    server: cluster.server.replace(/\/+$/, ''),
    ca: bytes(
      cluster['certificate-authority-data'],
      cluster['certificate-authority'],
      'certificate authority',
    ),
    cert: bytes(user['client-certificate-data'], user['client-certificate'], 'client certificate'),
    key: bytes(user['client-key-data'], user['client-key'], 'client key'),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] ?? false,
    ...(token ? { token } : {}),
    namespace: ctx.namespace ?? 'default',
    origin: `${file} (context ${name})`,
  };
}
