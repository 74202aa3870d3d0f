/**
 * The daemon benches' workload (serve-memory, replicas): N ImageRepositories, ImagePolicies and
 * ImageUpdateAutomations over a few GitRepositories, on Debian's registry and the smart-HTTP git
 * server, every marker already at the newest tag (the steady state). Written once so that the
 * benches measure the same fleet.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGitServer, type GitServer } from '../test/helpers/git-server.js';
import { pushImage, seedTags } from '../test/helpers/push.js';
import { startRegistry, type TestRegistry } from '../test/helpers/registry.js';
import { GIT_PASSWORD, GIT_USER } from '../test/helpers/world.js';

export interface ServeFleetOptions {
  images: number;
  gitRepositories: number;
  /** Pushed to every image; the markers hold the last. */
  tags: readonly string[];
  repositoryInterval: string;
  automationInterval: string;
  /** Prefix of the temp directory. */
  name: string;
}

export interface ServeFleet {
  registry: TestRegistry;
  git: GitServer;
  /** Temp directory holding `config/` (the objects); state directories go beside it. */
  base: string;
  configDir: string;
  close(): Promise<void>;
}

export async function startServeFleet(o: ServeFleetOptions): Promise<ServeFleet> {
  const N = o.images;
  const registry = await startRegistry({ auth: 'none' });
  const git = await startGitServer({ users: { [GIT_USER]: GIT_PASSWORD } });
  const base = await mkdtemp(join(tmpdir(), `pawl-${o.name}-`));
  const configDir = join(base, 'config');
  await mkdir(configDir);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < N) {
        const i = next++;
        const { digest } = await pushImage(registry.url, `bench/app-${i}`, o.tags[0]!, {
          created: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
        });
        await seedTags(registry.storageDir, `bench/app-${i}`, o.tags.slice(1), digest);
      }
    }),
  );
  const perGit = Math.ceil(N / o.gitRepositories);
  for (let g = 0; g < o.gitRepositories; g++) {
    const files: Record<string, string> = {};
    for (let i = g * perGit; i < Math.min(N, (g + 1) * perGit); i++)
      files[`apps/app-${i}/deploy.yaml`] =
        `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  template:\n    spec:\n      containers:\n` +
        `        - name: app\n          image: ${registry.host}/bench/app-${i}:${o.tags.at(-1)} # {"$imagepolicy": "flux-system:app-${i}"}\n`;
    await git.createBareRepo(`fleet-${g}`, files);
  }
  const docs: string[] = [
    `apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-credentials\n  namespace: flux-system\ntype: kubernetes.io/basic-auth\nstringData:\n  username: ${GIT_USER}\n  password: ${GIT_PASSWORD}\n`,
  ];
  for (let g = 0; g < o.gitRepositories; g++)
    docs.push(
      `apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet-${g}\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: ${git.cloneUrl(`fleet-${g}`)}\n  ref:\n    branch: main\n  secretRef:\n    name: git-credentials\n`,
    );
  for (let i = 0; i < N; i++) {
    const g = Math.floor(i / perGit);
    docs.push(
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  image: ${registry.host}/bench/app-${i}\n  interval: ${o.repositoryInterval}\n  insecure: true\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app-${i}\n  namespace: flux-system\n  labels:\n    app: app-${i}\nspec:\n  imageRepositoryRef:\n    name: app-${i}\n  policy:\n    semver:\n      range: ">=1.0.0"\n`,
      `apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: app-${i}\n  namespace: flux-system\nspec:\n  interval: ${o.automationInterval}\n  sourceRef:\n    kind: GitRepository\n    name: fleet-${g}\n  git:\n    commit:\n      author:\n        name: pawl\n        email: pawl@example.com\n  update:\n    path: ./apps/app-${i}\n    strategy: Setters\n  policySelector:\n    matchLabels:\n      app: app-${i}\n`,
    );
  }
  await writeFile(join(configDir, 'objects.yaml'), docs.join('---\n'));
  console.log(
    `setup: ${N} repositories, policies and automations on ${o.gitRepositories} git repositories in ${Math.round(performance.now() - t0)} ms`,
  );
  return {
    registry,
    git,
    base,
    configDir,
    async close() {
      await git.close();
      await registry.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}
