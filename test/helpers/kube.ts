/**
 * A real Kubernetes API server for a test file: scripts/kube-apiserver.sh starts etcd and
 * kube-apiserver on free loopback ports with Flux's CRDs and pawl's applied; `kubectl` drives
 * it, as a user would. One server per test file (start in `before`, `close` in `after`).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
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

export async function startKube(): Promise<TestKube> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-kube-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const up = async (): Promise<void> => {
    await exec('bash', [script, 'up', dir], { env: env(), maxBuffer: 1 << 24 });
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
