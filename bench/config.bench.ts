/**
 * `pawl validate`'s loader over a Flux-like tree: 5,000 manifests (about 45 MB), of which 500
 * files hold pawl objects (500 ImageRepositories, 1,000 ImagePolicies, 1 automation, Secrets).
 * Prints wall time and peak RSS of loadConfig.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'pawl-config-bench-'));
try {
  const deployment = (i: number): string =>
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-${i}
  namespace: apps
  labels: {app: app-${i}}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app-${i}:1.0.${i} # {"$imagepolicy": "apps:app-${i}"}
          env:
${Array.from({ length: 120 }, (_, k) => `            - {name: VAR_${k}, value: "some configuration value number ${k}"}`).join('\n')}
`;
  const objects = (i: number): string =>
    `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app-${i}, namespace: apps}
spec:
  image: ghcr.io/org/app-${i}
  interval: 5m
  secretRef: {name: regcred}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app-${i}, namespace: apps}
spec:
  imageRepositoryRef: {name: app-${i}}
  policy: {semver: {range: ">=1.0.0 <2.0.0"}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app-${i}-main, namespace: apps}
spec:
  imageRepositoryRef: {name: app-${i}}
  filterTags: {pattern: '^main-[a-f0-9]+-(?P<ts>[0-9]+)', extract: '$ts'}
  policy: {numerical: {order: asc}}
`;
  let bytes = 0;
  for (let i = 0; i < 5000; i++) {
    const sub = join(dir, `team-${i % 50}`, `app-${i}`);
    mkdirSync(sub, { recursive: true });
    const text = deployment(i);
    bytes += text.length;
    writeFileSync(join(sub, 'deployment.yaml'), text);
    if (i % 10 === 0) {
      const o = objects(i);
      bytes += o.length;
      writeFileSync(join(sub, 'images.yaml'), o);
    }
  }
  writeFileSync(
    join(dir, 'flux.yaml'),
    `apiVersion: v1
kind: Secret
metadata: {name: regcred, namespace: apps}
type: kubernetes.io/dockerconfigjson
stringData: {.dockerconfigjson: '{"auths":{}}'}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec: {url: 'https://example.com/fleet.git', interval: 1m}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: fleet, namespace: apps}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: fleet}
  git: {commit: {author: {email: a@b.c}}}
`,
  );
  const t0 = performance.now();
  const { config, problems } = await loadConfig([dir]);
  const ms = performance.now() - t0;
  const errors = problems.filter((p) => p.severity === 'error').length;
  console.log(
    `loadConfig: 5,500 files, ${(bytes / 1e6).toFixed(1)} MB, ${config.imageRepositories.size} repositories, ` +
      `${config.imagePolicies.size} policies, ${errors} errors: ${ms.toFixed(0)} ms, ` +
      `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
