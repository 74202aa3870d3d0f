/**
 * A real Kubernetes API server for a test file: scripts/kube-apiserver.sh starts etcd and
 * kube-apiserver on free loopback ports with Flux's CRDs and pawl's applied; `kubectl` drives
 * it, as a user would. One server per test file (start in `before`, `close` in `after`).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, '..', '..');
const script = join(root, 'scripts', 'kube-apiserver.sh');

export interface TestKube {
  dir: string;
  kubeconfig: string;
  /** Runs kubectl against this server; resolves with its stdout (and stderr, for warnings). */
  kubectl(args: string[], input?: string): Promise<{ stdout: string; stderr: string }>;
  /** Stops etcd and the API server, keeping their data (`kube-apiserver.sh down`). */
  stop(): Promise<void>;
  /** Starts them again on the same ports, with the same data. */
  start(): Promise<void>;
  close(): Promise<void>;
}

function env(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PAWL_FLUX_CRDS:
      process.env.PAWL_FLUX_CRDS ?? resolve(root, '..', 'shared', 'conformance', 'flux', 'crds'),
  };
}

/**
 * `rbac`: a real authorizer (`--authorization-mode RBAC`) instead of every request allowed; the
 * kubeconfig's user is in system:masters, other identities get what RBAC objects grant them.
 */
export async function startKube(opts: { rbac?: boolean } = {}): Promise<TestKube> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-kube-'));
  const kubeconfig = join(dir, 'kubeconfig');
  let first = true;
  const up = async (): Promise<void> => {
    const args = [script, 'up', dir, ...(first && opts.rbac ? ['--rbac'] : [])];
    first = false;
    await exec('bash', args, { env: env(), maxBuffer: 1 << 24 });
  };
  const down = async (): Promise<void> => {
    await exec('bash', [script, 'down', dir], { env: env() });
  };
  try {
    await up();
  } catch (err) {
    // Started halfway (the CRDs failed to apply): stop what did start.
    await down().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    kubeconfig,
    kubectl: (args, input) =>
      new Promise((res, rej) => {
        const child = execFile(
          'kubectl',
          args,
          { env: { ...process.env, KUBECONFIG: kubeconfig }, maxBuffer: 1 << 24 },
          (err, stdout, stderr) =>
            err ? rej(Object.assign(err, { stdout, stderr })) : res({ stdout, stderr }),
        );
        if (input !== undefined) child.stdin!.end(input);
      }),
    stop: down,
    start: up,
    close: async () => {
      await down();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Flux's kinds by their full names: pawl's CRDs are installed too, with the same short names. */
export const FLUX = {
  repository: 'imagerepositories.image.toolkit.fluxcd.io',
  policy: 'imagepolicies.image.toolkit.fluxcd.io',
  automation: 'imageupdateautomations.image.toolkit.fluxcd.io',
} as const;

export interface KubeObj {
  metadata: { generation: number; annotations?: Record<string, string>; labels?: Record<string, string> };
  status?: Record<string, unknown> & {
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

/** The object as the server has it now (`kubectl get -o json`). */
export async function getObject(
  kube: TestKube,
  ns: string,
  resource: string,
  name: string,
): Promise<KubeObj> {
  const { stdout } = await kube.kubectl(['get', '-n', ns, resource, name, '-o', 'json']);
  return JSON.parse(stdout) as KubeObj;
}

export const readyOf = (o: KubeObj) => o.status?.conditions?.find((c) => c.type === 'Ready');

/** `kubectl apply -f -` of a YAML stream. */
export async function apply(kube: TestKube, yaml: string): Promise<void> {
  await kube.kubectl(['apply', '-f', '-'], yaml);
}

/**
 * Every file of a configuration directory applied, as a Flux user would apply the objects pawl's
 * file mode reads (`except`: file names left out).
 */
export async function applyDir(kube: TestKube, dir: string, except: readonly string[] = []): Promise<void> {
  for (const f of await readdir(dir))
    if (!except.includes(f)) await apply(kube, await readFile(join(dir, f), 'utf8'));
}

/** `kubectl wait --for=…` on one object; `for` as kubectl takes it (`condition=Ready`, `jsonpath=…`). */
export async function waitFor(
  kube: TestKube,
  ns: string,
  object: string,
  condition: string,
  timeout = '60s',
): Promise<void> {
  await kube.kubectl(['wait', '-n', ns, `--for=${condition}`, object, `--timeout=${timeout}`]);
}

/**
 * Sets `reconcile.fluxcd.io/requestedAt` as `flux reconcile` does, and waits until the object's
 * status reports it handled. Returns the value set (after `offsetMs`, so that it is new).
 */
export async function reconcileNow(
  kube: TestKube,
  ns: string,
  object: string,
  offsetMs = 0,
): Promise<string> {
  const at = new Date(Date.now() + offsetMs).toISOString();
  await kube.kubectl(['annotate', '--overwrite', '-n', ns, object, `reconcile.fluxcd.io/requestedAt=${at}`]);
  await waitFor(kube, ns, object, `jsonpath={.status.lastHandledReconcileAt}=${at}`);
  return at;
}

/** The reasons (or messages) of the Events on one object, as `kubectl get events` lists them. */
export async function eventsOn(
  kube: TestKube,
  ns: string,
  kind: string,
  name: string,
  field: 'reason' | 'message' = 'reason',
  reason?: string,
): Promise<string[]> {
  const selector = [`involvedObject.name=${name}`, `involvedObject.kind=${kind}`];
  if (reason) selector.push(`reason=${reason}`);
  const { stdout } = await kube.kubectl([
    'get',
    'events',
    '-n',
    ns,
    '--field-selector',
    selector.join(','),
    '-o',
    `jsonpath={range .items[*]}{.${field}}{"\\n"}{end}`,
  ]);
  return stdout.split('\n').filter((l) => l !== '');
}

/**
 * A kubeconfig for the ServiceAccount `namespace/name`, with a token from the TokenRequest API
 * (`kubectl create token`), as a Pod's projected token is: the identity
 * `system:serviceaccount:NS:NAME`, with what RBAC grants it and nothing more. Its context's
 * namespace is the ServiceAccount's, as a Pod's is.
 */
export async function serviceAccountKubeconfig(
  kube: TestKube,
  namespace: string,
  name: string,
): Promise<string> {
  const token = (
    await kube.kubectl(['create', 'token', '-n', namespace, name, '--duration=1h'])
  ).stdout.trim();
  const admin = await readFile(kube.kubeconfig, 'utf8');
  const server = /server: (\S+)/.exec(admin)![1]!;
  const ca = /certificate-authority: (\S+)/.exec(admin)![1]!;
  const file = join(kube.dir, `kubeconfig-${namespace}-${name}`);
  await writeFile(
    file,
    `apiVersion: v1
kind: Config
clusters:
  - name: pawl-test
    cluster: {server: ${server}, certificate-authority: ${ca}}
contexts:
  - name: ${name}
    context: {cluster: pawl-test, user: ${name}, namespace: ${namespace}}
current-context: ${name}
users:
  - name: ${name}
    user: {token: ${token}}
`,
  );
  return file;
}
