/** Config objects and loggers for the git tests. */
import { after, before } from 'node:test';
import { Writable } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { GitRef, GitRepository, Secret } from '../../src/config/types.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';

export function gitRepository(
  url: string,
  opts: { name?: string; namespace?: string; ref?: GitRef; secretRef?: string } = {},
): GitRepository {
  return {
    kind: 'GitRepository',
    apiVersion: 'source.toolkit.fluxcd.io/v1',
    metadata: {
      namespace: opts.namespace ?? 'flux-system',
      name: opts.name ?? 'repo',
      labels: {},
      annotations: {},
    },
    source: { file: 'test.yaml', line: 1 },
    spec: {
      url,
      ...(opts.ref ? { ref: opts.ref } : {}),
      ...(opts.secretRef ? { secretRef: opts.secretRef } : {}),
      interval: 60_000,
      timeout: 20_000,
    },
  };
}

export function secret(name: string, data: Record<string, string>): Secret {
  return {
    kind: 'Secret',
    apiVersion: 'v1',
    metadata: { namespace: 'flux-system', name, labels: {}, annotations: {} },
    source: { file: 'secrets.yaml', line: 1 },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v)])),
  };
}

/** A debug-level logger whose output the test can search. */
export function captureLogger(): { log: Logger; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return { log: pino({ level: 'trace' }, stream), text: () => chunks.join('') };
}

export async function tempDir(
  prefix = 'pawl-git-test-',
): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export type TempDir = Awaited<ReturnType<typeof tempDir>>;

/**
 * A suite's git server and state directory: started before its tests, handed to `use`, closed
 * and removed after them.
 */
export function gitSuite(use: (server: GitServer, state: TempDir) => void): void {
  let server: GitServer | undefined;
  let state: TempDir | undefined;
  before(async () => {
    server = await startGitServer();
    state = await tempDir();
    use(server, state);
  });
  after(async () => {
    await server?.close();
    await state?.cleanup();
  });
}
