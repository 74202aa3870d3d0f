/**
 * A world for several `pawl serve` replicas on one PostgreSQL: the real registry (notifying the
 * first replica only), the smart-HTTP git server with one repository per automation (so that
 * commits can be counted per automation), and N automations that all follow one policy.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startGitServer, type CommitInfo, type GitServer } from '../helpers/git-server.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { freePort, startRegistry, type TestRegistry } from '../helpers/registry.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';
import { GIT_PASSWORD, GIT_USER } from '../helpers/world.js';

const TOKEN = 'replicas-notify-token-0123456789';
const HOOK = `/hook/${createHash('sha256')
  .update(TOKEN + 'registry' + 'flux-system')
  .digest('hex')}`;

export interface ReplicaWorld {
  registry: TestRegistry;
  git: GitServer;
  pg: TestPostgres;
  /** The store's URL without the password (it goes in the environment). */
  storeUrl: string;
  configDir: string;
  automations: number;
  repo(i: number): string;
  /** The tag the marker in repository i holds on the remote. */
  tagOf(i: number): Promise<string>;
  commits(i: number): Promise<CommitInfo[]>;
  /**
   * Starts replica `i` (state in its own directory; replica 0 on the port the registry notifies).
   * `args` come last, so they may override the lease lifetime and heartbeat.
   */
  start(i: number, args?: string[]): Promise<ServeProcess>;
  /** The receivers' path of the Receiver, and its token (a test may send events itself). */
  hook: { path: string; token: string };
  /** Rows of a query on the shared database. */
  query<T extends object>(sql: string): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * Short enough that a killed replica's work moves within seconds, long enough that a replica
 * starved of CPU on a loaded CI machine still renews in time. With 3 s, a heartbeat held up for
 * two seconds could lose a live replica its leases (its passes aborted, their retries backed
 * off); the kill -9 test once timed out under load, its cause not captured — it now prints the
 * lagging automations, the queue, the leases and the replicas' logs when it fails.
 */
export const LEASE_TTL = '10s';
export const HEARTBEAT = '2s';

export async function startReplicaWorld(automations: number): Promise<ReplicaWorld> {
  const port0 = await freePort();
  const registry = await startRegistry({
    auth: 'none',
    notifications: [
      {
        name: 'pawl',
        url: `http://127.0.0.1:${port0}${HOOK}`,
        headers: { Authorization: [`Bearer ${TOKEN}`] },
      },
    ],
  });
  const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
  const server = await startPostgres();
  const base = await mkdtemp(join(tmpdir(), 'pawl-replicas-'));
  const configDir = join(base, 'config');
  await mkdir(configDir);
  const repo = (i: number) => `repo-${String(i).padStart(3, '0')}`;
  const marker = (tag: string) =>
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ${registry.host}/team/app:${tag} # {"$imagepolicy": "flux-system:app"}\n`;
  const docs: string[] = [
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: { name: app, namespace: flux-system }
spec: { image: ${registry.host}/team/app, interval: 1h }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: { name: app, namespace: flux-system }
spec:
  imageRepositoryRef: { name: app }
  policy: { semver: { range: ">=1.0.0" } }
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: { name: registry, namespace: flux-system }
spec:
  type: distribution
  resources:
    - { apiVersion: image.toolkit.fluxcd.io/v1, kind: ImageRepository, name: app }
  secretRef: { name: webhook-token }
---
apiVersion: v1
kind: Secret
metadata: { name: webhook-token, namespace: flux-system }
stringData: { token: ${TOKEN} }
---
apiVersion: v1
kind: Secret
metadata: { name: git-credentials, namespace: flux-system }
type: kubernetes.io/basic-auth
stringData: { username: ${GIT_USER}, password: ${GIT_PASSWORD} }
`,
  ];
  for (let i = 0; i < automations; i++) {
    await git.createBareRepo(repo(i), { 'app.yaml': marker('1.0.0') });
    docs.push(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: ${repo(i)}, namespace: flux-system }
spec:
  interval: 1h
  url: ${git.cloneUrl(repo(i))}
  ref: { branch: main }
  secretRef: { name: git-credentials }
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: { name: ${repo(i)}, namespace: flux-system }
spec:
  interval: 1h
  sourceRef: { kind: GitRepository, name: ${repo(i)} }
  git:
    checkout: { ref: { branch: main } }
    commit: { author: { name: pawl-bot, email: pawl@example.com } }
  update: { path: ./, strategy: Setters }
`);
  }
  await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));

  const db = new pg.Pool({ connectionString: server.url, max: 2 });
  db.on('error', () => undefined);
  return {
    registry,
    git,
    pg: server,
    storeUrl: server.urlWithoutPassword,
    configDir,
    automations,
    repo,
    async tagOf(i) {
      const text = await git.show(repo(i), 'main', 'app.yaml');
      return /team\/app:([^\s]+) #/.exec(text)?.[1] ?? '?';
    },
    commits: (i) => git.log(repo(i), 'main'),
    hook: { path: HOOK, token: TOKEN },
    start: async (i, args = []) =>
      startServe({
        configDir,
        stateDir: join(base, `state-${i}`),
        ...(i === 0 ? { listenPort: port0 } : {}),
        args: [
          '--store',
          server.urlWithoutPassword,
          '--lease-ttl',
          LEASE_TTL,
          '--heartbeat',
          HEARTBEAT,
          ...args,
        ],
        env: { PAWL_STORE_PASSWORD: server.password },
      }),
    async query<T extends object>(sql: string) {
      return (await db.query<T>(sql)).rows;
    },
    async close() {
      await db.end().catch(() => undefined);
      await git.close();
      await registry.stop();
      await server.close();
      await rm(base, { recursive: true, force: true });
    },
  };
}
